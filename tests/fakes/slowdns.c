/* An LD_PRELOAD shim for tests: a lookup of any name ending in ".slow.test" takes SLOWDNS_MS
 * milliseconds (default 8000) and then fails, as a DNS server that does not answer would. It
 * shows whether the server's event loop ever waits for a lookup (libcurl's threaded resolver
 * joins its thread when a transfer is cancelled or times out unless told not to). Other names
 * resolve as usual. A name ending in ".later.test" is 127.0.0.1 until the file named by
 * SLOWDNS_FLAG exists, then slow as above: a lookup that turns slow after the server started.
 * Built by the test that uses it (cc -shared -fPIC). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    typedef int lookup_fn(const char *, const char *, const struct addrinfo *, struct addrinfo **);
    lookup_fn *real = (lookup_fn *)dlsym(RTLD_NEXT, "getaddrinfo");
    size_t len = node ? strlen(node) : 0;
    bool later = len > 11 && strcmp(node + len - 11, ".later.test") == 0;
    const char *flag = getenv("SLOWDNS_FLAG");
    if (later && !(flag && access(flag, F_OK) == 0))
        return real("127.0.0.1", service, hints, res);
    if (later || (len > 10 && strcmp(node + len - 10, ".slow.test") == 0)) {
        const char *ms_text = getenv("SLOWDNS_MS");
        long ms = ms_text ? strtol(ms_text, NULL, 10) : 8000;
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        return EAI_NONAME;
    }
    return real(node, service, hints, res);
}
