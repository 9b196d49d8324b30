/* fuzz_check.h — CHECK(cond) for the fuzz targets: an invariant the code under test must keep.
 * A violation prints the target and line (tests/fuzz/run.sh greps "invariant violated") and
 * aborts, which libFuzzer reports as a crash with the input saved. */
#ifndef HM_FUZZ_CHECK_H
#define HM_FUZZ_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s: invariant violated at line %d: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                                 \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

#endif
