/* hdr.c — header value parsing. */
#include "hdr.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool hdr_list_has(const char *value, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = value; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (strncasecmp(p, token, n) == 0) {
            const char *q = p + n;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q == '\0' || *q == ',' || *q == ';')
                return true;
        }
        p = strchr(p, ',');
    }
    return false;
}

bool hdr_media_type_is(const char *value, const char *media_type)
{
    size_t n = strlen(media_type);
    while (*value == ' ' || *value == '\t')
        value++;
    if (strncasecmp(value, media_type, n) != 0)
        return false;
    value += n;
    while (*value == ' ' || *value == '\t')
        value++;
    return *value == '\0' || *value == ';';
}

static bool parse_port(const char *p, const char *end, long *port)
{
    long v = 0;
    if (p == end || end - p > 5)
        return false;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    if (v > 65535)
        return false;
    *port = v;
    return true;
}

static bool split_hostport_n(const char *s, size_t len, const char **host, size_t *hlen, long *port)
{
    const char *end = s + len, *colon = NULL;

    *port = -1;
    if (len == 0)
        return false;
    if (*s == '[') {
        const char *close = memchr(s, ']', len);
        if (close == NULL || close == s + 1)
            return false;
        *host = s + 1;
        *hlen = (size_t)(close - s - 1);
        if (close + 1 < end) {
            if (close[1] != ':')
                return false;
            colon = close + 1;
        }
        for (const char *p = s + 1; p < close; p++)
            if (!(*p == ':' || *p == '.' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
                  (*p >= 'A' && *p <= 'F')))
                return false;
    } else {
        *host = s;
        colon = memchr(s, ':', len);
        *hlen = colon ? (size_t)(colon - s) : len;
        for (const char *p = s; p < s + *hlen; p++)
            if (!(*p == '-' || *p == '.' || *p == '_' || (*p >= '0' && *p <= '9') ||
                  (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
                return false;
    }
    if (colon && !parse_port(colon + 1, end, port))
        return false;
    return *hlen > 0;
}

bool hdr_split_hostport(const char *s, const char **host, size_t *hlen, long *port)
{
    return split_hostport_n(s, strlen(s), host, hlen, port);
}

bool hdr_split_origin(const char *s, const char **host, size_t *hlen, long *port)
{
    const char *rest;
    if (strncasecmp(s, "http://", 7) == 0)
        rest = s + 7;
    else if (strncasecmp(s, "https://", 8) == 0)
        rest = s + 8;
    else
        return false;
    size_t len = strlen(rest);
    if (len > 0 && rest[len - 1] == '/') /* tolerate a trailing slash */
        len--;
    return split_hostport_n(rest, len, host, hlen, port);
}

const char *hdr_bearer(const char *value)
{
    if (value == NULL || strncasecmp(value, "Bearer ", 7) != 0)
        return NULL;
    value += 7;
    while (*value == ' ')
        value++;
    return *value ? value : NULL;
}
