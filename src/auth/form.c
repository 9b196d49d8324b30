/* form.c — one parameter of a urlencoded form: the OAuth endpoints read a handful of named
 * fields, so a lookup by name (each pair scanned, nothing kept) is all they need, and a field
 * given twice is refused rather than one of the two silently chosen. */
#include "form.h"
#include "hex.h"

#include <string.h>
#include <strings.h>

#include "crypto.h"

bool form_decode(const char *s, size_t n, char *out, size_t outsz, size_t *outlen)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            if (i + 2 >= n)
                return false;
            int hi = hex_digit(s[i + 1]);
            int lo = hex_digit(s[i + 2]);
            if (hi < 0 || lo < 0)
                return false;
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        }
        if (c < 0x20 || c == 0x7f)
            return false;
        if (k + 1 >= outsz)
            return false;
        out[k++] = (char)c;
    }
    out[k] = '\0';
    *outlen = k;
    return true;
}

enum form_result form_get(const char *text, size_t len, const char *name, char *out, size_t outsz)
{
    enum form_result r = FORM_ABSENT;
    char key[64];
    size_t keylen, vlen;
    if (outsz == 0)
        return FORM_BAD;
    out[0] = '\0';
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && text[end] != '&')
            end++;
        size_t eq = i;
        while (eq < end && text[eq] != '=')
            eq++;
        /* A key we cannot decode or that is longer than any we read is not the one asked for. */
        if (eq > i && form_decode(text + i, eq - i, key, sizeof key, &keylen) &&
            strcmp(key, name) == 0) {
            if (r != FORM_ABSENT) {
                out[0] = '\0'; /* neither of the two */
                return FORM_BAD;
            }
            const char *v = eq < end ? text + eq + 1 : text + end;
            if (!form_decode(v, (size_t)(text + end - v), out, outsz, &vlen)) {
                out[0] = '\0';
                return FORM_BAD;
            }
            r = FORM_OK;
        }
        i = end + 1;
    }
    return r;
}

#define BASIC_MAX 2048 /* decoded bytes of a Basic credential; longer is refused */

bool form_basic_auth(const char *header, char *id, size_t idsz, char *secret, size_t secretsz)
{
    unsigned char raw[BASIC_MAX + 1];
    size_t n = 0;
    if (idsz == 0 || secretsz == 0 || strncasecmp(header, "Basic ", 6) != 0)
        return false;
    header += 6;
    header += strspn(header, " ");
    size_t len = strlen(header);
    if (len == 0 || len > 4 * (BASIC_MAX / 3) ||
        !crypto_b64_decode(false, header, len, raw, BASIC_MAX, &n))
        return false;
    const unsigned char *colon = memchr(raw, ':', n);
    bool ok = colon != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = raw[i] >= 0x20 && raw[i] != 0x7f;
    size_t idlen = ok ? (size_t)(colon - raw) : 0, seclen = ok ? n - idlen - 1 : 0;
    ok = ok && idlen < idsz && seclen < secretsz;
    if (ok) {
        memcpy(id, raw, idlen);
        id[idlen] = '\0';
        memcpy(secret, colon + 1, seclen);
        secret[seclen] = '\0';
    }
    explicit_bzero(raw, sizeof raw);
    return ok;
}
