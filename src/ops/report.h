/* report.h — what the ops commands that check things (doctor, smoke) print: lines of text in
 * which every secret they know of (a token, an agent's key) is replaced before anything is
 * printed or cut, and control characters become '?', so a line stays one line whatever a
 * server or a file echoed back. */
#ifndef HM_REPORT_H
#define HM_REPORT_H
#include <stddef.h>

#define REPORT_SECRETS_MAX 80

struct report {
    const char *mark; /* what a secret becomes: "[secret]", "[redacted]" */
    size_t min_len;   /* shorter values are not secrets: they would mangle ordinary words */
    char *secrets[REPORT_SECRETS_MAX];
    size_t nsecrets;
};

void report_init(struct report *r, const char *mark, size_t min_len);
/* Remembers a copy of s (NULL, shorter than min_len, or past the maximum: ignored). */
void report_secret(struct report *r, const char *s);
/* in[0, inlen) as a new string: each secret, in any letter case, replaced by the mark, and
 * control characters replaced by '?'. */
char *report_scrub(const struct report *r, const char *in, size_t inlen);
/* The same into out, cut to outlen-1 bytes after the secrets were replaced: no piece of a
 * secret survives the cut. */
void report_clean(const struct report *r, const char *in, size_t inlen, char *out, size_t outlen);
/* Wipes and frees the secrets. */
void report_cleanup(struct report *r);

#endif
