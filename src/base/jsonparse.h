/* jsonparse.h — a JSON text parser for small untrusted documents on a request's path (a JWT's
 * header and claims). It gives the answer jansson's json_loadb(text, len,
 * JSON_REJECT_DUPLICATES) gives for every input: the same value, or NULL where jansson fails
 * (a differential fuzz target checks it), but for a NUL byte after a number or a literal,
 * which jansson skips and this refuses. It reads the text in place rather than a character
 * at a time through jansson's stream, which makes a few hundred bytes of claims several times
 * cheaper to parse. Pure. */
#ifndef HM_JSONPARSE_H
#define HM_JSONPARSE_H
#include <jansson.h>
#include <stddef.h>

/* The array or object text[0..len) holds (RFC 8259, UTF-8, nested at most
 * JSON_PARSER_MAX_DEPTH deep, no duplicate member names, no \u0000, integers within
 * json_int_t, reals within double's range), or NULL (also for a NULL text). Reals are read
 * with strtod in the C locale, which the server never changes (jansson adapts to another). */
json_t *jsonparse(const char *text, size_t len);

#endif
