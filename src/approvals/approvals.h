/* approvals.h — the operator's approval queue: calls that may only proceed once a person at the
 * server said so (approve-guarded gateway calls, a Hermes run waiting for approval). Each pending
 * request has a short unguessable id, the time it was queued, who asked, the tool, and a capped
 * summary of its arguments with secrets masked. Exactly one outcome reaches the requester's
 * callback: approved, denied (with the operator's reason), timed out (approvals.timeout_s), or
 * none at all when the requester withdraws (client hang-up). A layer of its own on base, below
 * both the bridge (a Hermes run waiting for approval) and the gateway (approve-guarded calls),
 * which the app wires to one queue and one control socket; it runs on the loop thread only. */
#ifndef HM_APPROVALS_H
#define HM_APPROVALS_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct loop;
struct approvals;

#define APPROVALS_DEFAULT_TIMEOUT_S 600u
#define APPROVALS_MAX_PENDING 256u  /* callers control how many they queue: capped */
#define APPROVALS_PER_PRINCIPAL 16u /* one caller cannot fill the operator's queue */
#define APPROVALS_SUMMARY_MAX 240u  /* bytes of argument summary, ellipsis included */
#define APPROVALS_ID_HEX 16u        /* 8 random bytes */
#define APPROVALS_FULL_MAX 65536u   /* bytes of the whole masked arguments `approvals show` gives */

enum approval_outcome { APPROVAL_APPROVED, APPROVAL_DENIED, APPROVAL_TIMED_OUT };

/* Called once, on the loop thread, after the request left the queue. reason: the operator's
 * reason or NULL; decider: who decided ("uid 1000 (alice)") or NULL on timeout. */
typedef void approval_cb(void *arg, enum approval_outcome outcome, const char *reason,
                         const char *decider);

struct approvals *approvals_new(struct loop *l, unsigned timeout_s);
/* The timeout of requests added from now on (0: the default); waiting ones keep theirs.
 * NULL-safe. */
void approvals_set_timeout(struct approvals *q, unsigned timeout_s);
/* NULL-safe. Pending requests get no callback: their owners are shutting down too. */
void approvals_free(struct approvals *q);

/* What the queue tells an observer (the store shares the queue with other replicas). */
struct approval_view {
    const char *id, *principal, *tool, *summary;
    const char *arguments; /* masked, indented, capped at APPROVALS_FULL_MAX */
    long long time;        /* queued, unix seconds */
    size_t cut;            /* bytes of the masked arguments the summary leaves out */
    unsigned timeout_s;
};
struct approvals_observer {
    void (*added)(void *arg, const struct approval_view *v);
    void (*gone)(void *arg, const char *id); /* decided, timed out, withdrawn: before its cb */
};
/* One observer (NULL: none); it must not change the queue from its hooks. */
void approvals_observe(struct approvals *q, const struct approvals_observer *o, void *arg);
/* fn for each request waiting, oldest first; fn must not change the queue. */
typedef void approvals_each_fn(void *arg, const struct approval_view *v);
void approvals_each(const struct approvals *q, approvals_each_fn *fn, void *arg);
/* True when a request with id waits here. */
bool approvals_has(const struct approvals *q, const char *id);

/* Requests of principal waiting now. */
size_t approvals_count_for(const struct approvals *q, const char *principal);
/* Queues a request; returns its id (valid until decided or withdrawn), or NULL when the queue is
 * full, the principal has APPROVALS_PER_PRINCIPAL waiting, or randomness failed. args may be NULL;
 * it is summarised, not kept. */
const char *approvals_add(struct approvals *q, const char *principal, const char *tool,
                          const json_t *args, approval_cb *cb, void *arg);
/* 0: decided (the callback ran); -1: no pending request has that id. */
int approvals_decide(struct approvals *q, const char *id, bool approve, const char *reason,
                     const char *decider);
/* Denies every pending request (the server is stopping): each callback hears APPROVAL_DENIED
 * with reason and decider (APPROVALS_BY_SHUTDOWN). Returns how many. NULL-safe q. */
#define APPROVALS_BY_SHUTDOWN "shutdown"
size_t approvals_deny_all(struct approvals *q, const char *reason, const char *decider);
/* Removes a request without calling its callback (the requester went away). NULL-safe id. */
void approvals_withdraw(struct approvals *q, const char *id);
size_t approvals_pending(const struct approvals *q);
/* [{id, time (unix s), principal, tool, summary[, cut]}], oldest first; cut: how many bytes of
 * the masked arguments the summary leaves out (absent when none). */
json_t *approvals_list_json(const struct approvals *q);
/* {id, time, principal, tool, arguments}: arguments is the masked arguments as indented JSON,
 * capped at APPROVALS_FULL_MAX bytes; NULL when no pending request has that id. */
json_t *approvals_show_json(const struct approvals *q, const char *id);

/* The masked, capped one-line summary of args (a JSON text); caller frees. */
char *approvals_summarize(const json_t *args, size_t cap);
/* text with every credential in it masked, token by token (Bearer/Basic credentials, a URL's
 * password, NAME=value with a secret NAME, --password=x, curl -u user:pass, mysql -pPASS, known
 * key prefixes, random-looking tokens; paths kept): for any text the queue shows. Caller frees. */
char *approvals_mask_text(const char *text);
/* The same over n bytes that may hold NULs (a JSON string's whole length): a NUL separates
 * tokens like a space and is kept. *out_len (may be NULL): the result's length. Caller frees. */
char *approvals_mask_textn(const char *text, size_t n, size_t *out_len);
/* True for an object key whose value must not be shown (key, token, secret, password, ...). */
bool approvals_key_is_secret(const char *key);
/* True for a long string that looks like a credential (no spaces, mixed, high entropy). */
bool approvals_value_looks_secret(const char *s);

#endif
