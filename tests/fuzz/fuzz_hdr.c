/* fuzz_hdr.c — libFuzzer target for hdr.h. Every function runs on NUL-terminated copies sized
 * exactly (so ASan sees any read past the terminator), and each result is checked against the
 * invariants the callers rely on; a violation aborts so libFuzzer reports it.
 *
 * Input: the whole input is the header value. If it holds a '\n', the part before it is also
 * tried as a list / media-type value and the part after it as the token to look for. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_check.h"
#include "hdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool host_char(char c)
{
    return c == '-' || c == '.' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

static bool hex_char(char c)
{
    return c == ':' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
           (c >= 'A' && c <= 'F');
}

static bool all_digits(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    return true;
}

/* Checks an accepted "host[:port]" / "[v6][:port]" held in s[0..len): the pieces must lie in
 * it and put back together must give exactly it. */
static void check_hostport(const char *s, size_t len, const char *host, size_t hlen, long port)
{
    const char *end = s + len;

    CHECK(hlen > 0);
    CHECK(host >= s && host < end);
    CHECK(hlen <= (size_t)(end - host));
    CHECK(port == -1 || (port >= 0 && port <= 65535));

    const char *after;
    if (s[0] == '[') {
        CHECK(host == s + 1);
        CHECK(host + hlen < end && host[hlen] == ']');
        for (size_t i = 0; i < hlen; i++)
            CHECK(hex_char(host[i]));
        after = host + hlen + 1;
    } else {
        CHECK(host == s);
        for (size_t i = 0; i < hlen; i++)
            CHECK(host_char(host[i])); /* no ' ', '/', '@', ':', controls, NUL */
        after = host + hlen;
    }
    if (after == end) {
        CHECK(port == -1);
        return;
    }
    CHECK(*after == ':');
    size_t plen = (size_t)(end - after - 1);
    CHECK(plen >= 1 && plen <= 5 && all_digits(after + 1, plen));
    long v = strtol(after + 1, NULL, 10); /* digits end at end: s is NUL there or at a '/' */
    CHECK(v == port);
}

static void fuzz_hostport(const char *s, size_t len)
{
    const char *host = NULL;
    size_t hlen = 0;
    long port = -2;
    bool ok = hdr_split_hostport(s, &host, &hlen, &port);
    if (ok)
        check_hostport(s, len, host, hlen, port);

    /* Completeness: a plain name made of host characters is always accepted whole. */
    bool plain = len > 0;
    for (size_t i = 0; i < len && plain; i++)
        plain = host_char(s[i]);
    if (plain)
        CHECK(ok && host == s && hlen == len && port == -1);
}

static void fuzz_origin(const char *s, size_t len)
{
    const char *host = NULL;
    size_t hlen = 0;
    long port = -2;
    bool ok = hdr_split_origin(s, &host, &hlen, &port);
    size_t skip = strncasecmp(s, "http://", 7) == 0    ? 7
                  : strncasecmp(s, "https://", 8) == 0 ? 8
                                                       : 0;
    if (skip == 0) {
        CHECK(!ok); /* "null", "file://...", no scheme */
        return;
    }
    /* An origin is "scheme://" + host[:port], with one trailing '/' tolerated: it must agree with
     * hdr_split_hostport on that part. */
    const char *rest = s + skip;
    size_t rlen = len - skip;
    if (rlen > 0 && rest[rlen - 1] == '/')
        rlen--;
    char *copy = malloc(rlen + 1);
    if (copy == NULL)
        abort();
    memcpy(copy, rest, rlen);
    copy[rlen] = '\0';
    const char *h2 = NULL;
    size_t hl2 = 0;
    long p2 = -2;
    bool ok2 = hdr_split_hostport(copy, &h2, &hl2, &p2);
    CHECK(ok == ok2);
    if (ok) {
        check_hostport(rest, rlen, host, hlen, port);
        CHECK(host - rest == h2 - copy && hlen == hl2 && port == p2);
    }
    free(copy);
}

static void fuzz_bearer(const char *s)
{
    const char *tok = hdr_bearer(s);
    size_t len = strlen(s);
    bool scheme = strncasecmp(s, "Bearer ", 7) == 0;
    if (tok != NULL) {
        CHECK(scheme);
        CHECK(tok > s + 6 && tok < s + len);
        CHECK(*tok != ' ' && *tok != '\0');
        for (const char *p = s + 7; p < tok; p++)
            CHECK(*p == ' ');
    } else if (scheme) {
        /* Refused only when nothing but spaces follows the scheme. */
        for (const char *p = s + 7; *p; p++)
            CHECK(*p == ' ');
    }
    CHECK(hdr_bearer(NULL) == NULL);
}

static void fuzz_list(const char *value, const char *token)
{
    bool has = hdr_list_has(value, token);
    if (has && *token)
        CHECK(strcasestr(value, token) != NULL);
    /* A value holding just the token always holds the token (unless the token starts with
     * what the list syntax skips). */
    if (*token && !strchr(" \t,", token[0]))
        CHECK(hdr_list_has(token, token));

    bool mt = hdr_media_type_is(value, token);
    if (mt && *token)
        CHECK(strcasestr(value, token) != NULL);
    if (*token && token[0] != ' ' && token[0] != '\t')
        CHECK(hdr_media_type_is(token, token));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_dup(data, size);
    size_t len = strlen(s); /* an embedded NUL ends the value, as in a C string header */

    fuzz_hostport(s, len);
    fuzz_origin(s, len);
    fuzz_bearer(s);

    static const char *const tokens[] = {"application/json", "text/event-stream", "close",
                                         "keep-alive", "*/*"};
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++)
        fuzz_list(s, tokens[i]);

    const uint8_t *nl = memchr(data, '\n', size);
    if (nl != NULL) {
        char *value = fuzz_dup(data, (size_t)(nl - data));
        char *token = fuzz_dup(nl + 1, size - (size_t)(nl - data) - 1);
        fuzz_list(value, token);
        free(value);
        free(token);
    }
    free(s);
    return 0;
}
