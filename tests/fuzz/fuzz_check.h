/* fuzz_check.h — CHECK(cond) for the fuzz targets: an invariant the code under test must keep.
 * A violation prints the target and line (tests/fuzz/run.sh greps "invariant violated") and
 * aborts, which libFuzzer reports as a crash with the input saved. */
#ifndef HM_FUZZ_CHECK_H
#define HM_FUZZ_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s: invariant violated at line %d: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                                 \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

/* A NUL-terminated heap copy of the n bytes at p, sized exactly (so ASan sees a read past it). */
static inline char *fuzz_dup(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s == NULL)
        abort();
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

#endif
