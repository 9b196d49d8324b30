/* weburl.c — https anywhere, http on loopback (weburl.h). */
#include "weburl.h"

#include <arpa/inet.h>
#include <string.h>

bool weburl_loopback_host(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (strcmp(host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

bool weburl_is_https(const char *url)
{
    return strncmp(url, "https://", 8) == 0;
}

/* The host of an http(s) URL into host (brackets of an IPv6 literal taken off), and what
 * follows it; NULL when there is none or it does not fit. */
static const char *split_host(const char *url, char *host, size_t hostsz)
{
    const char *p = url + (weburl_is_https(url) ? 8 : strncmp(url, "http://", 7) == 0 ? 7 : 0);
    size_t n;
    if (p == url)
        return NULL;
    if (*p == '[') { /* an IPv6 literal, and nothing else in brackets */
        const char *close = strchr(p, ']');
        struct in6_addr a6;
        if (close == NULL || (n = (size_t)(close - p - 1)) == 0 || n >= hostsz)
            return NULL;
        memcpy(host, p + 1, n);
        host[n] = '\0';
        return inet_pton(AF_INET6, host, &a6) == 1 ? close + 1 : NULL;
    }
    n = strcspn(p, ":/?");
    if (n == 0 || n >= hostsz)
        return NULL;
    memcpy(host, p, n);
    host[n] = '\0';
    return p + n;
}

bool weburl_host(const char *url, char *host, size_t hostsz)
{
    return split_host(url, host, hostsz) != NULL;
}

bool weburl_pointed_ok(const char *url, const char *from, unsigned flags)
{
    char host[256], from_host[256];
    if (!weburl_ok(url, flags) || (weburl_is_https(from) && !weburl_is_https(url)) ||
        !weburl_host(url, host, sizeof host))
        return false;
    return !weburl_loopback_host(host) || !weburl_host(from, from_host, sizeof from_host) ||
           weburl_loopback_host(from_host);
}

bool weburl_ok(const char *url, unsigned flags)
{
    char host[256];
    for (const unsigned char *c = (const unsigned char *)url; *c; c++)
        if (*c <= 0x20 || *c >= 0x7f) /* control bytes, space, DEL, anything not ASCII */
            return false;
    const char *p = split_host(url, host, sizeof host);
    if (p == NULL || strpbrk(url + 8, "@#\\\"") || (!(flags & WEBURL_QUERY_OK) && strchr(p, '?')))
        return false;
    if (*p == ':') {
        unsigned long port = 0;
        size_t digits = 0;
        for (p++; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
            port = port * 10 + (unsigned long)(*p - '0');
        if (digits == 0 || port < 1 || port > 65535)
            return false;
    }
    if (*p && *p != '/' && *p != '?')
        return false;
    if ((flags & WEBURL_ROOT_ONLY) && *p && strcmp(p, "/") != 0)
        return false;
    return weburl_is_https(url) || weburl_loopback_host(host);
}
