/* exporter.c — OTLP/HTTP export on one worker thread: an ended span is encoded at once into
 * the export being filled (the loop's cost; the span is then reused), at most
 * OTEL_BSP_MAX_QUEUE_SIZE spans waiting counting those being sent; the worker takes an export
 * when it holds OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans or OTEL_BSP_SCHEDULE_DELAY has passed
 * since its first came (not base/workq: its gathering naps a fixed time, and a fast server
 * fills the queue meanwhile), and POSTs it with libcurl's easy interface, bounded by
 * OTEL_EXPORTER_OTLP_TIMEOUT. A failed export is counted and its spans given up, never
 * retried: a dead collector costs dropped spans, not memory. */
#include "otel_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "curlrt.h"
#include "list.h"
#include "log.h"
#include "mem.h"
#include "otlp.h"
#include "span.h"

#define PROGRESS_LAG_NS 1100000000ull /* libcurl's progress callback: about every second */
#define SHUTDOWN_MAX_MS 5000u
#define ANSWER_MAX 65536 /* of a collector's answer, read and thrown away; more ends it */
#define FAIL_LOG_NS (60ull * 1000000000u) /* a dead collector: a line a minute at most */

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    size_t *seen = arg;
    (void)p;
    *seen += size * n;
    return *seen > ANSWER_MAX ? 0 : size * n;
}

/* The first failure, then one line a minute with the count in between; never the URL (its
 * query) or the headers (an API key). */
static void log_failure(struct otel *t, CURLcode rc, long code)
{
    uint64_t now = otel_now_ns(CLOCK_MONOTONIC);
    if (t->fail_logged_ns && now - t->fail_logged_ns < FAIL_LOG_NS) {
        t->fails_unlogged++;
        return;
    }
    char why[160];
    if (rc != CURLE_OK)
        snprintf(why, sizeof why, "%s", curl_easy_strerror(rc));
    else
        snprintf(why, sizeof why, "the collector answered HTTP %ld", code);
    log_warn("trace export failed: %s (%lu more failures since the last line; "
             "hermes_mcp_otel_export_failures_total counts them all)",
             why, t->fails_unlogged);
    t->fail_logged_ns = now;
    t->fails_unlogged = 0;
}

/* libcurl's progress callback (about once a second, and as data moves): a stop's deadline
 * ends a POST that began before the stop, so the worker leaves libcurl in time. */
static int abort_when_late(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                           curl_off_t ulnow)
{
    struct otel *t = arg;
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    uint64_t give_up = atomic_load(&t->give_up_ns);
    return give_up && otel_now_ns(CLOCK_MONOTONIC) > give_up;
}

/* POSTs body; true for a 2xx answer. */
static bool post(struct otel *t, const char *body, size_t len)
{
    CURL *h = t->easy;
    size_t seen = 0;
    long code = 0;
    if (h == NULL) {
        h = t->easy = curl_easy_init();
        if (h == NULL)
            return false;
    }
    curl_easy_setopt(h, CURLOPT_URL, t->cfg.url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    /* While stopping, no later than the stop's own deadline: the worker must have left
     * libcurl before the process goes on to exit. */
    uint64_t timeout_ms = t->cfg.timeout_ms, give_up = atomic_load(&t->give_up_ns);
    if (give_up) {
        uint64_t now = otel_now_ns(CLOCK_MONOTONIC);
        uint64_t left = give_up > now ? (give_up - now) / 1000000u : 1;
        timeout_ms = left < timeout_ms ? (left ? left : 1) : timeout_ms;
    }
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)t->cfg.timeout_ms);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->hdrs);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &seen);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, abort_when_late);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK || code < 200 || code > 299) {
        log_failure(t, rc, code);
        return false;
    }
    return true;
}

