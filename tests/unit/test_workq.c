/* Unit tests for workq.c: jobs run in order off the loop thread, each comes back on the loop
 * thread, batches and gathering, a done callback that submits more, and shutdown with jobs still
 * queued (drain runs them, cancel hands them back unrun), with and without a loop. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "loop.h"
#include "workq.h"

struct job {
    struct workq_job q;
    int no;
    bool worked;
    pthread_t worked_on;
};

struct rec {
    struct loop *loop;
    struct workq *wq;
    pthread_t loop_thread;
    int ran[64], nran;   /* work order (worker thread; read after the done that follows) */
    int done[64], ndone; /* done order (loop thread) */
    int cancelled;
    unsigned batches, biggest;
    atomic_int gate;              /* work waits while 0 */
    atomic_int entered;           /* batches work has started */
    int resubmit;                 /* done submits this many more jobs */
    bool resubmit_cancelled_only; /* ... and only from a cancelled one */
};

static void work(struct list *batch, void *arg)
{
    struct rec *r = arg;
    unsigned n = 0;
    atomic_fetch_add(&r->entered, 1);
    while (atomic_load(&r->gate) == 0)
        usleep(1000);
    LIST_FOREACH(node, batch)
    {
        struct job *j = list_entry(node, struct job, q.link);
        j->worked = true;
        j->worked_on = pthread_self();
        r->ran[r->nran++] = j->no;
        n++;
    }
    r->batches++;
    if (n > r->biggest)
        r->biggest = n;
}

static void done(struct workq_job *qj, enum workq_end end, void *arg)
{
    struct rec *r = arg;
    struct job *j = list_entry(&qj->link, struct job, q.link);
    assert_true(pthread_equal(pthread_self(), r->loop_thread));
    if (end == WORKQ_DONE) {
        assert_true(j->worked);
        assert_false(pthread_equal(j->worked_on, r->loop_thread));
        r->done[r->ndone++] = j->no;
    } else {
        assert_false(j->worked);
        r->cancelled++;
    }
    free(j);
    if (r->resubmit > 0 && (!r->resubmit_cancelled_only || end == WORKQ_CANCELLED)) {
        r->resubmit--;
        struct job *more = calloc(1, sizeof *more);
        more->no = 100 + r->resubmit;
        assert_true(workq_submit(r->wq, &more->q));
    }
}

static void submit(struct rec *r, int no)
{
    struct job *j = calloc(1, sizeof *j);
    j->no = no;
    assert_true(workq_submit(r->wq, &j->q));
}

static void setup_rec(struct rec *r, unsigned batch_max, int gate)
{
    *r = (struct rec){0};
    r->loop = loop_new();
    r->loop_thread = pthread_self();
    atomic_store(&r->gate, gate);
    struct workq_opts o = {.name = "test",
                           .loop = r->loop,
                           .work = work,
                           .done = done,
                           .arg = r,
                           .batch_max = batch_max};
    r->wq = workq_new(&o);
    assert_non_null(r->wq);
}

/* Waits (at most 5 s) until the worker holds a batch at the gate. */
static void wait_entered(struct rec *r)
{
    for (int i = 0; i < 5000 && atomic_load(&r->entered) == 0; i++)
        usleep(1000);
    assert_true(atomic_load(&r->entered) > 0);
}

static void run_until(struct rec *r, int ndone)
{
    for (int i = 0; i < 500 && r->ndone < ndone; i++)
        loop_once(r->loop, 10);
    assert_int_equal(r->ndone, ndone);
}

static void order_and_completion_on_the_loop(void **state)
{
    (void)state;
    struct rec r;
    setup_rec(&r, 1, 1);
    for (int i = 0; i < 20; i++)
        submit(&r, i);
    assert_int_equal(workq_pending(r.wq), 20);
    assert_int_equal(r.ndone, 0); /* nothing comes back but through the loop */
    run_until(&r, 20);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(r.ran[i], i);
        assert_int_equal(r.done[i], i);
    }
    assert_int_equal(r.biggest, 1);
    assert_int_equal(workq_pending(r.wq), 0);
    assert_true(workq_free(r.wq, WORKQ_CANCEL, 0));
    assert_int_equal(r.cancelled, 0);
    loop_free(r.loop);
}

/* Jobs queued while the worker is busy go to work together, up to batch_max. */
static void batches(void **state)
{
    (void)state;
    struct rec r;
    setup_rec(&r, 4, 0);
    for (int i = 0; i < 10; i++)
        submit(&r, i);
    wait_entered(&r); /* the worker holds its first batch at the gate; the rest wait */
    atomic_store(&r.gate, 1);
    run_until(&r, 10);
    for (int i = 0; i < 10; i++)
        assert_int_equal(r.done[i], i);
    assert_true(r.biggest > 1 && r.biggest <= 4);
    assert_true(workq_free(r.wq, WORKQ_DRAIN, 0));
    loop_free(r.loop);
}

static void done_may_submit_more(void **state)
{
    (void)state;
    struct rec r;
    setup_rec(&r, 1, 1);
    r.resubmit = 3;
    submit(&r, 0);
    run_until(&r, 4);
    assert_int_equal(r.done[3], 100);
    assert_true(workq_free(r.wq, WORKQ_DRAIN, 0));
    loop_free(r.loop);
}

