/* audit.c — JSONL audit log with a bounded queue and one writer thread. */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "mem.h"

#define QUEUE_MAX_BYTES (1024 * 1024)

struct audit {
    char *path;
    size_t rotate_bytes;
    int keep;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct buf queue; /* complete lines waiting for the writer */
    bool stop;
    bool writing;     /* the writer holds a batch outside the lock */
    atomic_uint_fast64_t dropped, written;
    int fd;
    bool regular;
    off_t size;
};

static void open_file(struct audit *a)
{
    struct stat st;
    a->fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (a->fd < 0) {
        log_warn("audit log %s: cannot open: %s; lines are dropped until it can be",
                 a->path, strerror(errno));
        return;
    }
    if (fstat(a->fd, &st) == 0) {
        a->regular = S_ISREG(st.st_mode);
        a->size = a->regular ? st.st_size : 0;
        if (a->regular && (st.st_mode & 077))
            fchmod(a->fd, 0600); /* it may predate us; it must not be readable by others */
    }
}

static void rotate(struct audit *a)
{
    char from[4096], to[4096];
    close(a->fd);
    a->fd = -1;
    for (int i = a->keep; i >= 1; i--) {
        if (i == 1)
            snprintf(from, sizeof from, "%s", a->path);
        else
            snprintf(from, sizeof from, "%s.%d", a->path, i - 1);
        snprintf(to, sizeof to, "%s.%d", a->path, i);
        rename(from, to); /* missing generations are fine */
    }
    open_file(a);
}

static size_t count_lines(const char *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += p[i] == '\n';
    return c;
}

static void write_batch(struct audit *a, const char *p, size_t n)
{
    if (a->fd < 0)
        open_file(a);
    if (a->fd < 0) {
        atomic_fetch_add(&a->dropped, count_lines(p, n));
        return;
    }
    while (n > 0) {
        ssize_t w = write(a->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            atomic_fetch_add(&a->dropped, count_lines(p, n));
            return;
        }
        atomic_fetch_add(&a->written, count_lines(p, (size_t)w));
        p += w;
        n -= (size_t)w;
        a->size += w;
    }
    if (a->regular && a->rotate_bytes && (size_t)a->size >= a->rotate_bytes)
        rotate(a);
}

static void *writer(void *arg)
{
    struct audit *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (a->queue.len == 0 && !a->stop)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->queue.len == 0 && a->stop)
            break;
        size_t n;
        char *batch = buf_take(&a->queue, &n);
        a->writing = true;
        pthread_mutex_unlock(&a->mu);
        write_batch(a, batch, n); /* may block on a slow disk: only this thread waits */
        free(batch);
        pthread_mutex_lock(&a->mu);
        a->writing = false;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

struct audit *audit_new(const char *path, size_t rotate_bytes, int keep)
{
    struct audit *a = xcalloc(1, sizeof *a);
    a->path = xstrdup(path);
    a->rotate_bytes = rotate_bytes;
    a->keep = keep > 0 ? keep : 1;
    a->fd = -1;
    buf_init(&a->queue, QUEUE_MAX_BYTES);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    if (pthread_create(&a->thread, NULL, writer, a) != 0) {
        log_error("audit log: cannot start the writer thread");
        buf_cleanup(&a->queue);
        free(a->path);
        free(a);
        return NULL;
    }
    return a;
}

static void set_opt(json_t *o, const char *k, const char *v)
{
    if (v && *v)
        json_object_set_new(o, k, json_string(v));
}

void audit_log(struct audit *a, const struct audit_entry *e)
{
    struct timespec ts;
    struct tm tm;
    char when[40];

    if (a == NULL)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t w = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + w, sizeof when - w, ".%03ldZ", ts.tv_nsec / 1000000);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I}", "ts", when, "ip", e->ip, "method",
                          e->method, "path", e->path, "status", (int)e->status, "duration_ms",
                          (json_int_t)e->duration_ms);
    if (o == NULL) { /* a path that is not UTF-8 */
        atomic_fetch_add(&a->dropped, 1);
        return;
    }
    set_opt(o, "rpc_method", e->rpc_method);
    set_opt(o, "tool", e->tool);
    set_opt(o, "error", e->error);
    char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (line == NULL) {
        atomic_fetch_add(&a->dropped, 1);
        return;
    }
    pthread_mutex_lock(&a->mu);
    bool ok = buf_appends(&a->queue, line) && buf_append(&a->queue, "\n", 1);
    if (ok)
        pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (!ok)
        atomic_fetch_add(&a->dropped, 1);
    free(line);
}

uint64_t audit_dropped(struct audit *a)
{
    return a ? atomic_load(&a->dropped) : 0;
}

uint64_t audit_written(struct audit *a)
{
    return a ? atomic_load(&a->written) : 0;
}

void audit_free(struct audit *a, unsigned wait_ms)
{
    struct timespec until;

    if (a == NULL)
        return;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_broadcast(&a->cv);
    int rc = 0;
    while ((a->queue.len > 0 || a->writing) && rc == 0)
        rc = pthread_cond_timedwait(&a->cv, &a->mu, &until);
    bool stuck = a->queue.len > 0 || a->writing;
    size_t left = count_lines(a->queue.data ? a->queue.data : "", a->queue.len);
    pthread_mutex_unlock(&a->mu);
    if (stuck) {
        /* The disk does not answer: count what is left and leave the writer behind. */
        log_warn("audit log: writer stuck; %llu lines dropped in all",
                 (unsigned long long)(audit_dropped(a) + left));
        pthread_detach(a->thread);
        return; /* deliberately not freed: the writer may still use it */
    }
    pthread_join(a->thread, NULL);
    if (a->fd >= 0) {
        fsync(a->fd);
        close(a->fd);
    }
    if (audit_dropped(a))
        log_warn("audit log: %llu lines were dropped", (unsigned long long)audit_dropped(a));
    buf_cleanup(&a->queue);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a->path);
    free(a);
}
