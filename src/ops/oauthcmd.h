/* oauthcmd.h — hermes-mcp oauth passwd|mint-client, and clients|tokens (oauthcli.c). */
#ifndef HM_OAUTHCMD_H
#define HM_OAUTHCMD_H

extern const char oauthcmd_usage[];
/* argv[0] is "oauth"; returns the process exit code. */
int oauthcmd_main(int argc, char **argv);

#endif
