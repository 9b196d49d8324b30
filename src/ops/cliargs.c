/* cliargs.c — the options every command of src/ops parses alike. */
#include "cliargs.h"

#include <stdio.h>
#include <string.h>

int cliargs_want_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

/* Exact names only: getopt_long would take any prefix (--env, --e) for --env-file, which the
 * other commands' options do not accept, and a script written with one would break, or mean
 * something else, the day an option sharing that prefix is added. The commands take no
 * operands, so "--" is refused like any other stray word. */
const char *cliargs_env_file(int argc, char **argv, const char *usage, int *bad)
{
    const char *file = ".env";
    *bad = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--env-file") == 0 && i + 1 < argc) {
            file = argv[++i];
        } else if (strncmp(argv[i], "--env-file=", 11) == 0) {
            file = argv[i] + 11;
        } else {
            if (strcmp(argv[i], "--env-file") == 0)
                fprintf(stderr, "hermes-mcp: option '--env-file' needs a FILE\n%s", usage);
            else
                fprintf(stderr, "hermes-mcp: unknown argument '%s'\n%s", argv[i], usage);
            *bad = 1;
            return NULL;
        }
    }
    return file;
}
