/* gwsecret.c — the secret detector behind reject_secrets (see gwsecret.h). It looks at tokens:
 * runs of characters that occur in keys and tokens ([A-Za-z0-9_+/=.-]). A token is secret-like
 * when it starts with a known key prefix followed by enough key characters, or when it is a long
 * (32+) random token: hex of 40+ characters (unless a word such as "commit" or "sha256" before it
 * says it is a hash), or mixed case (without digits: not in words) whose Shannon entropy is close
 * to what a random string of that length over the same alphabet has. Comparing with that
 * expectation, not with a fixed share of the most possible, is what catches random base62 and
 * base64url tokens of every length (a fixed 0.85 * log2(length) let 28% of 64-character ones
 * through); words, paths, UUIDs and CamelCase names lack a character class or the entropy.
 * "Bearer " and PEM private key headers are matched on the whole text. */
#include "gwsecret.h"

#include <math.h>
#include <string.h>

#define RANDOM_MIN_LEN 32
#define HEX_MIN_LEN 40
#define WINDOW 128 /* longer tokens are judged by windows of this many characters */
/* bits per character a token may fall short of the entropy expected of a random string of its
 * length and alphabet: random tokens fall short by less than 0.6 (seen over 10^5 samples of 32
 * to 128 characters), a readable name by more */
#define ENTROPY_SLACK 0.75
/* a token without digits counts only when its lower-case letters are not mostly followed by
 * lower-case letters, as in words (random mixed case: about 0.42) */
#define WORDLIKE_SHARE 0.7

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

/* The Shannon entropy (bits per character) expected of n characters drawn uniformly from an
 * alphabet of a symbols: log2(n) - (a / n) * E[k log2 k] for k ~ Binomial(n, 1/a), the binomial
 * terms by their recurrence (n <= WINDOW: no underflow). */
static double expected_entropy(unsigned a, size_t n)
{
    double p = 1.0 / a, q = 1.0 - p, term = pow(q, (double)n), sum = 0;
    for (size_t k = 1; k <= n; k++) {
        term *= (double)(n - k + 1) / (double)k * p / q;
        sum += term * (double)k * log2((double)k);
    }
    return log2((double)n) - (double)a / (double)n * sum;
}

/* n (RANDOM_MIN_LEN..WINDOW) characters of a token: random-looking? */
static bool random_window(const char *t, size_t n)
{
    unsigned counts[256] = {0};
    bool lower = false, upper = false, digit = false;
    unsigned symbols = 0, lower_pairs = 0, lower_lower = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (counts[c]++ == 0 && !alnum(c))
            symbols++;
        lower |= c >= 'a' && c <= 'z';
        upper |= c >= 'A' && c <= 'Z';
        digit |= c >= '0' && c <= '9';
        if (i + 1 < n && c >= 'a' && c <= 'z') {
            lower_pairs++;
            lower_lower += t[i + 1] >= 'a' && t[i + 1] <= 'z';
        }
    }
    if (!lower || !upper)
        return false;
    if (!digit && lower_lower >= WORDLIKE_SHARE * lower_pairs)
        return false;
    double bits = 0;
    for (int c = 0; c < 256; c++)
        if (counts[c]) {
            double share = (double)counts[c] / (double)n;
            bits -= share * log2(share);
        }
    unsigned alphabet = 52 + (digit ? 10 : 0) + symbols;
    return bits >= expected_entropy(alphabet, n) - ENTROPY_SLACK;
}

/* All hex digits of one case, with digits and letters among them. */
static bool hex_token(const char *t, size_t n)
{
    bool lower = false, upper = false, digit = false;
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (c >= '0' && c <= '9')
            digit = true;
        else if (c >= 'a' && c <= 'f')
            lower = true;
        else if (c >= 'A' && c <= 'F')
            upper = true;
        else
            return false;
    }
    return digit && (lower != upper);
}

/* Whether the word just before s[start] (across spaces, ':', '#') names a hash: "commit 3f78..",
 * "sha256:9a1c..": then hex is a reference, not a credential. */
static bool labelled_as_hash(const char *s, size_t start)
{
    static const char *const labels[] = {"commit", "sha",    "sha1",     "sha256", "sha512", "hash",
                                         "rev",    "digest", "checksum", "oid",    "md5"};
    size_t end = start;
    while (end > 0 && start - end < 3 && (s[end - 1] == ' ' || s[end - 1] == ':' || s[end - 1] == '#'))
        end--;
    size_t begin = end;
    while (begin > 0 && end - begin < 9 && alnum((unsigned char)s[begin - 1]))
        begin--;
    if (begin == end || (begin > 0 && alnum((unsigned char)s[begin - 1])))
        return false;
    for (size_t i = 0; i < sizeof labels / sizeof *labels; i++)
        if (strlen(labels[i]) == end - begin) {
            size_t j = 0;
            while (j < end - begin && (s[begin + j] | 0x20) == labels[i][j])
                j++;
            if (j == end - begin)
                return true;
        }
    return false;
}

/* The token s[start..start+len): a random one? Long tokens are judged by windows of WINDOW
 * characters overlapping by half, so the work stays linear and a random part is not diluted. */
static bool random_token(const char *s, size_t start, size_t len)
{
    const char *t = s + start;
    if (len < RANDOM_MIN_LEN)
        return false;
    if (len >= HEX_MIN_LEN && hex_token(t, len))
        return !labelled_as_hash(s, start);
    if (len <= WINDOW)
        return random_window(t, len);
    for (size_t at = 0;; at += WINDOW / 2) {
        if (at + WINDOW > len)
            at = len - WINDOW;
        if (random_window(t + at, WINDOW))
            return true;
        if (at + WINDOW == len)
            return false;
    }
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
        if (k == NULL && random_token(s, start, i - start))
            k = "a high-entropy token";
    }
    if (kind)
        *kind = k;
    return k != NULL;
}
