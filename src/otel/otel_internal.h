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
#define OTEL_SPARE_MAX 1024 /* spans kept for reuse on each side (about 2 KiB each) */

struct otel_who {
    size_t len;
    char name[128];
    char digest[7 + 16 + 1];
};

struct otel {
    struct otel_config cfg;
    char *version;
    /* The queue: spans ended and not yet taken by the worker (mu guards todo, ntodo, first_ns,
     * stop). The worker takes a batch when batch_max wait, or delay_ms after the first came. */
    pthread_mutex_t mu;
    pthread_cond_t wake, ended;
    pthread_t thread;
    bool locks; /* mu, wake and ended are initialised */
    bool running, stop, exited;
    struct list todo;
    size_t ntodo;
    uint64_t first_ns;
    /* Spans handed to the worker and not yet exported or given up: the queue's bound. */
    atomic_uint_fast64_t queued;
    atomic_uint_fast64_t exported, dropped, failures;
    /* Set when the tracer is being freed: past it (CLOCK_MONOTONIC ns) the worker gives up
     * the spans still queued instead of posting them. 0: not closing. */
    atomic_uint_fast64_t give_up_ns;
    /* Spans exported, handed back for reuse (mu guards them): a span is allocated once and
     * goes round, not malloc'ed on the loop and freed on the worker. */
    struct list spent;
    size_t nspent;
    void *easy;                 /* the worker's curl handle, kept for keep-alive */
    struct otel_otlp_head head; /* the resource and scope, encoded once */
    struct buf body;            /* the worker's request buffer, reused */
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
/* Queues an ended, sampled span, or drops it (counted) when the queue is full. */
void otel_exporter_put(struct otel *t, struct otel_span *s);
/* Loop thread: a span no longer used, kept for reuse (or freed). */
void otel_span_recycle(struct otel *t, struct otel_span *s);
/* Drains within wait_ms and frees the worker's state; false when the worker did not end (t
 * must then be left to it). */
bool otel_exporter_stop(struct otel *t, unsigned wait_ms);
uint64_t otel_now_ns(int clock);

#endif
