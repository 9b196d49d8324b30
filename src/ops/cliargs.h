/* cliargs.h — what the commands of src/ops share on their command line. */
#ifndef HM_CLIARGS_H
#define HM_CLIARGS_H

#include "exitcode.h" /* EXIT_USAGE */

/* Whether argv holds --help or -h. */
int cliargs_want_help(int argc, char **argv);
/* Parses [--env-file FILE | --env-file=FILE] from argv[1..argc-1] (argv[0]: the word before
 * them), the option's exact name only; returns FILE, "./.env" by default, or NULL after
 * printing an error and usage, with *bad set (an unknown word, "--", a missing FILE). */
const char *cliargs_env_file(int argc, char **argv, const char *usage, int *bad);

#endif
