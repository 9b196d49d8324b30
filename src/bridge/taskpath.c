/* taskpath.c — validation of task ids, session names and relative paths. */
#include "taskpath.h"

#include <string.h>

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool taskpath_id_ok(const char *id, size_t len)
{
    if (len < 1 || len > 128 || !alnum(id[0]))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!alnum(id[i]) && id[i] != '.' && id[i] != '_' && id[i] != '-')
            return false;
    return true;
}

bool taskpath_session_ok(const char *s, size_t len)
{
    if (len < 1 || len > 64)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool lower = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!lower && (i == 0 || (c != '.' && c != '_' && c != '-')))
            return false;
    }
    return true;
}

bool taskpath_rel_ok(const char *p, size_t len, char *out, size_t outlen, const char **why)
{
    size_t o = 0;

    *why = NULL;
    if (len > 1024) {
        *why = "path is longer than 1024 bytes";
        return false;
    }
    if (len > 0 && p[0] == '/') {
        *why = "absolute paths are not allowed";
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\0') {
            *why = "NUL bytes are not allowed";
            return false;
        }
        if (c == '\\') {
            *why = "backslashes are not allowed";
            return false;
        }
        if (c == '%') {
            *why = "percent-encoded paths are not allowed";
            return false;
        }
        if (c < 0x20 || c == 0x7f) {
            *why = "control characters are not allowed";
            return false;
        }
    }
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && p[j] != '/')
            j++;
        size_t n = j - i;
        if (n == 2 && p[i] == '.' && p[i + 1] == '.') {
            *why = "'..' is not allowed";
            return false;
        }
        if (n > 0 && !(n == 1 && p[i] == '.')) {
            if (o + n + 2 > outlen) {
                *why = "path is too long";
                return false;
            }
            if (o > 0)
                out[o++] = '/';
            memcpy(out + o, p + i, n);
            o += n;
        }
        i = j + 1;
    }
    if (outlen == 0)
        return false;
    out[o] = '\0';
    return true;
}
