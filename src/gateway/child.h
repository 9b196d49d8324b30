/* child.h — one stdio child process on the event loop: started in its own process group (so it
 * and everything it starts can be killed together) and tied to our life (PR_SET_PDEATHSIG), its
 * stdin fed from a bounded queue, its stdout cut into lines (each capped), its stderr cut into
 * lines that go to our log, never to clients. Loop thread only. */
#ifndef HM_CHILD_H
#define HM_CHILD_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

struct loop;
struct child;

#define CHILD_LINE_MAX (4u * 1024 * 1024)   /* a stdout line (one JSON-RPC message) at most */
#define CHILD_QUEUE_MAX (16u * 1024 * 1024) /* bytes waiting for the child's stdin */
#define CHILD_EDGE 256u                     /* bytes kept of each end of an oversized line */

struct child_spec {
    const char *name;    /* for the log: "upstream NAME" */
    const char *command; /* looked up in PATH */
    json_t *args;        /* array of strings */
    json_t *env;         /* object of strings, added to a minimal inherited environment */
    const char *cwd;     /* NULL: ours */
};

struct child_events {
    /* One stdout line without its newline, NUL-terminated (the buffer is ours). */
    void (*line)(char *line, size_t len, void *arg);
    /* A stdout line longer than CHILD_LINE_MAX was dropped, once its end arrived: its first
     * and last bytes (at most CHILD_EDGE each), enough to find the id of the message. */
    void (*oversized)(const char *head, size_t head_len, const char *tail, size_t tail_len,
                      void *arg);
    /* The child is gone (reaped); status as from waitpid. Not called from child_free. The
     * child may be freed from inside this callback. */
    void (*exited)(int status, void *arg);
};

/* Starts spec; NULL with a reason in err (e.g. the command cannot be run). */
struct child *child_start(struct loop *l, const struct child_spec *spec,
                          const struct child_events *ev, void *arg, char *err, size_t errlen);
/* Queues bytes for the child's stdin; false when it is gone or the queue is full. */
bool child_write(struct child *c, const char *data, size_t len);
/* True while pid is a child this module started and has not reaped yet (running, or being
 * stopped): the subreaper (src/app/reaper.c) leaves those to us and reaps the rest. */
bool child_owns(pid_t pid);
/* The RLIMIT_NOFILE the server started with, before raising it: children get it back. */
void child_set_fd_limit(const struct rlimit *rl);
/* Closes its stdin, sends SIGTERM to its process group and frees; never waits. A child not
 * gone at once is reaped on the loop, its group SIGKILLed when still there 2 s later. NULL-safe. */
void child_free(struct child *c);
/* At exit, once the loop no longer runs: waits up to wait_ms for the children being stopped
 * (no longer once a second SIGTERM/SIGINT is pending), SIGKILLs the groups of those still
 * there, and forgets them (a child stuck in the kernel is left to init after a further
 * second). */
void child_reap_all(unsigned wait_ms);

#endif
