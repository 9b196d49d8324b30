/* approvalscli.h — `hermes-mcp approvals|approve|deny`: the operator answers the approval queue
 * of a running server through its control socket (beside the env file, our own uid only). */
#ifndef HM_APPROVALSCLI_H
#define HM_APPROVALSCLI_H
#include <stdbool.h>

extern const char approvals_usage[];

/* cmd: "approvals", "approve" or "deny"; argv: the arguments after it. Returns the exit code:
 * 0 ok, 1 the server is not running or refused (unknown or already decided id), 2 usage. */
int approvalscli_main(const char *cmd, int argc, char **argv);

/* s made safe for a terminal: C0 and C1 controls, DEL and the bidi overrides and isolates
 * (U+202A-202E, U+2066-2069) written as \xNN or \uNNNN, so a request cannot rewrite what the
 * operator reads; newlines kept when keep_newlines. Caller frees. */
char *approvalscli_printable(const char *s, bool keep_newlines);

#endif
