/* hex.c — the hex codec. Written out rather than over nettle's base16 so that it stays pure
 * (the fuzz targets that parse hashes link it alone); the decoder is strict where nettle's
 * skips white space, which a stored hash or an identifier must not contain. */
#include "hex.h"

#include <string.h>

void hex_encode(const void *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *raw = p;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[raw[i] >> 4];
        out[2 * i + 1] = digits[raw[i] & 15];
    }
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
