/* crypto.c — random bytes, SHA-256, HMAC-SHA-256, base64, constant-time compare.
 *
 * Not over OpenSSL: its first use initialises the library (configuration, providers, DRBG),
 * ~2.2 MiB of touched pages, which made that the largest part of an idle server's memory.
 * Random bytes come from the kernel (getrandom(2)); SHA-256 and the constant-time compare
 * come from nettle, which libmicrohttpd's GnuTLS has already loaded. OpenSSL is set up only
 * when libcurl is, on the first request to an agent. */
#include "crypto.h"
#include "hex.h"

#include <errno.h>
#include <nettle/base64.h>
#include <nettle/hmac.h>
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
    unsigned char raw[64];

    if (nbytes > sizeof raw || !random_bytes(raw, nbytes))
        return false;
    hex_encode(raw, nbytes, out);
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

bool crypto_random_bytes(void *out, size_t n)
{
    return random_bytes(out, n);
}

void crypto_hmac_sha256(const void *key, size_t klen, const void *p, size_t n,
                        unsigned char out[32])
{
    struct hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, klen, key);
    hmac_sha256_update(&ctx, n, p);
    hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
    wipe(&ctx, sizeof ctx); /* its inner and outer states derive from the key */
}

size_t crypto_b64_encode(bool url, const void *p, size_t n, char *out)
{
    struct base64_encode_ctx ctx;
    if (url)
        base64url_encode_init(&ctx);
    else
        base64_encode_init(&ctx);
    size_t len = base64_encode_update(&ctx, out, n, p);
    len += base64_encode_final(&ctx, out + len);
    if (url) /* base64url without padding, as JWTs and PKCE write it */
        while (len > 0 && out[len - 1] == '=')
            len--;
    out[len] = '\0';
    return len;
}

bool crypto_b64_decode(bool url, const char *in, size_t n, unsigned char *out, size_t outsz,
                       size_t *outlen)
{
    struct base64_decode_ctx ctx;
    size_t len = outsz;

    if (BASE64_DECODE_LENGTH(n) > outsz)
        return false;
    for (size_t i = 0; i < n; i++) /* nettle skips white space; a header value must not */
        if (in[i] == ' ' || in[i] == '\t' || in[i] == '\r' || in[i] == '\n')
            return false;
    if (url)
        base64url_decode_init(&ctx);
    else
        base64_decode_init(&ctx);
    if (!base64_decode_update(&ctx, &len, out, n, in))
        return false;
    if (!url && !base64_decode_final(&ctx))
        return false;
    *outlen = len;
    return true;
}
