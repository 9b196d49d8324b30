/* workq.c — the background work queue (see workq.h). One mutex guards the queue's two lists
 * (waiting, finished) and its flags; the worker sleeps on one condition variable, and
 * workq_free waits for the worker's exit on another. The worker writes the eventfd after each
 * batch; the loop reads it and takes the finished list whole. */
#include "workq.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "mem.h"

struct workq {
    struct workq_opts o;
    char name[16];
    int efd; /* -1 without a loop */
    struct loop_watch *w;
    pthread_t thread;
    bool started; /* loop thread */
    atomic_size_t pending;
    pthread_mutex_t mu;
    pthread_cond_t wake;        /* the worker: something to do */
    pthread_cond_t ended;       /* workq_free: the worker has exited */
    struct list todo, finished; /* guarded by mu */
    size_t ntodo;               /* guarded by mu */
    bool stop, cancel, exited;  /* guarded by mu */
};

static void lower_priority(const struct workq *q)
{
    /* Raising one's own nice value needs no privilege and changes only this thread; SCHED_IDLE
     * (also unprivileged) goes further: the thread runs only on a CPU nothing else wants. */
    if (setpriority(PRIO_PROCESS, (id_t)gettid(), 19) != 0)
        log_warn("%s: cannot lower the worker's priority: %s", q->name, strerror(errno));
    struct sched_param idle = {0};
    if (sched_setscheduler((pid_t)gettid(), SCHED_IDLE, &idle) != 0)
        log_debug("%s: SCHED_IDLE refused: %s", q->name, strerror(errno));
}

static void nap_ms(unsigned ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

static void *worker(void *arg)
{
    struct workq *q = arg;
    unsigned max = q->o.batch_max ? q->o.batch_max : 1;
    if (q->o.idle)
        lower_priority(q);
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->ntodo == 0 && !q->stop)
            pthread_cond_wait(&q->wake, &q->mu);
        if (q->stop && (q->cancel || q->ntodo == 0))
            break;
        if (q->o.gather_ms && !q->stop && q->ntodo < q->o.gather_max) {
            pthread_mutex_unlock(&q->mu);
            nap_ms(q->o.gather_ms);
            pthread_mutex_lock(&q->mu);
            if (q->stop && q->cancel)
                break;
        }
        struct list batch;
        size_t n = 0;
        list_init(&batch);
        while (n < max && q->ntodo > 0) {
            struct list *node = list_first(&q->todo);
            list_unlink(node);
            list_push_back(&batch, node);
            q->ntodo--;
            n++;
        }
        pthread_mutex_unlock(&q->mu);
        q->o.work(&batch, q->o.arg); /* may take long: only this thread waits */
        pthread_mutex_lock(&q->mu);
        if (q->efd >= 0) {
            list_splice_back(&q->finished, &batch);
            uint64_t one = 1;
            ssize_t w = write(q->efd, &one, sizeof one);
            (void)w; /* a full counter already means "look" */
        } else {
            atomic_fetch_sub(&q->pending, n); /* work freed them */
        }
    }
    q->exited = true;
    pthread_cond_broadcast(&q->ended);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Loop thread: gives each job of list back through done. The list is taken whole first, so a
 * done that submits more (into q->todo, which may be list itself) never changes what is walked. */
static void deliver(struct workq *q, struct list *list, enum workq_end end)
{
    struct list got;
    list_init(&got);
    list_splice_back(&got, list);
    LIST_FOREACH_SAFE(node, &got)
    {
        list_unlink(node);
        atomic_fetch_sub(&q->pending, 1);
        q->o.done(list_entry(node, struct workq_job, link), end, q->o.arg);
    }
}

static void on_finished(struct loop *l, int fd, uint32_t events, void *arg)
{
    struct workq *q = arg;
    uint64_t v;
    struct list got;
    (void)l, (void)events;
    while (read(fd, &v, sizeof v) > 0)
        ;
    list_init(&got);
    pthread_mutex_lock(&q->mu);
    list_splice_back(&got, &q->finished);
    pthread_mutex_unlock(&q->mu);
    deliver(q, &got, WORKQ_DONE);
}

/* What workq_new made: its eventfd, lock, conditions and q itself. */
static void release(struct workq *q)
{
    if (q->efd >= 0)
        close(q->efd);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->wake);
    pthread_cond_destroy(&q->ended);
    free(q);
}

struct workq *workq_new(const struct workq_opts *o)
{
    struct workq *q = xcalloc(1, sizeof *q);
    q->o = *o;
    snprintf(q->name, sizeof q->name, "%s", o->name ? o->name : "workq");
    q->o.name = q->name;
    q->efd = -1;
    list_init(&q->todo);
    list_init(&q->finished);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->wake, NULL);
    /* workq_free's bound is a span of time: a wall clock set back must not stretch it. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->ended, &ca);
    pthread_condattr_destroy(&ca);
    if (o->loop) {
        q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (q->efd < 0 ||
            (q->w = loop_watch_add(o->loop, q->efd, EPOLLIN, on_finished, q)) == NULL) {
            int e = errno;
            release(q);
            errno = e;
            return NULL;
        }
    }
    return q;
}

bool workq_start(struct workq *q)
{
    if (q->started)
        return true;
    if (pthread_create(&q->thread, NULL, worker, q) != 0)
        return false;
    pthread_setname_np(q->thread, q->name);
    q->started = true;
    return true;
}

bool workq_submit(struct workq *q, struct workq_job *job)
{
    if (!workq_start(q))
        return false;
    atomic_fetch_add(&q->pending, 1);
    pthread_mutex_lock(&q->mu);
    list_push_back(&q->todo, &job->link);
    q->ntodo++;
    pthread_mutex_unlock(&q->mu);
    pthread_cond_signal(&q->wake); /* after the unlock: the worker does not wake into a held lock */
    return true;
}

size_t workq_pending(const struct workq *q)
{
    return atomic_load(&q->pending);
}

/* Waits for the worker's exit, at most wait_ms (0: for ever); mu held. */
static bool wait_exit_locked(struct workq *q, unsigned wait_ms)
{
    if (wait_ms == 0) {
        while (!q->exited)
            pthread_cond_wait(&q->ended, &q->mu);
        return true;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    while (!q->exited && rc == 0)
        rc = pthread_cond_timedwait(&q->ended, &q->mu, &until);
    return q->exited;
}

bool workq_free(struct workq *q, enum workq_stop how, unsigned wait_ms)
{
    if (q == NULL)
        return true;
    loop_watch_del(q->w);
    q->w = NULL;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    q->cancel = how == WORKQ_CANCEL;
    pthread_cond_signal(&q->wake);
    if (q->started && !wait_exit_locked(q, wait_ms)) {
        pthread_mutex_unlock(&q->mu);
        pthread_detach(q->thread);
        return false; /* deliberately not freed: the worker still uses q */
    }
    pthread_mutex_unlock(&q->mu);
    if (q->started)
        pthread_join(q->thread, NULL);
    /* The worker is gone: the lists are this thread's now. A done may still submit (a chain
     * of writes): what it adds comes back too, cancelled, so no job is lost with q. */
    if (q->o.done) {
        deliver(q, &q->finished, WORKQ_DONE);
        while (!list_empty(&q->todo))
            deliver(q, &q->todo, WORKQ_CANCELLED);
    }
    release(q);
    return true;
}
