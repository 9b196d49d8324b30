/* weburl.c — https anywhere, http on loopback (weburl.h). */
#include "weburl.h"

#include <arpa/inet.h>
#include <stdlib.h>
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

bool weburl_ok(const char *url, unsigned flags)
{
    bool https = weburl_is_https(url);
    if (!https && strncmp(url, "http://", 7) != 0)
        return false;
    const char *p = url + (https ? 8 : 7);
    char host[256];
    size_t n;
    if (strpbrk(p, "@#\\ \t\r\n\"") || (!(flags & WEBURL_QUERY_OK) && strchr(p, '?')))
        return false;
    if (*p == '[') { /* an IPv6 literal */
        const char *close = strchr(p, ']');
        if (close == NULL || (size_t)(close - p - 1) >= sizeof host)
            return false;
        n = (size_t)(close - p - 1);
        memcpy(host, p + 1, n);
        p = close + 1;
    } else {
        n = strcspn(p, ":/?");
        if (n == 0 || n >= sizeof host)
            return false;
        memcpy(host, p, n);
        p += n;
    }
    host[n] = '\0';
    if (*p == ':') {
        size_t digits = strspn(p + 1, "0123456789");
        if (digits == 0 || digits > 5 || atoi(p + 1) < 1 || atoi(p + 1) > 65535)
            return false;
        p += 1 + digits;
    }
    if (*p && *p != '/' && *p != '?')
        return false;
    if ((flags & WEBURL_ROOT_ONLY) && *p && strcmp(p, "/") != 0)
        return false;
    return https || weburl_loopback_host(host);
}
