/* crypto.h — the few primitives we need from libcrypto. Any thread. */
#ifndef HM_CRYPTO_H
#define HM_CRYPTO_H
#include <stdbool.h>
#include <stddef.h>

/* Writes 2*nbytes lowercase hex characters of cryptographically random data plus a NUL into
 * out (size >= 2*nbytes+1). Returns false if the random generator failed. */
bool crypto_random_hex(char *out, size_t nbytes);
/* SHA-256 of p[0..n) into out[32]. */
void crypto_sha256(const void *p, size_t n, unsigned char out[32]);
/* Constant-time equality of two n-byte buffers. */
bool crypto_equal(const void *a, const void *b, size_t n);

#endif
