/* crypto.c — random hex, SHA-256, constant-time compare.
 *
 * Not over OpenSSL: its first use initialises the library (configuration, providers, DRBG),
 * ~2.2 MiB of touched pages, which made that the largest part of an idle server's memory.
 * Random bytes come from the kernel (getrandom(2)); SHA-256 and the constant-time compare
 * come from nettle, which libmicrohttpd's GnuTLS has already loaded. OpenSSL is set up only
 * when libcurl is, on the first request to an agent. */
#include "crypto.h"

#include <errno.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>
#include <string.h>
#include <sys/random.h>

static bool random_bytes(unsigned char *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

/* Not optimised away like a plain memset of a buffer that is about to die. */
static void wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n--)
        *v++ = 0;
}

bool crypto_random_hex(char *out, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[64];

    if (nbytes > sizeof raw || !random_bytes(raw, nbytes))
        return false;
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    wipe(raw, sizeof raw);
    return true;
}

void crypto_sha256(const void *p, size_t n, unsigned char out[32])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, n, p);
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
    wipe(&ctx, sizeof ctx); /* it held the token's bytes */
}

bool crypto_equal(const void *a, const void *b, size_t n)
{
    return memeql_sec(a, b, n) != 0;
}
