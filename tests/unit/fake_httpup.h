/* fake_httpup.h — the url upstream's transport for unit programs that link the gateway without
 * httpup.o: every httpup_* function but one does nothing; httpup_send hands each message to the
 * including file's fake_httpup_send, which says whether the send worked. Include it once. */
#ifndef FAKE_HTTPUP_H
#define FAKE_HTTPUP_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "httpup.h"

static bool fake_httpup_send(json_t *msg);
static int fake_httpup_handle;

struct httpup *httpup_new(const struct gw_upstream *c, struct loop *l,
                          const struct httpup_owner *ops, void *owner)
{
    (void)c, (void)l, (void)ops, (void)owner;
    return (struct httpup *)&fake_httpup_handle;
}
void httpup_start(struct httpup *h)
{
    (void)h;
}
void httpup_set_version(struct httpup *h, const char *version)
{
    (void)h, (void)version;
}
bool httpup_send(struct httpup *h, json_t *msg)
{
    (void)h;
    return fake_httpup_send(msg);
}
void httpup_forget(struct httpup *h, uint64_t id)
{
    (void)h, (void)id;
}
void httpup_reset(struct httpup *h)
{
    (void)h;
}
void httpup_free(struct httpup *h)
{
    (void)h;
}
unsigned httpup_resume_delay_ms(long retry_ms, unsigned misses)
{
    (void)retry_ms, (void)misses;
    return 100;
}

#endif
