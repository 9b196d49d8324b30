/* httperr.c — the table of httperr.h, with each body spelled out by the preprocessor: the
 * names and messages are literals without quotes or backslashes, so they need no escaping. */
#include "httperr.h"

#include <stddef.h>
#include <string.h>

#include "httpd.h"

#define HTTPERR_ROW(id, status, name, message, when)                                               \
    [id] = {status, name, message, when, "{\"error\":\"" name "\",\"message\":\"" message "\"}"},
static const struct httperr_info table[HTTPERR_COUNT] = {HTTPERR_TABLE(HTTPERR_ROW)};
#undef HTTPERR_ROW

const struct httperr_info *httperr_info(enum httperr e)
{
    return (unsigned)e < HTTPERR_COUNT ? &table[e] : NULL;
}

void httperr_reply(struct hreq *r, enum httperr e)
{
    const struct httperr_info *i = httperr_info(e);
    hreq_reply(r, i->status, "application/json", i->body, strlen(i->body));
}
