/* approvalscli.h — `hermes-mcp approvals|approve|deny`: the operator answers the approval queue
 * of a running server through its control socket (beside the env file, our own uid only). */
#ifndef HM_APPROVALSCLI_H
#define HM_APPROVALSCLI_H
#include <stdbool.h>

extern const char approvals_usage[];

/* cmd: "approvals", "approve" or "deny"; argv: the arguments after it. Returns the exit code:
 * 0 ok, 1 the server is not running or refused (unknown or already decided id), 2 usage. */
int approvalscli_main(const char *cmd, int argc, char **argv);

/* s made safe for a terminal: C0 controls, DEL and bytes that are not UTF-8 written as \xNN; C1
 * controls, format characters (zero-width and bidi marks, BOM, ...), U+2028/2029, tags and
 * variation selectors as \uNNNN or \U{NNNNN}, so a request cannot rewrite or hide what the
 * operator reads; newlines kept when keep_newlines. Caller frees. */
char *approvalscli_printable(const char *s, bool keep_newlines);

#endif
