/* sse.c — SSE decoding per the WHATWG event-stream rules (CR, LF or CRLF line ends). */
#include "sse.h"

#include <stdio.h>
#include <string.h>

void sse_init(struct sse_decoder *d, size_t max_event)
{
    memset(d, 0, sizeof *d);
    d->max_event = max_event;
    d->retry_ms = -1;
    buf_init(&d->line, max_event);
    buf_init(&d->data, max_event);
}

void sse_cleanup(struct sse_decoder *d)
{
    buf_cleanup(&d->line);
    buf_cleanup(&d->data);
}

static void dispatch(struct sse_decoder *d, sse_event_cb *cb, void *arg)
{
    memcpy(d->last_id, d->id, sizeof d->last_id); /* an event without data sets it too */
    if (d->has_data) {
        size_t len = d->data.len;
        if (len > 0 && d->data.data[len - 1] == '\n')
            len--; /* the last data line's newline is not part of the data */
        cb(d->event, d->data.data ? d->data.data : "", len, d->id, arg);
    }
    d->event[0] = '\0';
    d->has_data = false;
    d->data.len = 0;
}

/* retry: only ASCII digits count (WHATWG); anything else leaves the last value. */
static void retry_field(struct sse_decoder *d, const char *v, size_t vlen)
{
    long ms = 0;
    if (vlen == 0)
        return;
    for (size_t i = 0; i < vlen; i++) {
        if (v[i] < '0' || v[i] > '9')
            return;
        if (ms < SSE_RETRY_MAX_MS)
            ms = ms * 10 + (v[i] - '0');
    }
    d->retry_ms = ms < SSE_RETRY_MAX_MS ? ms : SSE_RETRY_MAX_MS;
}

static bool field(struct sse_decoder *d, const char *line, size_t n, sse_event_cb *cb, void *arg)
{
    if (n == 0) {
        dispatch(d, cb, arg);
        return true;
    }
    if (line[0] == ':')
        return true; /* comment */
    const char *colon = memchr(line, ':', n);
    size_t nlen = colon ? (size_t)(colon - line) : n;
    const char *v = colon ? colon + 1 : line + n;
    size_t vlen = colon ? n - nlen - 1 : 0;
    if (vlen > 0 && *v == ' ')
        v++, vlen--;
    if (nlen == 4 && memcmp(line, "data", 4) == 0) {
        if (!buf_append(&d->data, v, vlen) || !buf_append(&d->data, "\n", 1))
            return false;
        d->has_data = true;
    } else if (nlen == 5 && memcmp(line, "event", 5) == 0) {
        snprintf(d->event, sizeof d->event, "%.*s", (int)vlen, v);
    } else if (nlen == 2 && memcmp(line, "id", 2) == 0) {
        if (vlen >= sizeof d->id)
            d->id[0] = '\0'; /* unusable: see sse.h */
        else if (!memchr(v, '\0', vlen))
            snprintf(d->id, sizeof d->id, "%.*s", (int)vlen, v);
    } else if (nlen == 5 && memcmp(line, "retry", 5) == 0) {
        retry_field(d, v, vlen);
    }
    /* unknown fields: ignored */
    return true;
}

bool sse_feed(struct sse_decoder *d, const char *p, size_t n, sse_event_cb *cb, void *arg)
{
    if (d->failed)
        return false;
    size_t i = 0;
    while (i < n) {
        if (d->skip_lf) {
            d->skip_lf = false;
            if (p[i] == '\n') {
                i++;
                continue;
            }
        }
        /* The rest of the line in one piece (byte by byte was most of the decoding cost). */
        size_t run = i;
        while (run < n && p[run] != '\r' && p[run] != '\n')
            run++;
        if (run > i && !buf_append(&d->line, p + i, run - i)) {
            d->failed = true;
            return false;
        }
        if (run == n)
            break;
        d->skip_lf = p[run] == '\r';
        if (!field(d, d->line.data ? d->line.data : "", d->line.len, cb, arg)) {
            d->failed = true;
            return false;
        }
        d->line.len = 0;
        i = run + 1;
    }
    return true;
}
