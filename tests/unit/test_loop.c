/* Unit tests for loop.c: timer order, cancellation, fd watches, removal during dispatch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <cmocka.h>

#include "loop.h"

struct trace {
    int order[8];
    int n;
    struct loop_timer *victim;
};

static void mark(struct loop *l, void *arg)
{
    (void)l;
    struct trace *t = arg;
    t->order[t->n] = t->n;
    t->n++;
}

static int fired[4];
static int fire_log[4], fire_n;
static void fire0(struct loop *l, void *arg)
{
    (void)l, (void)arg;
    fired[0] = 1;
    fire_log[fire_n++] = 0;
}
static void fire1(struct loop *l, void *arg)
{
    struct trace *t = arg;
    (void)l;
    fired[1] = 1;
    fire_log[fire_n++] = 1;
    loop_timer_cancel(t->victim); /* cancel another timer from inside a callback */
    loop_stop(l);
}
static void fire2(struct loop *l, void *arg)
{
    (void)l, (void)arg;
    fired[2] = 1;
}

static void timers_fire_in_due_order_and_cancel_works(void **state)
{
    (void)state;
    struct loop *l = loop_new();
    struct trace t = {0};
    assert_non_null(l);
    loop_timer_add(l, 10, fire1, &t);
    t.victim = loop_timer_add(l, 10, fire2, &t); /* same due time: after fire1, which cancels it */
    loop_timer_add(l, 5, fire0, &t);             /* added last, due first */
    struct loop_timer *never = loop_timer_add(l, 1, mark, &t);
    loop_timer_cancel(never);
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(fired[0], 1);
    assert_int_equal(fired[1], 1);
    assert_int_equal(fired[2], 0);
    assert_int_equal(t.n, 0);
    assert_int_equal(fire_n, 2);
    assert_int_equal(fire_log[0], 0); /* due at 5 ms, before the one due at 10 */
    assert_int_equal(fire_log[1], 1);
    loop_free(l);
}

struct pipes {
    int a[2], b[2];
    struct loop_watch *wa, *wb;
    int hits_a, hits_b;
};

static void on_a(struct loop *l, int fd, uint32_t ev, void *arg)
{
    struct pipes *p = arg;
    char c;
    (void)ev;
    p->hits_a++;
    if (read(fd, &c, 1) < 0)
        fail();
    loop_watch_del(p->wb); /* b is also ready in this batch: it must not be called */
    p->wb = NULL;
    loop_stop(l);
}

static void on_b(struct loop *l, int fd, uint32_t ev, void *arg)
{
    struct pipes *p = arg;
    char c;
    (void)l, (void)ev;
    p->hits_b++;
    if (read(fd, &c, 1) < 0)
        fail();
    loop_watch_del(p->wa);
    p->wa = NULL;
    loop_stop(l);
}

static void watch_removed_during_dispatch_is_not_called(void **state)
{
    (void)state;
    struct loop *l = loop_new();
    struct pipes p = {0};
    assert_int_equal(pipe(p.a), 0);
    assert_int_equal(pipe(p.b), 0);
    p.wa = loop_watch_add(l, p.a[0], EPOLLIN, on_a, &p);
    p.wb = loop_watch_add(l, p.b[0], EPOLLIN, on_b, &p);
    assert_int_equal(write(p.a[1], "x", 1), 1);
    assert_int_equal(write(p.b[1], "y", 1), 1);
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(p.hits_a + p.hits_b, 1); /* whichever ran first removed the other */
    loop_watch_del(p.wa);
    loop_watch_del(p.wb);
    for (int i = 0; i < 2; i++) {
        close(p.a[i]);
        close(p.b[i]);
    }
    loop_free(l);
}

/* Each timer records itself when it fires; the last one stops the loop. */
struct ordered {
    int due, seq;
    int *log, *n, expect;
};

static void record(struct loop *l, void *arg)
{
    struct ordered *o = arg;
    o->log[(*o->n)++] = o->seq;
    if (*o->n == o->expect)
        loop_stop(l);
}

static void many_timers_stay_ordered(void **state)
{
    (void)state;
    struct loop *l = loop_new();
    struct loop_timer *t[200];
    static struct ordered o[200];
    int log[200], n = 0;
    for (int i = 0; i < 200; i++) {
        o[i] = (struct ordered){.due = (i * 37) % 50, .seq = i, .log = log, .n = &n, .expect = 100};
        t[i] = loop_timer_add(l, (uint64_t)o[i].due, record, &o[i]);
    }
    /* cancel every odd one, from the back: the heap must stay a heap */
    for (int i = 199; i >= 0; i -= 2)
        loop_timer_cancel(t[i]);
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(n, 100);
    for (int k = 0; k < n; k++) {
        assert_int_equal(log[k] % 2, 0); /* no cancelled timer fired */
        if (k == 0)
            continue;
        const struct ordered *a = &o[log[k - 1]], *b = &o[log[k]];
        /* by due time; timers due at the same time in the order they were added */
        assert_true(a->due < b->due || (a->due == b->due && a->seq < b->seq));
    }
    loop_free(l);
}

static void timers_left_are_freed_without_firing(void **state)
{
    (void)state;
    struct loop *l = loop_new();
    struct trace tr = {0};
    for (int i = 0; i < 50; i++)
        loop_timer_add(l, 60000, mark, &tr);
    loop_free(l); /* ASan/LSan: nothing leaks; nothing fired */
    assert_int_equal(tr.n, 0);
}

static void stop_from_timer(struct loop *l, void *arg)
{
    (void)arg;
    loop_stop(l);
}

/* A stop requested before loop_run (a SIGTERM during start-up) is visible to start-up waits;
 * loop_run starts afresh and a stop inside it ends it. */
static void stopping_is_visible_until_run(void **state)
{
    (void)state;
    struct loop *l = loop_new();
    assert_false(loop_stopping(l));
    loop_stop(l);
    assert_true(loop_stopping(l));
    struct loop_timer *t = loop_timer_add(l, 1, stop_from_timer, NULL);
    assert_non_null(t);
    assert_int_equal(loop_run(l), 0);
    assert_true(loop_stopping(l));
    loop_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(timers_fire_in_due_order_and_cancel_works),
        cmocka_unit_test(watch_removed_during_dispatch_is_not_called),
        cmocka_unit_test(many_timers_stay_ordered),
        cmocka_unit_test(timers_left_are_freed_without_firing),
        cmocka_unit_test(stopping_is_visible_until_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
