/* verifier.c — the consent passphrase's scrypt on a worker thread (see verifier.h for why).
 *
 * The hand-over follows retention.c's reaper: the loop appends a job under a mutex and signals
 * the worker; the worker takes the oldest, checks it without the lock, moves it to the done list
 * and writes the eventfd; the loop, woken by the eventfd, takes the done list and calls each
 * job's callback. Jobs are malloc'd by the loop and freed by the loop, after the callback. */
#include "verifier.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "mem.h"
#include "passphrase.h"

struct job {
    struct job *next;
    char line[PASSPHRASE_LINE_MAX];
    char pass[PASSPHRASE_MAX];
    size_t len;
    bool ok;
    verifier_done_cb *done;
    void *ctx;
};

struct verifier {
    struct loop *loop;
    unsigned delay_ms;
    int efd;
    struct loop_watch *w;
    pthread_t worker;
    bool started;
    size_t pending; /* loop thread: submitted, callback not yet run */
    /* Guarded by mu: jobs waiting (oldest first), jobs checked, and the stop flag. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *waiting, *checked;
    bool stop;
};

static void job_free(struct job *j)
{
    explicit_bzero(j, sizeof *j);
    free(j);
}

static void nap(unsigned ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

static void *worker(void *arg)
{
    struct verifier *v = arg;
    pthread_mutex_lock(&v->mu);
    for (;;) {
        while (v->waiting == NULL && !v->stop)
            pthread_cond_wait(&v->cv, &v->mu);
        if (v->stop)
            break;
        struct job *j = v->waiting;
        v->waiting = j->next;
        pthread_mutex_unlock(&v->mu);
        j->ok = passphrase_verify(j->line, j->pass, j->len);
        explicit_bzero(j->pass, sizeof j->pass);
        if (v->delay_ms)
            nap(v->delay_ms);
        pthread_mutex_lock(&v->mu);
        j->next = v->checked; /* order among finished checks does not matter */
        v->checked = j;
        uint64_t one = 1;
        ssize_t n = write(v->efd, &one, sizeof one);
        (void)n; /* a full counter already means "look" */
    }
    pthread_mutex_unlock(&v->mu);
    return NULL;
}

static void on_checked(struct loop *l, int fd, uint32_t events, void *arg)
{
    struct verifier *v = arg;
    uint64_t n;
    (void)l, (void)events;
    while (read(fd, &n, sizeof n) > 0)
        ;
    pthread_mutex_lock(&v->mu);
    struct job *j = v->checked;
    v->checked = NULL;
    pthread_mutex_unlock(&v->mu);
    while (j) {
        struct job *next = j->next;
        v->pending--;
        j->done(j->ctx, j->ok ? VERIFY_OK : VERIFY_WRONG);
        job_free(j);
        j = next;
    }
}

struct verifier *verifier_new(struct loop *l, unsigned delay_ms)
{
    struct verifier *v = xcalloc(1, sizeof *v);
    v->loop = l;
    v->delay_ms = delay_ms;
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->cv, NULL);
    v->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (v->efd < 0 || (v->w = loop_watch_add(l, v->efd, EPOLLIN, on_checked, v)) == NULL) {
        int e = errno;
        if (v->efd >= 0)
            close(v->efd);
        pthread_mutex_destroy(&v->mu);
        pthread_cond_destroy(&v->cv);
        free(v);
        errno = e;
        return NULL;
    }
    return v;
}

bool verifier_submit(struct verifier *v, const char *line, const char *pass, size_t len,
                     verifier_done_cb *done, void *ctx)
{
    if (v->pending >= VERIFIER_QUEUE_MAX || len > PASSPHRASE_MAX)
        return false;
    if (!v->started) {
        if (pthread_create(&v->worker, NULL, worker, v) != 0) {
            log_warn("oauth: cannot start the passphrase checking thread");
            return false;
        }
        v->started = true;
    }
    struct job *j = xcalloc(1, sizeof *j);
    snprintf(j->line, sizeof j->line, "%s", line);
    memcpy(j->pass, pass, len);
    j->len = len;
    j->done = done;
    j->ctx = ctx;
    pthread_mutex_lock(&v->mu);
    struct job **tail = &v->waiting;
    while (*tail)
        tail = &(*tail)->next;
    *tail = j;
    pthread_mutex_unlock(&v->mu);
    pthread_cond_signal(&v->cv);
    v->pending++;
    return true;
}

size_t verifier_pending(const struct verifier *v)
{
    return v->pending;
}

static void cancel_all(struct job *j)
{
    while (j) {
        struct job *next = j->next;
        j->done(j->ctx, VERIFY_CANCELLED);
        job_free(j);
        j = next;
    }
}

void verifier_free(struct verifier *v)
{
    if (v == NULL)
        return;
    loop_watch_del(v->w);
    pthread_mutex_lock(&v->mu);
    v->stop = true;
    pthread_mutex_unlock(&v->mu);
    pthread_cond_signal(&v->cv);
    if (v->started)
        pthread_join(v->worker, NULL); /* at most the check under way */
    cancel_all(v->waiting);
    cancel_all(v->checked);
    close(v->efd);
    pthread_mutex_destroy(&v->mu);
    pthread_cond_destroy(&v->cv);
    free(v);
}