/* Shutdown while jobs wait: cancel lets the batch under way finish and hands the rest back
 * unrun; every job comes back exactly once, before workq_free returns. */
static void cancel_with_jobs_pending(void **state)
{
    (void)state;
    struct rec r;
    setup_rec(&r, 1, 0);
    for (int i = 0; i < 8; i++)
        submit(&r, i);
    wait_entered(&r); /* job 0 is at the gate */
    atomic_store(&r.gate, 1);
    assert_true(workq_free(r.wq, WORKQ_CANCEL, 0));
    assert_int_equal(r.ndone + r.cancelled, 8);
    assert_true(r.ndone >= 1);
    assert_int_equal(r.done[0], 0);
    loop_free(r.loop);
}

static void *open_gate_later(void *arg)
{
    struct rec *r = arg;
    usleep(50 * 1000);
    atomic_store(&r->gate, 1);
    return NULL;
}

/* A done run by workq_free that submits again (a chain of writes) gets that job back too,
 * cancelled: none is lost with the queue, even one submitted by the last job's done. */
static void done_submitting_during_free(void **state)
{
    (void)state;
    struct rec r;
    pthread_t opener;
    setup_rec(&r, 1, 0);
    submit(&r, 0);
    submit(&r, 1);
    wait_entered(&r); /* job 0 is at the gate, job 1 waits */
    r.resubmit = 1;
    r.resubmit_cancelled_only = true;
    assert_int_equal(pthread_create(&opener, NULL, open_gate_later, &r), 0);
    assert_true(workq_free(r.wq, WORKQ_CANCEL, 0)); /* cancels 1 while 0 is under way */
    pthread_join(opener, NULL);
    assert_int_equal(r.ndone, 1);
    assert_int_equal(r.cancelled, 2); /* job 1, and the one its done submitted */
    assert_int_equal(r.resubmit, 0);
    loop_free(r.loop);
}

static void drain_runs_what_is_queued(void **state)
{
    (void)state;
    struct rec r;
    setup_rec(&r, 2, 0);
    for (int i = 0; i < 8; i++)
        submit(&r, i);
    atomic_store(&r.gate, 1);
    assert_true(workq_free(r.wq, WORKQ_DRAIN, 0));
    assert_int_equal(r.ndone, 8);
    assert_int_equal(r.cancelled, 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(r.done[i], i);
    loop_free(r.loop);
}

static void never_started(void **state)
{
    (void)state;
    struct rec r;
    setup_rec(&r, 1, 1);
    assert_true(workq_free(r.wq, WORKQ_CANCEL, 0));
    assert_true(workq_free(NULL, WORKQ_CANCEL, 0));
    loop_free(r.loop);
}

/* Without a loop the work owns the jobs; gathering turns a burst into one batch. */
static atomic_int loose_freed, loose_batches;
static void loose_work(struct list *batch, void *arg)
{
    (void)arg;
    atomic_fetch_add(&loose_batches, 1);
    LIST_FOREACH_SAFE(node, batch)
    {
        free(list_entry(node, struct job, q.link));
        atomic_fetch_add(&loose_freed, 1);
    }
}

static void without_a_loop(void **state)
{
    (void)state;
    struct workq_opts o = {.name = "loose",
                           .work = loose_work,
                           .batch_max = 1000,
                           .gather_ms = 200,
                           .gather_max = 1000};
    struct workq *q = workq_new(&o);
    assert_non_null(q);
    assert_true(workq_start(q));
    for (int i = 0; i < 100; i++) {
        struct job *j = calloc(1, sizeof *j);
        assert_true(workq_submit(q, &j->q));
    }
    for (int i = 0; i < 5000 && workq_pending(q) > 0; i++)
        usleep(1000);
    assert_int_equal(workq_pending(q), 0);
    assert_int_equal(atomic_load(&loose_freed), 100);
    assert_true(atomic_load(&loose_batches) <= 2); /* the burst, gathered */
    struct job *last = calloc(1, sizeof *last);
    assert_true(workq_submit(q, &last->q));
    assert_true(workq_free(q, WORKQ_DRAIN, 2000)); /* drained before it returns */
    assert_int_equal(atomic_load(&loose_freed), 101);
}

/* A worker that does not come back (a disk that does not answer) is left behind after the
 * bound: workq_free returns false in about that time instead of hanging the shutdown. The rec
 * outlives the test: the worker still reads it. */
static struct rec stuck;
static void left_behind_after_the_bound(void **state)
{
    (void)state;
    struct timespec t0, t1;
    setup_rec(&stuck, 1, 0);
    submit(&stuck, 0);
    wait_entered(&stuck);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_false(workq_free(stuck.wq, WORKQ_DRAIN, 100));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 90 && ms < 2000);
    assert_int_equal(stuck.ndone + stuck.cancelled, 0); /* the job stays the worker's */
    loop_free(stuck.loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(order_and_completion_on_the_loop),
        cmocka_unit_test(batches),
        cmocka_unit_test(done_may_submit_more),
        cmocka_unit_test(cancel_with_jobs_pending),
        cmocka_unit_test(drain_runs_what_is_queued),
        cmocka_unit_test(never_started),
        cmocka_unit_test(without_a_loop),
        cmocka_unit_test(done_submitting_during_free),
        cmocka_unit_test(left_behind_after_the_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
