/* hex.h — the one hexadecimal codec: lowercase digests and identifiers out, and the digit
 * reader for the parsers that decode %XX, \uXXXX and stored SHA-256 hashes, so each does not
 * carry its own copy. Pure; any thread. */
#ifndef HM_HEX_H
#define HM_HEX_H
#include <stdbool.h>
#include <stddef.h>

/* The 2*n lowercase hex digits of p[0..n) and a NUL into out (room for 2*n+1). */
void hex_encode(const void *p, size_t n, char *out);

/* Decodes exactly 2*n hex digits (either case) of text into out[0..n). False, with out
 * unspecified, when text is not that long or holds anything but hex digits. */
bool hex_decode(const char *text, void *out, size_t n);

/* The value 0..15 of one hex digit (either case), or -1 when c is not one. */
static inline int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
