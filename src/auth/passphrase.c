/* passphrase.c — scrypt hashing of the owner's consent passphrase and its file. scrypt (N 2^15,
 * r 8, p 1: 32 MiB and about 0.1 s a try) makes each guess cost memory as well as time, so a
 * stolen file is slow to attack; the consent page is rate limited per address on top. */
#include "passphrase.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomicfile.h"
#include "crypto.h"
#include "mem.h"
#include "readfile.h"

#define SCRYPT_LOG2N 15
#define SCRYPT_R 8
#define SCRYPT_P 1
#define SALT_LEN 16
#define HASH_LEN 32
#define SCRYPT_MAXMEM (64u * 1024u * 1024u)

char *passphrase_path_beside(const char *file)
{
    const char *slash = file ? strrchr(file, '/') : NULL;
    return slash ? xasprintf("%.*s/oauth-passphrase", (int)(slash - file), file)
                 : xstrdup("oauth-passphrase");
}

static bool derive(const char *pass, size_t len, const unsigned char *salt, size_t saltlen,
                   unsigned log2n, unsigned r, unsigned p, unsigned char out[HASH_LEN])
{
    return EVP_PBE_scrypt(pass, len, salt, saltlen, (uint64_t)1 << log2n, r, p, SCRYPT_MAXMEM, out,
                          HASH_LEN) == 1;
}

bool passphrase_hash(const char *pass, size_t len, char out[PASSPHRASE_LINE_MAX])
{
    unsigned char salt[SALT_LEN], hash[HASH_LEN];
    char salt64[32], hash64[64];
    if (len > PASSPHRASE_MAX || !crypto_random_bytes(salt, sizeof salt) ||
        !derive(pass, len, salt, sizeof salt, SCRYPT_LOG2N, SCRYPT_R, SCRYPT_P, hash))
        return false;
    crypto_b64_encode(true, salt, sizeof salt, salt64);
    crypto_b64_encode(true, hash, sizeof hash, hash64);
    snprintf(out, PASSPHRASE_LINE_MAX, "scrypt$%u$%u$%u$%s$%s", SCRYPT_LOG2N, SCRYPT_R, SCRYPT_P,
             salt64, hash64);
    return true;
}

bool passphrase_verify(const char *line, const char *pass, size_t len)
{
    unsigned log2n, r, p;
    char salt64[33], hash64[65];
    unsigned char salt[SALT_LEN + 4], want[HASH_LEN + 4], got[HASH_LEN];
    size_t saltlen, wantlen;
    int end = 0;
    if (line == NULL || len > PASSPHRASE_MAX ||
        sscanf(line, "scrypt$%2u$%2u$%2u$%32[A-Za-z0-9_-]$%64[A-Za-z0-9_-]%n", &log2n, &r, &p,
               salt64, hash64, &end) != 5 ||
        line[end] != '\0')
        return false;
    /* Only the parameters this module writes: a tampered file cannot ask for 2^30 rounds. */
    if (log2n != SCRYPT_LOG2N || r != SCRYPT_R || p != SCRYPT_P ||
        !crypto_b64_decode(true, salt64, strlen(salt64), salt, sizeof salt, &saltlen) ||
        !crypto_b64_decode(true, hash64, strlen(hash64), want, sizeof want, &wantlen) ||
        saltlen != SALT_LEN || wantlen != HASH_LEN)
        return false;
    if (!derive(pass, len, salt, saltlen, log2n, r, p, got))
        return false;
    return crypto_equal(got, want, HASH_LEN);
}

bool passphrase_save(const char *path, const char *line, char *err, size_t errlen)
{
    char text[PASSPHRASE_LINE_MAX + 2];
    int n = snprintf(text, sizeof text, "%s\n", line);
    return atomicfile_write(path, text, (size_t)n, 0600, err, errlen);
}

bool passphrase_load(const char *path, char out[PASSPHRASE_LINE_MAX], char *err, size_t errlen)
{
    struct stat st;
    size_t len = 0;
    char why[300];
    if (lstat(path, &st) != 0 && errno == ENOENT) {
        snprintf(err, errlen, "no consent passphrase is set; run: hermes-mcp oauth passwd");
        return false;
    }
    char *text = readfile_capped(path, path, PASSPHRASE_LINE_MAX, &st, &len, why, sizeof why);
    if (text == NULL) {
        snprintf(err, errlen, "consent passphrase file: %s", why);
        return false;
    }
    bool ok = (st.st_mode & 077) == 0;
    if (!ok)
        snprintf(err, errlen, "%s is readable or writable by others; run: chmod 600 %s", path,
                 path);
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        text[--len] = '\0';
    if (ok && (strncmp(text, "scrypt$", 7) != 0 || len >= PASSPHRASE_LINE_MAX)) {
        snprintf(err, errlen,
                 "%s is not a passphrase file; set it again with: hermes-mcp oauth "
                 "passwd",
                 path);
        ok = false;
    }
    if (ok)
        snprintf(out, PASSPHRASE_LINE_MAX, "%s", text);
    free(text);
    return ok;
}
