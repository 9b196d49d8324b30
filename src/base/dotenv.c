/* dotenv.c — KEY=VALUE parser. */
#include "dotenv.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"

#define DOTENV_MAX_VALUE (64 * 1024)

static bool key_char(char c, bool first)
{
    return c == '_' || isalpha((unsigned char)c) || (!first && isdigit((unsigned char)c));
}

json_t *dotenv_parse(const char *text, size_t len, char *err, size_t errlen)
{
    json_t *out = json_object();
    const char *p = text, *end = text + len;
    int lineno = 0;
    struct buf val;

    buf_init(&val, DOTENV_MAX_VALUE);
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        lineno++;
        const char *q = p;
        while (q < eol && (*q == ' ' || *q == '\t'))
            q++;
        if (q == eol || *q == '#' || (*q == '\r' && q + 1 == eol)) {
            p = eol + 1;
            continue;
        }
        if ((size_t)(eol - q) > 7 && strncmp(q, "export ", 7) == 0)
            q += 7;
        const char *k = q;
        while (q < eol && key_char(*q, q == k))
            q++;
        size_t klen = (size_t)(q - k);
        while (q < eol && (*q == ' ' || *q == '\t'))
            q++;
        if (klen == 0 || klen > 128 || q == eol || *q != '=') {
            snprintf(err, errlen, "line %d: expected KEY=VALUE", lineno);
            goto fail;
        }
        q++;
        while (q < eol && (*q == ' ' || *q == '\t'))
            q++;
        buf_cleanup(&val);
        buf_init(&val, DOTENV_MAX_VALUE);
        bool ok = true;
        if (q < eol && (*q == '"' || *q == '\'')) {
            char quote = *q++;
            while (q < eol && *q != quote) {
                char c = *q++;
                if (quote == '"' && c == '\\' && q < eol) {
                    c = *q++;
                    c = c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
                }
                ok = ok && buf_append(&val, &c, 1);
            }
            if (q >= eol) {
                snprintf(err, errlen, "line %d: unterminated quoted value", lineno);
                goto fail;
            }
            q++;
            while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
                q++;
            if (q < eol && *q != '#') {
                snprintf(err, errlen, "line %d: text after the closing quote", lineno);
                goto fail;
            }
        } else {
            const char *v = q, *vend = q;
            while (q < eol) {
                if (*q == '#' && q > v && (q[-1] == ' ' || q[-1] == '\t'))
                    break;
                q++;
                vend = q;
            }
            while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t' || vend[-1] == '\r'))
                vend--;
            ok = buf_append(&val, v, (size_t)(vend - v));
        }
        if (!ok) {
            snprintf(err, errlen, "line %d: value too long", lineno);
            goto fail;
        }
        if (memchr(val.data ? val.data : "", '\0', val.len) != NULL) {
            snprintf(err, errlen, "line %d: NUL byte in value", lineno);
            goto fail;
        }
        char key[129];
        memcpy(key, k, klen);
        key[klen] = '\0';
        json_t *js = json_stringn(val.data ? val.data : "", val.len); /* NULL unless UTF-8 */
        if (js == NULL || !json_is_string(js) || json_object_set_new(out, key, js) != 0) {
            snprintf(err, errlen, "line %d: invalid value", lineno);
            goto fail;
        }
        p = eol + 1;
    }
    buf_cleanup(&val);
    return out;
fail:
    buf_cleanup(&val);
    json_decref(out);
    return NULL;
}
