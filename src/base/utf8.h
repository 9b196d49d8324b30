/* utf8.h — text cleaning for messages built from client or file text. Pure. */
#ifndef HM_UTF8_H
#define HM_UTF8_H
#include <stdbool.h>
#include <stddef.h>

/* Replaces, in place, every byte that is not part of valid UTF-8, and every control character
 * but \t, with '?': for messages quoting client text or cut with %.Ns, before they go into
 * JSON (which needs valid UTF-8) or a log line (which must stay one line). */
void utf8_clean(char *s);
/* utf8_clean, then \t and DEL too: one log line, whatever the text held. */
void utf8_line(char *s);
/* s copied into out (cut to outlen) as one clean line: for untrusted names (an upstream's tool,
 * a file's key) quoted in a log line or a message. */
void utf8_shown(char *out, size_t outlen, const char *s);
/* The length of the valid UTF-8 character at s (n bytes there, n > 0), or 0 when the bytes
 * there are not one (or not whole). */
size_t utf8_next(const char *s, size_t n);
/* True when s[0..n) is valid UTF-8 without NUL bytes. */
bool utf8_valid(const char *s, size_t n);

#endif
