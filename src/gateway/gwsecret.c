/* gwsecret.c — the secret detector behind reject_secrets (see gwsecret.h). It looks at tokens:
 * runs of characters that occur in keys and tokens ([A-Za-z0-9_+/=.-]). A token is secret-like
 * when it starts with a known key prefix followed by enough key characters, when it holds hex of
 * 32+ characters right after a credential word ("api key: 3f78..", "token=3f78.."; plain hex is
 * nearly always a commit or content hash and passes), or when it is a long (32+) random token:
 * both cases well represented, not made of words, and a Shannon entropy close to what a random
 * string of that length over the same alphabet has. Comparing with that expectation, not with a
 * fixed share of the most possible, is what catches random base62 and base64url tokens of every
 * length (a fixed 0.85 * log2(length) let 28% of 64-character ones through). "Made of words" is
 * judged on segments (split at case changes, digits and punctuation): most letters in segments
 * that look like English words, by a table of common letter pairs, so CamelCase, dotted and path
 * names pass with digits in them too. "Bearer " and PEM private key headers are matched on the
 * whole text. */
#include "gwsecret.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define RANDOM_MIN_LEN 32
#define LABELLED_HEX_MIN_LEN 32 /* hex after a credential word: 128-bit keys and longer */
#define WINDOW 128              /* longer tokens are judged by windows of this many characters */
/* bits per character a token may fall short of the entropy expected of a random string of its
 * length and alphabet: random tokens fall short by less than 0.6 (seen over 10^5 samples of 32
 * to 128 characters), a readable name by more */
#define ENTROPY_SLACK 0.75
/* a token without digits counts only when its lower-case letters are not mostly followed by
 * lower-case letters, as in words (random mixed case: about 0.42) */
#define WORDLIKE_SHARE 0.7
/* each case must make up this share of a random token's characters (random base62: about 0.42
 * each); a path or dotted name with one or two capitals (a Nix store path) is not random */
#define CASE_MIN_SHARE 0.125
/* a token is made of words when this share of its letters is in word-like segments (see
 * made_of_words); random base62 and base64url tokens have a small share */
#define WORD_LETTERS_SHARE 0.5

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

static bool is_lower(unsigned char c)
{
    return c >= 'a' && c <= 'z';
}

static bool is_upper(unsigned char c)
{
    return c >= 'A' && c <= 'Z';
}

static bool is_letter(unsigned char c)
{
    return is_lower(c) || is_upper(c);
}

static bool vowel(unsigned char c)
{
    return strchr("aeiouy", c | 0x20) != NULL;
}

/* Letter pairs common in English words: bit b of common_pairs[a] is set when letter a followed
 * by letter b occurs 20+ times in this project's README and product notes (about 60,000 pairs of
 * English prose), plus "cy" and "py" (policy, copy). About 40% of all pairs. */
static const uint32_t common_pairs[26] = {
    0x1bebd6e, 0x1124911, 0x11acd95, 0x116c959, 0x1eff97d, 0x01a4931, 0x0164191,
    0x01a4111, 0x2aef87f, 0x0044010, 0x0042110, 0x11c4919, 0x014d91d, 0x13ced7d,
    0x0fefd7f, 0x11ec991, 0x0100000, 0x13efd5d, 0x15ed595, 0x11ec99d, 0x00eb95f,
    0x0004111, 0x0066191, 0x1088101, 0x00ce001, 0x0000011,
};

/* Whether a segment of letters looks like a word: 3+ letters, a vowel, and every pair of letters
 * common in English ("Handler", "Spring"; not "tmp", "XML", nor most random segments: a random
 * pair is common with about 0.4 chance). */
static bool wordlike_segment(const char *w, size_t n)
{
    size_t vowels = 0;
    for (size_t i = 0; i < n; i++) {
        vowels += vowel((unsigned char)w[i]);
        if (i + 1 < n) {
            unsigned a = (unsigned)((w[i] | 0x20) - 'a'), b = (unsigned)((w[i + 1] | 0x20) - 'a');
            if (!(common_pairs[a] >> b & 1u))
                return false;
        }
    }
    return n >= 3 && vowels > 0;
}

/* Whether a segment of letters ends before t[i]: at a non-letter, at a lower-to-upper change
 * ("Order|Command") and before the last capital of a capital run followed by lower case
 * ("XML|Http"). */
