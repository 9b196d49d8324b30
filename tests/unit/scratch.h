/* scratch.h — a test program's scratch folder: made from its mkdtemp template before the group's
 * tests (cmocka group setup), removed with all it holds after them (group teardown).
 *   SCRATCH_FIXTURES(dir)                 defines setup and teardown for the folder dir
 *   SCRATCH_FIXTURES_FILE(dir, path, NAME) the same, and sets path to dir/NAME once it exists */
#ifndef SCRATCH_H
#define SCRATCH_H
#include <stdio.h>
#include <stdlib.h>

static inline int scratch_remove(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* then: a statement run once the folder exists. */
#define SCRATCH_FIXTURES_THEN(dir, then)                                                           \
    static int setup(void **state)                                                                 \
    {                                                                                              \
        (void)state;                                                                               \
        if (mkdtemp(dir) == NULL)                                                                  \
            return -1;                                                                             \
        then;                                                                                      \
        return 0;                                                                                  \
    }                                                                                              \
    static int teardown(void **state)                                                              \
    {                                                                                              \
        (void)state;                                                                               \
        return scratch_remove(dir);                                                                \
    }

#define SCRATCH_FIXTURES(dir) SCRATCH_FIXTURES_THEN(dir, (void)0)
#define SCRATCH_FIXTURES_FILE(dir, path, name)                                                     \
    SCRATCH_FIXTURES_THEN(dir, snprintf(path, sizeof path, "%s/%s", dir, name))

#endif
