/* oauthcli.h — `hermes-mcp oauth clients` and `hermes-mcp oauth tokens`: the owner's view of the
 * OAuth clients registered and the tokens issued, and their revocation, on the files a running
 * server uses (it sees the change at its next request). */
#ifndef HM_OAUTHCLI_H
#define HM_OAUTHCLI_H

extern const char oauthcli_usage[];

/* argv[0] is "clients" or "tokens". Returns the exit code: 0 done, 1 nothing matched or a file
 * could not be read or written, 2 usage or configuration error. */
int oauthcli_main(int argc, char **argv);

#endif
