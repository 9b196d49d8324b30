/* otel_internal.h — the tracer, shared by otel.c (spans, on the loop thread) and exporter.c
 * (the worker). */
#ifndef HM_OTEL_INTERNAL_H
#define HM_OTEL_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "buf.h"
#include "list.h"
#include "otel.h"
#include "otlp.h"

#define OTEL_ID_POOL 4096   /* random bytes drawn at once for span and trace ids */
#define OTEL_WHO_CACHE 4    /* principals whose digest is kept */
#ifdef __SANITIZE_ADDRESS__ /* each span its own allocation: ASan sees a late use */
#define OTEL_SPARE_MAX 0
#else
#define OTEL_SPARE_MAX 256 /* spans kept for reuse (about 2 KiB each) */
#endif
#define OTEL_CHUNK_MAX 1024 /* spans in one export at most */

/* An export being built: spans are encoded into it as they end (on the loop thread, where their
 * bytes still are), and it is sent whole by the worker. */
struct otel_chunk {
    struct list link;
    size_t n;          /* spans in it */
    uint64_t first_ns; /* CLOCK_MONOTONIC: when its first span came */
    struct buf bytes;  /* otel_otlp_begin .. otel_otlp_add */
};

struct otel_who {
    size_t len;
    char name[128];
    char digest[7 + 16 + 1];
};

struct otel {
    struct otel_config cfg;
    char *version;
    /* The queue (mu guards full, cur, chunks, nchunks and stop): cur is the export spans are
     * encoded into, full those ready; the worker takes cur when it has batch_max spans (or
     * OTEL_CHUNK_MAX), or delay_ms after its first came. chunks: exports sent, for reuse. */
    pthread_mutex_t mu;
    pthread_cond_t wake, ended;
    pthread_t thread;
    bool locks; /* mu, wake and ended are initialised */
    bool running, stop, exited;
    struct list full, chunks;
    struct otel_chunk *cur;
    size_t nchunks, chunk_max;
    /* Spans handed to the worker and not yet exported or given up: the queue's bound. */
    atomic_uint_fast64_t queued;
    atomic_uint_fast64_t exported, dropped, failures;
    /* Set when the tracer is being freed: past it (CLOCK_MONOTONIC ns) the worker gives up
     * the spans still queued instead of posting them. 0: not closing. */
    atomic_uint_fast64_t give_up_ns;
    void *easy;                 /* the worker's curl handle, kept for keep-alive */
    struct otel_otlp_head head; /* the resource and scope, encoded once */
    struct curl_slist *hdrs;    /* the request headers, built by otel_new */
    uint64_t fail_logged_ns;    /* the worker's: when a failed export was last logged */
    unsigned long fails_unlogged;
    /* Loop thread: spare spans, and getrandom's bytes, drawn OTEL_ID_POOL at a time rather
     * than per span. */
    struct list spare;
    size_t nspare;
    bool random_failed;                   /* logged once */
    uint64_t wall_offset_ns, wall_due_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC, and when to read
                                             it again */
    struct otel_who who[OTEL_WHO_CACHE];
    unsigned who_next;
    size_t pool_used;
    uint8_t pool[OTEL_ID_POOL];
};

/* exporter.c */
bool otel_exporter_start(struct otel *t, char *err, size_t errlen);
/* Queues an ended, sampled span (encoded: s is the caller's again), or drops it (counted) when
 * the queue is full. */
void otel_exporter_put(struct otel *t, struct otel_span *s);
/* Loop thread: a span no longer used, kept for reuse (or freed). */
void otel_span_recycle(struct otel *t, struct otel_span *s);
/* Drains within wait_ms and frees the worker's state; false when the worker did not end (t
 * must then be left to it). */
bool otel_exporter_stop(struct otel *t, unsigned wait_ms);
uint64_t otel_now_ns(int clock);

#endif
