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

/* Marks in cover[] every byte of in[0, inlen) that belongs to some secret, in any letter case.
 * Secrets can overlap (one a prefix of another, or the tail of one the head of the next):
 * replacing them one at a time would leave the part of the second that the first did not
 * cover, so the whole covered stretch becomes one mark instead. */
static void secrets_cover(const struct report *r, const char *in, size_t inlen,
                          unsigned char *cover)
{
    for (size_t k = 0; k < r->nsecrets; k++) {
        size_t n = strlen(r->secrets[k]);
        for (size_t i = 0; n && i + n <= inlen; i++)
            if (strncasecmp(in + i, r->secrets[k], n) == 0)
                memset(cover + i, 1, n);
    }
}

char *report_scrub(const struct report *r, const char *in, size_t inlen)
{
    struct buf b;
    buf_init(&b, 0);
    unsigned char *cover = xcalloc(inlen ? inlen : 1, 1);
    secrets_cover(r, in, inlen, cover);
    for (size_t i = 0; i < inlen;) {
        if (cover[i]) {
            buf_appends(&b, r->mark);
            while (i < inlen && cover[i])
                i++;
            continue;
        }
        unsigned char c = (unsigned char)in[i++];
        char out = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
        buf_append(&b, &out, 1);
    }
    free(cover);
    return buf_detach(&b, NULL);
}

void report_clean(const struct report *r, const char *in, size_t inlen, char *out, size_t outlen)
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
