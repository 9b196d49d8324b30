/* audit.c — JSONL audit log with a bounded queue and one writer, a work queue's worker
 * (workq.h) that owns the lines it is given and writes each gathered batch at once. */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "hex.h"
#include "log.h"
#include "mem.h"
#include "timefmt.h"
#include "utf8.h"
#include "workq.h"

#define QUEUE_MAX_BYTES (1024 * 1024)
/* The writer lets lines gather this long before a write: one write and one wake-up per burst
 * instead of per request, which a busy server on few cores feels. A backlog of this many lines
 * (about 64 KiB) is written at once. */
#define COALESCE_MS 2
#define COALESCE_LINES 256

struct audit {
    char *path;
    size_t rotate_bytes;
    int keep;
    struct workq *wq;
    atomic_size_t queued; /* bytes of the lines submitted and not yet written */
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
        log_warn("audit log %s: cannot open: %s; lines are dropped until it can be", a->path,
                 strerror(errno));
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

/* One queued line: the writer's once submitted. */
struct qline {
    struct workq_job q;
    size_t len;
    char text[];
};

/* Writer thread: the lines gathered, joined into one write, then freed. */
static void writer(struct list *batch, void *arg)
{
    struct audit *a = arg;
    struct buf all;
    buf_init(&all, 0);
    LIST_FOREACH_SAFE(node, batch)
    {
        struct qline *q = list_entry(node, struct qline, q.link);
        buf_append(&all, q->text, q->len);
        free(q);
    }
    write_batch(a, all.data, all.len); /* may block on a slow disk: only this thread waits */
    atomic_fetch_sub(&a->queued, all.len);
    buf_cleanup(&all);
}

struct audit *audit_new(const char *path, size_t rotate_bytes, int keep)
{
    struct audit *a = xcalloc(1, sizeof *a);
    a->path = xstrdup(path);
    a->rotate_bytes = rotate_bytes;
    a->keep = keep > 0 ? keep : 1;
    a->fd = -1;
    struct workq_opts o = {.name = "audit",
                           .work = writer,
                           .arg = a,
                           .batch_max = 1u << 16,
                           .gather_ms = COALESCE_MS,
                           .gather_max = COALESCE_LINES};
    a->wq = workq_new(&o);
    if (a->wq == NULL || !workq_start(a->wq)) {
        log_error("audit log: cannot start the writer thread");
        workq_free(a->wq, WORKQ_DRAIN, 0);
        free(a->path);
        free(a);
        return NULL;
    }
    return a;
}

/* One audit line under construction in a fixed buffer (every field is bounded). */
struct line {
    char text[2048];
    size_t len;
    bool bad; /* too long, or text that is not UTF-8: the line is dropped */
};

static void put_raw(struct line *l, const char *s, size_t n)
{
    if (n > sizeof l->text - 1 - l->len) {
        l->bad = true;
        return;
    }
    memcpy(l->text + l->len, s, n);
    l->len += n;
}

/* Appends s as a JSON string. */
static void put_string(struct line *l, const char *s)
{
    if (!utf8_valid(s, strlen(s))) {
        l->bad = true;
        return;
    }
    put_raw(l, "\"", 1);
    const char *run = s;
    for (const char *p = s;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put_raw(l, run, (size_t)(p - run));
        run = p + 1;
        if (c == '\0')
            break;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            put_raw(l, esc, 2);
        } else {
            char esc[7] = "\\u00";
            hex_encode(&c, 1, esc + 4);
            put_raw(l, esc, 6);
        }
    }
    put_raw(l, "\"", 1);
}

static void put_field(struct line *l, const char *key, const char *v, bool optional)
{
    if (optional && (v == NULL || *v == '\0'))
        return;
    put_raw(l, ",\"", 2);
    put_raw(l, key, strlen(key));
    put_raw(l, "\":", 2);
    put_string(l, v ? v : "");
}

/* Starts a line with its timestamp. */
static void put_timestamp(struct line *l)
{
    struct timespec ts;
    char when[TIMEFMT_SIZE];
    clock_gettime(CLOCK_REALTIME, &ts);
    timefmt_iso_ms(&ts, when);
    l->len = (size_t)snprintf(l->text, sizeof l->text, "{\"ts\":\"%s\"", when);
}

/* Ends a line and queues it for the writer (or counts it dropped). */
static void queue_line(struct audit *a, struct line *l)
{
    put_raw(l, "}\n", 2);
    if (l->bad) {
        atomic_fetch_add(&a->dropped, 1);
        return;
    }
    /* Only this thread adds to queued, so the check and the add cannot race each other. */
    if (atomic_load(&a->queued) + l->len > QUEUE_MAX_BYTES) {
        atomic_fetch_add(&a->dropped, 1);
        return;
    }
    struct qline *q = xmalloc(sizeof *q + l->len);
    q->q = (struct workq_job){{NULL, NULL}};
    q->len = l->len;
    memcpy(q->text, l->text, l->len);
    atomic_fetch_add(&a->queued, l->len);
    workq_submit(a->wq, &q->q); /* cannot fail: audit_new started the writer */
}

void audit_log_event(struct audit *a, const struct audit_event *e)
{
    struct line l = {.len = 0};
    if (a == NULL)
        return;
    put_timestamp(&l);
    put_field(&l, "event", e->event, false);
    put_field(&l, "principal", e->principal, true);
    put_field(&l, "upstream", e->upstream, true);
    put_field(&l, "tool", e->tool, true);
    put_field(&l, "upstream_tool", e->upstream_tool, true);
    put_field(&l, "status", e->status, true);
    put_field(&l, "decided_by", e->decided_by, true);
    if (e->duration_ms >= 0) {
        char num[48];
        int n = snprintf(num, sizeof num, ",\"duration_ms\":%.3f", e->duration_ms);
        put_raw(&l, num, (size_t)n);
    }
    queue_line(a, &l);
}

void audit_log(struct audit *a, const struct audit_entry *e)
{
    struct line l = {.len = 0};

    if (a == NULL)
        return;
    /* Formatted by hand: building and dumping a jansson object cost more than the request. */
    put_timestamp(&l);
    put_field(&l, "ip", e->ip, false);
    put_field(&l, "principal", e->principal, true);
    put_field(&l, "method", e->method, false);
    put_field(&l, "path", e->path, false);
    char nums[80];
    int n = snprintf(nums, sizeof nums, ",\"status\":%u,\"duration_ms\":%llu", e->status,
                     (unsigned long long)e->duration_ms);
    put_raw(&l, nums, (size_t)n);
    put_field(&l, "rpc_method", e->rpc_method, true);
    put_field(&l, "tool", e->tool, true);
    put_field(&l, "error", e->error, true);
    queue_line(a, &l);
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
    if (a == NULL)
        return;
    if (!workq_free(a->wq, WORKQ_DRAIN, wait_ms)) {
        /* The disk does not answer: count what is left and leave the writer behind. */
        size_t left = workq_pending(a->wq);
        log_warn("audit log: writer stuck; %llu lines dropped in all",
                 (unsigned long long)(audit_dropped(a) + left));
        return; /* deliberately not freed: the writer may still use it */
    }
    if (a->fd >= 0) {
        fsync(a->fd);
        close(a->fd);
    }
    if (audit_dropped(a))
        log_warn("audit log: %llu lines were dropped", (unsigned long long)audit_dropped(a));
    free(a->path);
    free(a);
}
