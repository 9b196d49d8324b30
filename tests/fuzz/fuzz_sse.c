/* fuzz_sse.c — libFuzzer target for sse.h. The stream is decoded twice: once fed in one piece and
 * once in pieces whose sizes come from the input, each piece in its own exact-size heap copy (so
 * ASan sees any read past a piece). Every event is checked in the callback, and the two runs must
 * give the same events, in the same order, and fail (or not) alike: however the bytes arrive.
 *
 * Input: byte 0 chooses the event cap (bits 0-1: 1 MiB as in bridge.c, 4096, 100, 8) and how
 * many size bytes follow (bits 2-4: 0-7). The size bytes are used in turn, over and over, as the
 * lengths of the pieces (0: an empty feed); the rest of the input is the stream. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What one run saw: every event serialized as (len, bytes) of event, data and id, in order. */
struct run {
    size_t max_event;
    char *log;
    size_t len, cap;
    size_t events;
    bool failed;
};

static void put(struct run *r, const void *p, size_t n)
{
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap < r->len + n)
            cap *= 2;
        r->log = realloc(r->log, cap);
        if (r->log == NULL)
            abort();
        r->cap = cap;
    }
    memcpy(r->log + r->len, p, n);
    r->len += n;
}

static void put_field(struct run *r, const char *p, size_t n)
{
    put(r, &n, sizeof n);
    put(r, p, n);
}

static void on_event(const char *event, const char *data, size_t len, const char *id, void *arg)
{
    struct run *r = arg;

    CHECK(!r->failed); /* nothing is decoded once the decoder failed */
    CHECK(event != NULL && data != NULL && id != NULL);
    /* The fields are the decoder's own arrays: NUL-terminated within them. */
    const char *ee = memchr(event, '\0', 64);
    CHECK(ee != NULL);
    size_t elen = (size_t)(ee - event);
    CHECK(elen < 64);
    const char *ie = memchr(id, '\0', 128);
    CHECK(ie != NULL);
    size_t ilen = (size_t)(ie - id);
    CHECK(ilen < 128);
    CHECK(len <= r->max_event);
    /* A line ends at CR or LF: none can be inside a name or an id; data lines are joined by LF,
     * so data holds no CR. */
    CHECK(memchr(event, '\r', elen) == NULL && memchr(event, '\n', elen) == NULL);
    CHECK(memchr(id, '\r', ilen) == NULL && memchr(id, '\n', ilen) == NULL);
    CHECK(memchr(data, '\r', len) == NULL); /* also reads all len bytes: ASan checks them */

    put_field(r, event, elen);
    put_field(r, data, len);
    put_field(r, id, ilen);
    r->events++;
}

/* Feeds p[0..n) to d as one exact-size heap piece; records a failure. */
static void feed(struct sse_decoder *d, struct run *r, const uint8_t *p, size_t n)
{
    char *piece = malloc(n ? n : 1);
    if (piece == NULL)
        abort();
    if (n)
        memcpy(piece, p, n);
    size_t before = r->events;
    bool ok = sse_feed(d, piece, n, on_event, r);
    free(piece);
    if (r->failed)
        CHECK(!ok && r->events == before); /* it stays failed */
    if (!ok)
        r->failed = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t caps[4] = {1024 * 1024, 4096, 100, 8};
    if (size < 1)
        return 0;
    size_t max_event = caps[data[0] & 3];
    size_t nsizes = (data[0] >> 2) & 7;
    if (size < 1 + nsizes)
        return 0;
    const uint8_t *sizes = data + 1;
    const uint8_t *text = data + 1 + nsizes;
    size_t len = size - 1 - nsizes;

    /* One piece. */
    struct run whole = {.max_event = max_event};
    struct sse_decoder d;
    sse_init(&d, max_event);
    feed(&d, &whole, text, len);
    sse_cleanup(&d);

    /* Pieces: the sizes in turn; an all-zero list feeds empty pieces, then the rest at once. */
    bool any = false;
    for (size_t i = 0; i < nsizes; i++)
        any = any || sizes[i] != 0;
    struct run split = {.max_event = max_event};
    sse_init(&d, max_event);
    size_t off = 0, k = 0;
    while (off < len) {
        size_t n = nsizes ? sizes[k++ % nsizes] : len;
        if (!any && k > nsizes)
            n = len - off;
        if (n > len - off)
            n = len - off;
        feed(&d, &split, text + off, n);
        off += n;
    }
    feed(&d, &split, text + len, 0); /* an empty feed at the end changes nothing */
    sse_cleanup(&d);

    bool same = whole.failed == split.failed && whole.events == split.events &&
                whole.len == split.len &&
                (whole.len == 0 || memcmp(whole.log, split.log, whole.len) == 0);
    if (!same)
        fprintf(stderr, "fuzz_sse: one piece gave %zu events%s, %zu pieces gave %zu events%s\n",
                whole.events, whole.failed ? " (failed)" : "", k, split.events,
                split.failed ? " (failed)" : "");
    CHECK(whole.failed == split.failed);
    CHECK(whole.events == split.events);
    CHECK(same && "the events depend on how the stream was split");
    free(whole.log);
    free(split.log);
    return 0;
}
