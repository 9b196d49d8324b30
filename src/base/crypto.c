/* crypto.c — random hex, SHA-256, constant-time compare over libcrypto. */
#include "crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>

bool crypto_random_hex(char *out, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[64];

    if (nbytes > sizeof raw || RAND_bytes(raw, (int)nbytes) != 1)
        return false;
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    OPENSSL_cleanse(raw, sizeof raw);
    return true;
}

/* Fetched once: EVP_sha256() makes every digest look the algorithm up in the provider store
 * again, which cost more than hashing a bearer token (it runs on every request). */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void crypto_sha256(const void *p, size_t n, unsigned char out[32])
{
    unsigned int len = 32;
    pthread_once(&sha256_once, sha256_fetch);
    EVP_Digest(p, n, out, &len, sha256_md ? sha256_md : EVP_sha256(), NULL);
}

bool crypto_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}
