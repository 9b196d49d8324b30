/* tokengen.h — `hermes-mcp token gen --name N --scopes S`: a new token for a principal of the
 * tokens file (TOKENS_FILE). */
#ifndef HM_TOKENGEN_H
#define HM_TOKENGEN_H

extern const char tokengen_usage[];

/* argv: the options after "token gen". Prints the token once and the YAML entry to add to the
 * tokens file (which it does not touch). Returns an exit code: 0, 1 (no random bytes), 2 usage. */
int tokengen_main(int argc, char **argv);

#endif
