/* report.c — secret-scrubbed report lines (report.h). */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "mem.h"

void report_init(struct report *r, const char *mark, size_t min_len)
{
    memset(r, 0, sizeof *r);
    r->mark = mark;
    r->min_len = min_len ? min_len : 1;
}

void report_secret(struct report *r, const char *s)
{
    if (s == NULL || strlen(s) < r->min_len || r->nsecrets == REPORT_SECRETS_MAX)
        return;
    r->secrets[r->nsecrets++] = xstrdup(s);
}

/* The length of the secret starting at in[0, left), 0 when none does. */
static size_t secret_at(const struct report *r, const char *in, size_t left)
{
    for (size_t k = 0; k < r->nsecrets; k++) {
        size_t n = strlen(r->secrets[k]);
        if (left >= n && strncasecmp(in, r->secrets[k], n) == 0)
            return n;
    }
    return 0;
}

char *report_scrub(const struct report *r, const char *in, size_t inlen)
{
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < inlen;) {
        size_t n = secret_at(r, in + i, inlen - i);
        if (n) {
            buf_appends(&b, r->mark);
            i += n;
            continue;
        }
        unsigned char c = (unsigned char)in[i++];
        char out = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
        buf_append(&b, &out, 1);
    }
    return buf_detach(&b, NULL);
}

void report_clean(const struct report *r, const char *in, size_t inlen, char *out,
                  size_t outlen)
{
    if (outlen == 0)
        return;
    char *all = report_scrub(r, in, inlen);
    snprintf(out, outlen, "%s", all);
    free(all);
}

void report_cleanup(struct report *r)
{
    for (size_t i = 0; i < r->nsecrets; i++)
        wipe_free(r->secrets[i]);
    r->nsecrets = 0;
}
