/* audit.h — the JSONL audit log: one line per HTTP request, never a header, body, task text,
 * token or key. Lines are queued by the loop thread and written by one writer thread, so a slow
 * or full disk never blocks the loop: when the queue is full, lines are dropped and counted.
 * The file is mode 600 and rotates at rotate_bytes, keeping `keep` old generations
 * (path.1 … path.keep). A path that is not a regular file (a FIFO, /dev/full) is written as is:
 * no chmod, no rotation. */
#ifndef HM_AUDIT_H
#define HM_AUDIT_H
#include <stddef.h>
#include <stdint.h>

struct audit;

struct audit_entry {
    const char *ip, *method, *path;
    const char *principal; /* who the bearer token named; NULL: nobody (no or a bad token) */
    unsigned status;
    uint64_t duration_ms;
    const char *rpc_method; /* may be NULL */
    const char *tool;       /* may be NULL */
    const char *error;      /* may be NULL */
};

/* A line that is not an HTTP request: something a provider did, such as a call the gateway
 * proxied, a tool it withheld or a pin it applied. Never arguments or results. */
struct audit_event {
    const char *event;     /* what happened: "gateway_call", "gateway_withheld", ... */
    const char *principal; /* who asked, or NULL (the server itself, an operator's file) */
    const char *upstream, *tool, *upstream_tool, *status; /* each may be NULL */
    const char *decided_by; /* approvals: "uid N (user)", "timeout", "withdrawn", "shutdown" */
    double duration_ms;     /* < 0: not a timed event */
};

/* Starts the writer. Never blocks on the file itself (opened by the writer). */
struct audit *audit_new(const char *path, size_t rotate_bytes, int keep);
/* Loop thread: formats and queues one line; drops it (counted) if the queue is full. */
void audit_log(struct audit *a, const struct audit_entry *e);
/* Loop thread: formats and queues one event line, like audit_log. */
void audit_log_event(struct audit *a, const struct audit_event *e);
/* Lines dropped so far (queue full, or a write that failed). Any thread. */
uint64_t audit_dropped(struct audit *a);
/* Lines written so far. Any thread. */
uint64_t audit_written(struct audit *a);
/* Writes what is queued (waits at most wait_ms for a stuck disk), stops the writer, frees.
 * NULL-safe. */
void audit_free(struct audit *a, unsigned wait_ms);

#endif