/* Worker thread: one export, sent (unless a stop's deadline passed); counted. */
static void export_chunk(struct otel *t, struct otel_chunk *c)
{
    bool ok = false;
    uint64_t give_up = atomic_load(&t->give_up_ns); /* each export: a stop may have begun */
    if (!(give_up && otel_now_ns(CLOCK_MONOTONIC) > give_up)) {
        size_t len;
        const char *body =
            otel_otlp_end(&c->bytes, &t->head, t->cfg.protocol == OTEL_PROTO_JSON, &len);
        ok = post(t, body, len);
        if (!ok)
            atomic_fetch_add(&t->failures, 1);
    }
    atomic_fetch_add(ok ? &t->exported : &t->dropped, c->n);
    atomic_fetch_sub(&t->queued, c->n);
}

static void chunk_free(struct otel_chunk *c)
{
    buf_cleanup(&c->bytes);
    free(c);
}

static void deadline_ts(uint64_t ns, struct timespec *ts)
{
    ts->tv_sec = (time_t)(ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
}

/* The worker: waits for an export to fill up (chunk_max spans) or for the delay since its first
 * span (OpenTelemetry's batch span processor), then sends what is ready. Stopping, it sends
 * what is left without waiting. Exports sent are kept for reuse (two at most, of a sane size). */
static void *worker(void *arg)
{
    struct otel *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (list_empty(&t->full) && t->cur == NULL && !t->stop)
            pthread_cond_wait(&t->wake, &t->mu);
        if (list_empty(&t->full) && t->cur) {
            uint64_t due = t->cur->first_ns + (uint64_t)t->cfg.delay_ms * 1000000u;
            while (list_empty(&t->full) && t->cur && !t->stop &&
                   otel_now_ns(CLOCK_MONOTONIC) < due) {
                struct timespec ts;
                deadline_ts(due, &ts);
                pthread_cond_timedwait(&t->wake, &t->mu, &ts);
            }
            if (list_empty(&t->full) && t->cur) { /* its delay is up, or a stop */
                list_push_back(&t->full, &t->cur->link);
                t->cur = NULL;
            }
        }
        if (list_empty(&t->full)) {
            if (t->stop)
                break; /* stopping, nothing left */
            continue;
        }
        struct list ready;
        list_init(&ready);
        list_splice_back(&ready, &t->full);
        pthread_mutex_unlock(&t->mu);
        LIST_FOREACH_SAFE(n, &ready)
        {
            export_chunk(t, list_entry(n, struct otel_chunk, link));
        }
        pthread_mutex_lock(&t->mu);
        LIST_FOREACH_SAFE(n, &ready)
        {
            struct otel_chunk *c = list_entry(n, struct otel_chunk, link);
            list_unlink(n);
            if (t->nchunks < 2 && c->bytes.cap <= (1u << 22)) {
                list_push_back(&t->chunks, n);
                t->nchunks++;
            } else {
                chunk_free(c);
            }
        }
    }
    t->exited = true;
    pthread_cond_broadcast(&t->ended);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

bool otel_exporter_start(struct otel *t, char *err, size_t errlen)
{
    /* libcurl is loaded here, on the loop thread at start, so the worker only uses it. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) { /* thread-safe, counted */
        snprintf(err, errlen, "tracing needs libcurl: %s",
                 curlrt_error() ? curlrt_error() : "it failed to initialise");
        return false;
    }
    t->hdrs = curl_slist_append(NULL, t->cfg.protocol == OTEL_PROTO_JSON
                                          ? "Content-Type: application/json"
                                          : "Content-Type: application/x-protobuf");
    t->hdrs = curl_slist_append(t->hdrs, "Expect:");
    for (const char *p = t->cfg.headers; p && *p;) {
        size_t n = strcspn(p, "\n");
        char line[8200];
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        t->hdrs = curl_slist_append(t->hdrs, line);
        explicit_bzero(line, sizeof line);
        p += n + (p[n] == '\n');
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->wake, &ca);
    pthread_cond_init(&t->ended, &ca);
    pthread_condattr_destroy(&ca);
    t->locks = true;
    list_init(&t->full);
    list_init(&t->chunks);
    t->chunk_max = t->cfg.batch_max < OTEL_CHUNK_MAX ? t->cfg.batch_max : OTEL_CHUNK_MAX;
    t->running = true;
    int rc = pthread_create(&t->thread, NULL, worker, t);
    if (rc != 0) {
        t->running = false;
        snprintf(err, errlen, "tracing: cannot start the export thread: %s", strerror(rc));
        return false;
    }
    pthread_setname_np(t->thread, "otel-export");
    return true;
}