static bool segment_break(const char *t, size_t n, size_t i)
{
    unsigned char c = (unsigned char)t[i], prev = (unsigned char)t[i - 1];
    if (!is_letter(c) || !is_letter(prev))
        return true;
    if (is_upper(c) && is_lower(prev))
        return true;
    return is_upper(c) && is_upper(prev) && i + 1 < n && is_lower((unsigned char)t[i + 1]);
}

/* Whether t[0..n) is made of words: split at case changes, digits and punctuation (CamelCase,
 * snake_case, dotted names, path components), most of its letters are in word-like segments.
 * A random token splits into short segments, and few of its longer ones pass wordlike_segment. */
static bool made_of_words(const char *t, size_t n)
{
    size_t letters = 0, in_words = 0, seg_start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i > 0 && (i == n || segment_break(t, n, i))) {
            if (is_letter((unsigned char)t[seg_start]) &&
                wordlike_segment(t + seg_start, i - seg_start))
                in_words += i - seg_start;
            seg_start = i;
        }
        if (i < n && is_letter((unsigned char)t[i]))
            letters++;
    }
    return letters > 0 && (double)in_words >= WORD_LETTERS_SHARE * (double)letters;
}

/* n (RANDOM_MIN_LEN..WINDOW) characters of a token: random-looking? */
static bool random_window(const char *t, size_t n)
{
    unsigned counts[256] = {0};
    bool digit = false;
    unsigned symbols = 0, lower_pairs = 0, lower_lower = 0;
    size_t lower = 0, upper = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (counts[c]++ == 0 && !alnum(c))
            symbols++;
        lower += is_lower(c);
        upper += is_upper(c);
        digit |= c >= '0' && c <= '9';
        if (i + 1 < n && c >= 'a' && c <= 'z') {
            lower_pairs++;
            lower_lower += t[i + 1] >= 'a' && t[i + 1] <= 'z';
        }
    }
    if ((double)lower < CASE_MIN_SHARE * (double)n || (double)upper < CASE_MIN_SHARE * (double)n)
        return false;
    if (!digit && lower_lower >= WORDLIKE_SHARE * lower_pairs)
        return false;
    if (made_of_words(t, n))
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

/* Whether the word just before s[start] (across up to four characters such as ' ', ':', '=',
 * '"') names a credential: "api key: 3f78..", "token=3f78..". Plain hex is nearly always a hash
 * (commit, sha256) and is refused only after such a word. */
static bool credential_word_before(const char *s, size_t start)
{
    static const char *const words[] = {"key",    "keys",       "apikey",     "token",  "tokens",
                                        "secret", "secrets",    "password",   "passwd", "auth",
                                        "api",    "credential", "credentials"};
    size_t end = start;
    while (end > 0 && start - end < 4 && !alnum((unsigned char)s[end - 1]) && s[end - 1] != '\n')
        end--;
    size_t begin = end;
    while (begin > 0 && end - begin <= 11 && is_letter((unsigned char)s[begin - 1]))
        begin--;
    if (begin == end || (begin > 0 && is_letter((unsigned char)s[begin - 1])))
        return false;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == end - begin) {
            size_t j = 0;
            while (j < end - begin && (s[begin + j] | 0x20) == words[i][j])
                j++;
            if (j == end - begin)
                return true;
        }
    return false;
}

/* Whether the token s[start..end) holds a hex run (bounded by non-alphanumerics, so after '='
 * in "token=...") of LABELLED_HEX_MIN_LEN+ characters right after a credential word. */
static bool labelled_hex(const char *s, size_t start, size_t end)
{
    for (size_t j = start; j < end;) {
        if (!alnum((unsigned char)s[j])) {
            j++;
            continue;
        }
        size_t run = j;
        while (j < end && alnum((unsigned char)s[j]))
            j++;
        if (j - run >= LABELLED_HEX_MIN_LEN && hex_token(s + run, j - run) &&
            credential_word_before(s, run))
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
            struct key_run here = {run.len - (j - run_start), run.digit_end > j - run_start
                                                                  ? run.digit_end - (j - run_start)
                                                                  : 0};
            if ((j == start || !alnum((unsigned char)s[j - 1])) && prefixed_key(s + j, i - j, here))
                k = "an API key";
        }
        if (k == NULL && labelled_hex(s, start, i))
            k = "a hex key";
        if (k == NULL && random_token(s, start, i - start))
            k = "a high-entropy token";
    }
    if (kind)
        *kind = k;
    return k != NULL;
}
