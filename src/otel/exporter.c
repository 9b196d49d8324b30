/* exporter.c — OTLP/HTTP export on one worker thread (a workq without a loop): ended spans
 * wait in its queue, at most OTEL_BSP_MAX_QUEUE_SIZE of them counting the batch being sent;
 * the worker gathers a batch for up to OTEL_BSP_SCHEDULE_DELAY, encodes it and POSTs it with
 * libcurl's easy interface, bounded by OTEL_EXPORTER_OTLP_TIMEOUT. A failed export is counted
 * and its spans given up, never retried: a dead collector costs dropped spans, not memory. */
#include "otel_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "curlrt.h"
#include "list.h"
#include "log.h"
#include "otlp.h"
#include "span.h"
#include "workq.h"

#define SHUTDOWN_MAX_MS 5000u
#define ANSWER_MAX 4096 /* of a collector's answer, read and thrown away */

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    size_t *seen = arg;
    (void)p;
    *seen += size * n;
    return *seen > ANSWER_MAX * 16 ? 0 : size * n;
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
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)t->cfg.timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)t->cfg.timeout_ms);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->hdrs);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &seen);
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK || code < 200 || code > 299) {
        /* Once per failure, without the URL's query or the headers (an API key). */
        if (rc != CURLE_OK)
            log_warn("trace export failed: %s", curl_easy_strerror(rc));
        else
            log_warn("trace export failed: the collector answered HTTP %ld", code);
        return false;
    }
    return true;
}

/* Worker thread: one batch, encoded and sent; every span freed. */
static void work(struct list *batch, void *arg)
{
    struct otel *t = arg;
    struct otel_span *spans[256];
    struct list *node, *next;
    size_t n = 0, total = 0;
    uint64_t give_up = atomic_load(&t->give_up_ns);
    bool late = give_up && otel_now_ns(CLOCK_MONOTONIC) > give_up;
    struct otel_resource res = {
        .service = t->cfg.service, .version = t->version, .attrs = t->cfg.resource};

    for (node = batch->next; node != batch; node = next) {
        next = node->next;
        spans[n++] = list_entry(node, struct otel_span, job.link);
        total++;
        if (n < sizeof spans / sizeof *spans && next != batch)
            continue;
        bool ok = false;
        if (!late) {
            struct buf body;
            buf_init(&body, 0);
            if (t->cfg.protocol == OTEL_PROTO_JSON)
                otel_otlp_json(&body, &res, spans, n);
            else
                otel_otlp_protobuf(&body, &res, spans, n);
            ok = post(t, body.data ? body.data : "", body.len);
            buf_cleanup(&body);
            if (!ok)
                atomic_fetch_add(&t->failures, 1);
        }
        atomic_fetch_add(ok ? &t->exported : &t->dropped, n);
        for (size_t i = 0; i < n; i++)
            free(spans[i]);
        n = 0;
    }
    atomic_fetch_sub(&t->queued, total);
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
    struct workq_opts o = {.name = "otel-export",
                           .work = work,
                           .arg = t,
                           .batch_max = t->cfg.batch_max,
                           .gather_ms = t->cfg.delay_ms,
                           .gather_max = t->cfg.batch_max};
    t->q = workq_new(&o);
    if (t->q == NULL || !workq_start(t->q)) {
        snprintf(err, errlen, "tracing: cannot start the export thread");
        return false;
    }
    return true;
}

void otel_exporter_put(struct otel *t, struct otel_span *s)
{
    if (atomic_load(&t->queued) >= t->cfg.queue_max) {
        atomic_fetch_add(&t->dropped, 1);
        free(s);
        return;
    }
    atomic_fetch_add(&t->queued, 1);
    if (!workq_submit(t->q, &s->job)) {
        atomic_fetch_sub(&t->queued, 1);
        atomic_fetch_add(&t->dropped, 1);
        free(s);
    }
}

bool otel_exporter_stop(struct otel *t, unsigned wait_ms)
{
    if (wait_ms > SHUTDOWN_MAX_MS)
        wait_ms = SHUTDOWN_MAX_MS;
    /* What is still queued at the bound is given up rather than sent. */
    atomic_store(&t->give_up_ns, otel_now_ns(CLOCK_MONOTONIC) + (uint64_t)wait_ms * 1000000u);
    if (t->q && !workq_free(t->q, WORKQ_DRAIN, wait_ms + 100)) {
        log_warn("the trace exporter did not stop in time; spans still queued are lost");
        return false; /* the worker still uses t: left behind with it (the process ends) */
    }
    t->q = NULL;
    if (t->easy)
        curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->hdrs);
    t->easy = NULL;
    t->hdrs = NULL;
    return true;
}
