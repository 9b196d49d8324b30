/* exitcode.h — the exit status of every hermes-mcp command, in one place (documented in
 * docs/reference/errors.md, made from exitcode_at's table). */
#ifndef HM_EXITCODE_H
#define HM_EXITCODE_H
#include <stddef.h>

enum exitcode {
    EXIT_OK = 0,    /* done; doctor and gateway check: no FAIL line (warnings allowed) */
    EXIT_FAIL = 1,  /* the command ran and something failed */
    EXIT_USAGE = 2, /* the command line or the configuration is wrong: an unknown command or
                       option, a missing value, a setting serve refuses */
};

struct exitcode_info {
    enum exitcode code;
    const char *meaning;
};
/* The i-th row of the table (NULL past its end). */
const struct exitcode_info *exitcode_at(size_t i);

#endif
