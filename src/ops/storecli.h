/* storecli.h — `hermes-mcp store init|status`: the PostgreSQL store of STORE_URL, from the
 * command line. */
#ifndef HM_STORECLI_H
#define HM_STORECLI_H

extern const char storecli_usage[];

/* argv: the arguments after the word "store". Returns the exit code: 0 ok, 1 the database
 * could not be reached or is not at this binary's schema (status), 2 usage or configuration
 * error. */
int storecli_main(int argc, char **argv);

#endif
