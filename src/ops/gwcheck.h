/* gwcheck.h — `hermes-mcp gateway check`: the gateway file validated offline, as serve would
 * read it, and the configured upstreams printed (never a value that may be a secret). */
#ifndef HM_GWCHECK_H
#define HM_GWCHECK_H

extern const char gateway_usage[];

/* argv: the arguments after the word "gateway". Returns the exit code: 0 valid, 1 the file is
 * refused, 2 usage or configuration error (no GATEWAY_FILE). */
int gwcheck_main(int argc, char **argv);

#endif
