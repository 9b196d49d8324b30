/* gwsecret.c — the secret detector behind reject_secrets (see gwsecret.h). It looks at tokens:
 * runs of characters that occur in keys and tokens ([A-Za-z0-9_+/=.-]). A token is secret-like
 * when it starts with a known key prefix followed by enough key characters, or when it is long
 * (32+) with lower and upper case letters and digits and a high Shannon entropy (random
 * base64/base62, not a word, a path or a hex commit hash, whose 16-symbol alphabet stays under the
 * threshold). "Bearer " and PEM private key headers are matched on the whole text. */
#include "gwsecret.h"

#include <math.h>
#include <string.h>

#define ENTROPY_MIN_LEN 32
/* bits per character needed: 0.85 of the most a token of its length can have (log2 of its
 * length, up to 64): random base62/base64 gets there, text, paths and hex (<= 4) do not */
#define ENTROPY_SHARE 0.85

static bool token_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '+' || c == '/' || c == '=' || c == '.';
}

static bool alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool upper_or_digit(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Case-insensitive search for needle (NUL-terminated, lower case) in s[0..len). */
static const char *find_ci(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; n <= len && i <= len - n; i++) {
        size_t j = 0;
        while (j < n && (s[i + j] | 0x20) == needle[j])
            j++;
        if (j == n)
            return s + i;
    }
    return NULL;
}

static bool key_char(unsigned char c)
{
    return alnum(c) || c == '_' || c == '-';
}

/* The run of key characters ([A-Za-z0-9_-]) starting at a position: how many there are and one
 * past the last digit among them (0: none). Measured once per run, not once per position: a
 * prefix may start anywhere in it ("sk-sk-sk-..."), and rescanning the rest of the run at each
 * such position was quadratic. */
struct key_run {
    size_t len;
    size_t digit_end;
};

static struct key_run measure_run(const char *s, size_t len)
{
    struct key_run r = {0, 0};
    while (r.len < len && key_char((unsigned char)s[r.len])) {
        if (s[r.len] >= '0' && s[r.len] <= '9')
            r.digit_end = r.len + 1;
        r.len++;
    }
    return r;
}

struct prefix {
    const char *text;
    size_t min_body;
};
static const struct prefix prefixes[] = {
    {"sk-", 20},   {"ghp_", 20},        {"gho_", 20},  {"ghu_", 20},   {"ghs_", 20},
    {"ghr_", 20},  {"github_pat_", 20}, {"xoxb-", 10}, {"xoxp-", 10},  {"xoxa-", 10},
    {"xoxr-", 10}, {"xoxs-", 10},       {"xapp-", 10}, {"glpat-", 20}, {"AIza", 30},
};

/* tok[0..len) starts a token part whose key characters are run (run.len <= len): a known prefix
 * followed by enough key characters with a digit among them. */
static bool prefixed_key(const char *tok, size_t len, struct key_run run)
{
    for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; p++) {
        size_t n = strlen(prefixes[p].text);
        if (run.len > n && memcmp(tok, prefixes[p].text, n) == 0 &&
            run.len - n >= prefixes[p].min_body && run.digit_end > n)
            return true;
    }
    /* AWS access key ids: AKIA/ASIA and 16 upper-case letters or digits */
    if (len >= 20 && (memcmp(tok, "AKIA", 4) == 0 || memcmp(tok, "ASIA", 4) == 0)) {
        size_t i = 4;
        while (i < 20 && upper_or_digit((unsigned char)tok[i]))
            i++;
        return i == 20;
    }
    return false;
}

static bool high_entropy(const char *tok, size_t len)
{
    unsigned counts[256] = {0};
    bool lower = false, upper = false, digit = false;
    if (len < ENTROPY_MIN_LEN)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)tok[i];
        counts[c]++;
        lower |= c >= 'a' && c <= 'z';
        upper |= c >= 'A' && c <= 'Z';
        digit |= c >= '0' && c <= '9';
    }
    if (!lower || !upper || !digit)
        return false;
    double bits = 0;
    for (int c = 0; c < 256; c++)
        if (counts[c]) {
            double p = (double)counts[c] / (double)len;
            bits -= p * log2(p);
        }
    return bits >= ENTROPY_SHARE * log2((double)(len < 64 ? len : 64));
}

/* "Bearer " followed by a token of 16+ characters. */
static bool bearer(const char *s, size_t len)
{
    const char *end = s + len, *at = s;
    while ((at = find_ci(at, (size_t)(end - at), "bearer ")) != NULL) {
        const char *t = at + 7;
        size_t n = 0;
        while (t + n < end && token_char((unsigned char)t[n]))
            n++;
        if (n >= 16)
            return true;
        at += 7;
    }
    return false;
}

bool gw_secret_like(const char *s, size_t len, const char **kind)
{
    const char *k = NULL;
    if (s == NULL)
        return false;
    if (find_ci(s, len, "private key-----"))
        k = "a private key";
    else if (bearer(s, len))
        k = "a bearer token";
    for (size_t i = 0; k == NULL && i < len;) {
        if (!token_char((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t start = i;
        while (i < len && token_char((unsigned char)s[i]))
            i++;
        /* a prefix counts at the token's start or after a separator inside it (key=sk-...);
         * the run of key characters around j is measured once (see measure_run) */
        struct key_run run = {0, 0};
        size_t run_start = start;
        for (size_t j = start; k == NULL && j < i; j++) {
            if (j >= run_start + run.len) {
                run_start = j;
                run = measure_run(s + j, i - j);
                if (run.len == 0)
                    continue; /* not a key character: no prefix starts here */
            }
            struct key_run here = {run.len - (j - run_start),
                                   run.digit_end > j - run_start ? run.digit_end - (j - run_start)
                                                                 : 0};
            if ((j == start || !alnum((unsigned char)s[j - 1])) && prefixed_key(s + j, i - j, here))
                k = "an API key";
        }
        if (k == NULL && high_entropy(s + start, i - start))
            k = "a high-entropy token";
    }
    if (kind)
        *kind = k;
    return k != NULL;
}
