/* hex.h — one hexadecimal digit reader for the parsers that decode %XX, \uXXXX and stored
 * SHA-256 hashes, so each does not carry its own copy. Pure, header only. */
#ifndef HM_HEX_H
#define HM_HEX_H

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
