/* tokencmd.h — hermes-mcp token gen|rotate: the owner's MCP_AUTH_TOKEN in the env file. */
#ifndef HM_TOKENCMD_H
#define HM_TOKENCMD_H

extern const char tokencmd_usage[];
/* argv[0] is "token"; returns the process exit code. */
int tokencmd_main(int argc, char **argv);

#endif
