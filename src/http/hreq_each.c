/* hreq_each.c — hreq_each_header (httpd.h): every header line in one pass. A file of its own
 * so that a program linking fakes of hreq.c's accessors (the unit tests) still links. */
#include "httpd_internal.h"

struct each_ctx {
    hreq_header_fn *fn;
    void *arg;
};

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct each_ctx *c = cls;
    (void)kind;
    return c->fn(key, value ? value : "", c->arg) ? MHD_YES : MHD_NO;
}

void hreq_each_header(const struct hreq *r, hreq_header_fn *fn, void *arg)
{
    struct each_ctx c = {fn, arg};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, each_header, &c);
}
