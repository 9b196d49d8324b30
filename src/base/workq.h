/* workq.h — one background work queue, after redis's bio.c: a worker thread per queue runs
 * jobs off the loop (disk writes, fsyncs, scrypt, directory walks), in the order they were
 * submitted, and each finished job comes back to the loop thread through an eventfd the loop
 * watches. The audit log, the passphrase verifier, the task pruner and the task writer run on
 * one each, so none of them carries its own thread, mutex, condition variable and eventfd.
 *
 * A job is the caller's struct with a struct workq_job member. The queue holds it from
 * workq_submit until its done callback, which gives it back: done may free it or submit more
 * (what it submits while workq_free runs comes back as WORKQ_CANCELLED, so a done must not
 * submit again on WORKQ_CANCELLED without end).
 * The worker takes up to batch_max jobs at once, so a writer can share one fsync among many.
 *
 * Threads: workq_new, workq_start, workq_submit, workq_pending and workq_free on the loop
 * thread (the one thread that submits); work on the worker thread; done on the loop thread. */
#ifndef HM_WORKQ_H
#define HM_WORKQ_H
#include <stdbool.h>
#include <stddef.h>

#include "list.h"

struct loop;
struct workq;

struct workq_job {
    struct list link; /* the queue's while the job is queued: do not touch */
};

enum workq_end {
    WORKQ_DONE,      /* work ran on it */
    WORKQ_CANCELLED, /* workq_free(WORKQ_CANCEL) came first: work never saw it */
};

/* Worker thread: runs a batch, the jobs linked by their struct workq_job's link in submission
 * order. It must not unlink them. Without a loop (see opts) it owns them: it frees them. */
typedef void workq_work_cb(struct list *batch, void *arg);
/* Loop thread: job (a struct workq_job member of the caller's struct) is the caller's again. */
typedef void workq_done_cb(struct workq_job *job, enum workq_end end, void *arg);

struct workq_opts {
    const char *name;  /* for logs and the thread's name (at most 15 bytes are kept) */
    struct loop *loop; /* where done runs; NULL: no completion, work frees the jobs */
    workq_work_cb *work;
    workq_done_cb *done; /* required with a loop, and for WORKQ_CANCEL */
    void *arg;
    unsigned batch_max; /* jobs handed to work at once; 0: 1 */
    /* With fewer than gather_max jobs waiting, the worker first lets gather_ms pass so that a
     * burst becomes one batch (one write, one wake-up). 0: take what is there. */
    unsigned gather_ms, gather_max;
    bool idle; /* the worker runs at the lowest priority (nice 19, SCHED_IDLE) */
};

/* A queue; its thread starts on the first submit, or at workq_start. NULL with errno when the
 * eventfd or its watch cannot be made. */
struct workq *workq_new(const struct workq_opts *o);
/* Starts the worker now, so that a caller can fail early. False if the thread cannot start. */
bool workq_start(struct workq *q);
/* Queues job. False (job not taken) when the worker thread cannot start. */
bool workq_submit(struct workq *q, struct workq_job *job);
/* Jobs submitted whose done has not run yet (with a loop); without one, jobs not yet worked. */
size_t workq_pending(const struct workq *q);

enum workq_stop {
    WORKQ_DRAIN,  /* work runs on everything queued first */
    WORKQ_CANCEL, /* the batch under way finishes; the rest go to done as WORKQ_CANCELLED */
};

/* Stops the worker, joins it, runs done for every job still held, and frees q. Not from a done
 * callback. wait_ms > 0 bounds the wait for the worker (a disk that does not answer): when it
 * is still busy then, it is left behind, q and the jobs it holds are deliberately not freed,
 * and false is returned, so the caller must keep what work uses. NULL-safe (true). */
bool workq_free(struct workq *q, enum workq_stop how, unsigned wait_ms);

#endif
