/* form.h — application/x-www-form-urlencoded bodies and query strings, as the OAuth endpoints
 * (/authorize, /token, the consent form) receive them from any client, and the Basic client
 * credentials of /token and /revoke. Pure, no allocation;
 * fuzzed (tests/fuzz/fuzz_form.c). */
#ifndef HM_FORM_H
#define HM_FORM_H
#include <stdbool.h>
#include <stddef.h>

enum form_result { FORM_ABSENT, FORM_OK, FORM_BAD };

/* The value of name in text[0..len): percent-decoded ('+' is a space) into out (outsz bytes,
 * NUL-terminated). FORM_BAD when it is there more than once (RFC 6749 3.1), longer than
 * outsz - 1 decoded, badly escaped, or decodes to a NUL or another control character. */
enum form_result form_get(const char *text, size_t len, const char *name, char *out, size_t outsz);

/* Decodes one escaped value s[0..n) ('+' is a space) into out (outsz bytes, NUL-terminated)
 * and its length into outlen; false when badly escaped, longer than outsz - 1, or it decodes to
 * a control character. (httpd leaves query values escaped: this is their decoder.) */
bool form_decode(const char *s, size_t n, char *out, size_t outsz, size_t *outlen);

/* An "Authorization: Basic base64(id:secret)" header (RFC 7617, client_secret_basic) into id
 * and secret (idsz and secretsz bytes, NUL-terminated); false when it is not Basic, not valid
 * base64, has no ':', holds a NUL or control character, or a part does not fit. Neither part
 * is URL-decoded: the static client's id is unreserved characters, mint-client's secret hex. */
bool form_basic_auth(const char *header, char *id, size_t idsz, char *secret, size_t secretsz);

#endif
