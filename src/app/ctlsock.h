/* ctlsock.h — the local control socket through which the operator answers the approval queue
 * (`hermes-mcp approvals|approve|deny`). A Unix socket beside the env file, mode 600, served on
 * the one event loop; only a peer with the server's own uid (SO_PEERCRED) that is not one of the
 * server's descendants is heard. The protocol
 * is one JSON line each way: {"op":"list"} | {"op":"show","id":ID} | {"op":"approve","id":ID} |
 * {"op":"deny","id":ID,"reason":TEXT} | {"op":"status"} (what the server's status hook tells:
 * the gateway's changes waiting for a restart); answers {"ok":true,...} or
 * {"ok":false,"error":CODE}.
 * Lines are capped; anything else is refused. The request parser and the peer check are shared
 * with the CLI and the unit tests. */
#ifndef HM_CTLSOCK_H
#define HM_CTLSOCK_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct loop;
struct approvals;
struct ctlsock;

#define CTL_LINE_MAX 4096u /* a request line, newline excluded */
#define CTL_ID_MAX 64u
#define CTL_REASON_MAX 200u
#define CTL_SOCKET_SUFFIX ".hermes-mcp.sock" /* after "." and the env file's basename */
#define CTL_ANCESTRY_MAX 64u /* parent links walked before a peer counts as our descendant */

enum ctl_op { CTL_LIST, CTL_APPROVE, CTL_DENY, CTL_SHOW, CTL_STATUS };

struct ctl_request {
    enum ctl_op op;
    char id[CTL_ID_MAX + 1];
    char reason[CTL_REASON_MAX + 1];
};

/* Parses one request line (without its newline). False with *err (a static code) for anything
 * that is not exactly a request: too long, not JSON, unknown op or field, oversize id/reason. */
bool ctlsock_parse_request(const char *line, size_t n, struct ctl_request *r, const char **err);
/* The decision the peer check makes: credentials were read and name our own uid. */
bool ctlsock_uid_allowed(bool have_cred, uid_t peer, uid_t own);
/* Reads fd's peer credentials (SO_PEERCRED) and applies ctlsock_uid_allowed; fails closed. */
bool ctlsock_peer_allowed(int fd, uid_t own, uid_t *peer);
/* True when ancestor is among pid's parents (/proc/PID/stat, at most CTL_ANCESTRY_MAX links),
 * or when that cannot be told (pid gone or unknown, chain too deep): fails closed. The model can
 * run commands through an upstream's tools, as children of the server and under its uid. */
bool ctlsock_pid_descends_from(pid_t pid, pid_t ancestor);
/* True when one of pid's parents runs exe (another hermes-mcp server on this machine), or when
 * the chain cannot be followed: fails closed, like ctlsock_pid_descends_from (exe empty: false,
 * nothing to compare). */
bool ctlsock_pid_under_exe(pid_t pid, const char *exe);
/* The socket's path: ".<env file's basename>" CTL_SOCKET_SUFFIX beside the env file (./.env
 * without one), so servers with different env files in one directory do not share it; NULL
 * when it would not fit a sockaddr_un. Caller frees. */
char *ctlsock_path(const char *env_file);

/* Binds and serves path for q. NULL with a reason in err (directory writable by others, a
 * non-socket in the way, another server already listening). */
struct ctlsock *ctlsock_new(struct loop *l, const char *path, struct approvals *q, char *err,
                            size_t errlen);
/* {"op":"status"} answers {"ok":true} merged with fn(arg) (a new object; fn NULL: nothing). */
typedef json_t *ctl_status_fn(void *arg);
void ctlsock_set_status(struct ctlsock *s, ctl_status_fn *fn, void *arg);
/* With a store the approval queue is every replica's: fn answers list, show, approve and deny
 * in this server's stead, later, with ctlsock_reply(w, answer) (exactly once, also when the
 * peer went away meanwhile: w outlives its connection). fn returns false to let this server
 * answer from its own queue (the store is away). decider: who asks ("uid 1000 (alice) pid 42"). */
struct ctl_wait;
typedef bool ctl_forward_fn(void *arg, const struct ctl_request *r, const char *decider,
                            struct ctl_wait *w);
void ctlsock_set_forward(struct ctlsock *s, ctl_forward_fn *fn, void *arg);
/* The answer for a forwarded request ({"ok":...}; taken); frees w. */
void ctlsock_reply(struct ctl_wait *w, json_t *answer);

/* Closes every connection and removes the socket file. NULL-safe. */
void ctlsock_free(struct ctlsock *s);

#endif