void otel_exporter_put(struct otel *t, struct otel_span *s)
{
    if (atomic_load(&t->queued) >= t->cfg.queue_max) {
        atomic_fetch_add(&t->dropped, 1);
        return;
    }
    atomic_fetch_add(&t->queued, 1);
    bool json = t->cfg.protocol == OTEL_PROTO_JSON, wake = false;
    pthread_mutex_lock(&t->mu);
    struct otel_chunk *c = t->cur;
    if (c == NULL) {
        if (t->nchunks) {
            c = list_entry(t->chunks.next, struct otel_chunk, link);
            list_unlink(&c->link);
            t->nchunks--;
        } else {
            c = xcalloc(1, sizeof *c);
            buf_init(&c->bytes, 0);
        }
        otel_otlp_begin(&c->bytes, &t->head, json);
        c->n = 0;
        c->first_ns = otel_now_ns(CLOCK_MONOTONIC);
        t->cur = c;
        wake = true; /* its delay starts */
    }
    /* Encoded here, while the span's bytes are in this core's cache; the worker reads the
     * export's bytes once, and the span is reused at once. */
    otel_otlp_add(&c->bytes, &t->head, s, json);
    if (++c->n >= t->chunk_max) {
        list_push_back(&t->full, &c->link);
        t->cur = NULL;
        wake = true;
    }
    if (wake)
        pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->mu);
}

bool otel_exporter_stop(struct otel *t, unsigned wait_ms)
{
    if (wait_ms > SHUTDOWN_MAX_MS)
        wait_ms = SHUTDOWN_MAX_MS;
    if (t->running) {
        uint64_t now = otel_now_ns(CLOCK_MONOTONIC), due = now + (uint64_t)wait_ms * 1000000u;
        struct timespec ts;
        /* What is still queued at the bound is given up rather than sent. A POST under way
         * hears of it only from libcurl's progress callback, which an idle transfer calls
         * about once a second: it is told PROGRESS_LAG_NS early, and the wait lasts at least
         * that long, so the worker leaves libcurl within the wait. */
        uint64_t give_up = due > now + PROGRESS_LAG_NS ? due - PROGRESS_LAG_NS : now;
        uint64_t wait_until = due > now + PROGRESS_LAG_NS ? due : now + PROGRESS_LAG_NS;
        atomic_store(&t->give_up_ns, give_up ? give_up : 1);
        deadline_ts(wait_until + 100000000u, &ts);
        pthread_mutex_lock(&t->mu);
        t->stop = true;
        pthread_cond_signal(&t->wake);
        while (!t->exited)
            if (pthread_cond_timedwait(&t->ended, &t->mu, &ts) != 0)
                break;
        bool exited = t->exited;
        pthread_mutex_unlock(&t->mu);
        if (!exited) {
            log_warn("the trace exporter did not stop in time; spans still queued are lost");
            pthread_detach(t->thread);
            return false; /* the worker still uses t: left to it (the process is ending) */
        }
        pthread_join(t->thread, NULL);
        t->running = false;
    }
    if (t->cur)
        chunk_free(t->cur);
    t->cur = NULL;
    struct list *lists[] = {&t->full, &t->chunks};
    for (size_t i = 0; i < 2 && t->locks; i++) /* the lists are made with the locks */
        LIST_FOREACH_SAFE(n, lists[i])
        {
            list_unlink(n);
            chunk_free(list_entry(n, struct otel_chunk, link));
        }
    if (t->locks) { /* not when the start failed before them */
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->wake);
        pthread_cond_destroy(&t->ended);
        t->locks = false;
    }
    if (t->easy)
        curl_easy_cleanup(t->easy);
    for (struct curl_slist *i = t->hdrs; i; i = i->next) /* an API key may be among them */
        explicit_bzero(i->data, strlen(i->data));
    curl_slist_free_all(t->hdrs);
    t->easy = NULL;
    t->hdrs = NULL;
    return true;
}
