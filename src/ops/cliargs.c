/* cliargs.c — the options every command of src/ops parses alike. */
#include "cliargs.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int cliargs_want_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

const char *cliargs_env_file(int argc, char **argv, const char *usage, int *bad)
{
    static const struct option opts[] = {{"env-file", required_argument, NULL, 'e'},
                                         {NULL, 0, NULL, 0}};
    const char *file = ".env";
    int c;
    *bad = 0;
    opterr = 0;
    optind = 0; /* glibc: start again, whatever parsed before */
    while ((c = getopt_long(argc, argv, "+", opts, NULL)) == 'e')
        file = optarg;
    if (c != -1 || optind < argc) {
        fprintf(stderr, "hermes-mcp: unknown argument '%s'\n%s",
                c != -1 ? argv[optind - 1] : argv[optind], usage);
        *bad = 1;
        return NULL;
    }
    return file;
}
