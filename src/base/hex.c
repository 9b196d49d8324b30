/* hex.c — hex encoding over nettle's base16 (already linked for SHA-256), and a strict decoder:
 * nettle's skips white space, which a stored hash or an identifier must not contain. */
#include "hex.h"

#include <nettle/base16.h>
#include <string.h>

void hex_encode(const void *p, size_t n, char *out)
{
    base16_encode_update(out, n, p);
    out[2 * n] = '\0';
}

bool hex_decode(const char *text, void *out, size_t n)
{
    unsigned char *o = out;
    if (strnlen(text, 2 * n + 1) != 2 * n)
        return false;
    for (size_t i = 0; i < n; i++) {
        int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        o[i] = (unsigned char)(hi << 4 | lo);
    }
    return true;
}
