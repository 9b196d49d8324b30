/* approvalscli.h — `hermes-mcp approvals|approve|deny`: the operator answers the approval queue
 * of a running server through its control socket (beside the env file, our own uid only). */
#ifndef HM_APPROVALSCLI_H
#define HM_APPROVALSCLI_H

extern const char approvals_usage[];

/* cmd: "approvals", "approve" or "deny"; argv: the arguments after it. Returns the exit code:
 * 0 ok, 1 the server is not running or refused (unknown or already decided id), 2 usage. */
int approvalscli_main(const char *cmd, int argc, char **argv);

#endif
