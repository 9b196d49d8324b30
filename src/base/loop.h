/* loop.h — single-threaded epoll reactor: fd watches, one-shot timers, an eventfd wake-up.
 * All callbacks run on the loop thread; only loop_wake() may be called from another thread.
 * A watch or timer may be removed from inside any callback, including its own. */
#ifndef HM_LOOP_H
#define HM_LOOP_H
#include <stdbool.h>
#include <stdint.h>

struct loop;
struct loop_watch;
struct loop_timer;

typedef void loop_fd_cb(struct loop *l, int fd, uint32_t events, void *arg);
typedef void loop_timer_cb(struct loop *l, void *arg);

struct loop *loop_new(void);
void loop_free(struct loop *l); /* NULL-safe; the caller removed its watches first */

/* Watch fd for epoll events (EPOLLIN, EPOLLRDHUP, ...). Returns NULL with errno on failure. */
struct loop_watch *loop_watch_add(struct loop *l, int fd, uint32_t events, loop_fd_cb *cb,
                                  void *arg);
int loop_watch_mod(struct loop_watch *w, uint32_t events);
void loop_watch_del(struct loop_watch *w); /* NULL-safe; cb is not called after this */

/* Call cb once, ms milliseconds from now. */
struct loop_timer *loop_timer_add(struct loop *l, uint64_t ms, loop_timer_cb *cb, void *arg);
void loop_timer_cancel(struct loop_timer *t); /* NULL-safe; cb is not called after this */

/* Monotonic milliseconds, refreshed on every loop iteration. */
uint64_t loop_now(struct loop *l);

/* Run until loop_stop(); returns 0, or -1 with errno if epoll fails. */
int loop_run(struct loop *l);
/* Run one iteration, waiting at most max_wait_ms (-1: until something happens). */
int loop_once(struct loop *l, int max_wait_ms);
void loop_stop(struct loop *l);
/* True once loop_stop was called, until loop_run starts again: lets code that runs loop_once
 * itself (start-up waits) give up when the process is told to stop. */
bool loop_stopping(const struct loop *l);
/* Safe from any thread or a signal handler: makes loop_run return from its wait. */
void loop_wake(struct loop *l);

#endif
