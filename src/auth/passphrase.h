/* passphrase.h — the owner's consent passphrase: only the owner may approve an OAuth
 * client, by typing this at /authorize. It is kept as an scrypt hash (memory-hard, libcrypto), in
 * a file of mode 600 beside the env file, written atomically by `hermes-mcp oauth passwd`; the
 * passphrase itself is never stored, logged or taken from argv. */
#ifndef HM_PASSPHRASE_H
#define HM_PASSPHRASE_H
#include <stdbool.h>
#include <stddef.h>

#define PASSPHRASE_MIN 12   /* characters */
#define PASSPHRASE_MAX 1024 /* bytes; longer input is refused before hashing */
#define PASSPHRASE_LINE_MAX 256

/* The passphrase file beside a file (the env file or the token store): its directory's
 * "oauth-passphrase". Malloc'd. */
char *passphrase_path_beside(const char *file);
/* The stored line for pass: "scrypt$N$r$p$<salt b64url>$<hash b64url>". False when the random
 * generator or scrypt failed. */
bool passphrase_hash(const char *pass, size_t len, char out[PASSPHRASE_LINE_MAX]);
/* Whether pass matches the stored line (constant-time compare of the hashes); false for a
 * malformed line or parameters outside what passphrase_hash writes. */
bool passphrase_verify(const char *line, const char *pass, size_t len);
/* Writes the line atomically with mode 600. */
bool passphrase_save(const char *path, const char *line, char *err, size_t errlen);
/* Reads the line; false with a reason when missing (err names the command to set one), not a
 * regular file of mode 600, or malformed. */
bool passphrase_load(const char *path, char out[PASSPHRASE_LINE_MAX], char *err, size_t errlen);

#endif
