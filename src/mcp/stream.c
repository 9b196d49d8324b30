/* stream.c — SSE streams: a response body of events, each with an id "<stream>_<seq>". In
 * session mode the last STREAM_KEEP_EVENTS events are kept in a ring so a client whose
 * connection dropped can come back with GET + Last-Event-ID and get the rest; the stream is
 * refcounted by the session table, the attached response and its exchange. Kept apart from the
 * calls that write to it so the replay rules and the references read in one place. */
#include "stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "httpd.h"
#include "mem.h"
#include "session.h"
#include "strmap.h"

struct mcp_stream *stream_new(struct mcp_server *srv, struct mcp_session *sess)
{
    struct mcp_stream *st = xcalloc(1, sizeof *st);
    st->srv = srv;
    st->no = ++srv->next_stream;
    st->refs = 1;
    if (sess && !sess->ended) {
        char key[32];
        st->sess = session_ref(sess);
        snprintf(key, sizeof key, "%lu", st->no);
        strmap_put(sess->streams, key, st);
        st->refs++; /* the session's table */
    }
    return st;
}

void stream_unref(struct mcp_stream *st)
{
    if (st == NULL || --st->refs > 0)
        return;
    for (struct sse_event *e = st->head, *n; e; e = n) {
        n = e->next;
        free(e->text);
        free(e);
    }
    session_unref(st->sess);
    free(st);
}

static void stream_on_abort(struct hreq *r, void *arg)
{
    struct mcp_stream *st = arg;
    (void)r;
    st->req = NULL;
    if (st->sess && st->sess->get_stream == st) {
        /* Nothing waits on a standalone stream: forget it rather than keep it forever. */
        st->sess->get_stream = NULL;
        stream_forget(st);
    }
    stream_unref(st);
}

void stream_attach(struct mcp_stream *st, struct hreq *r)
{
    st->req = r;
    st->dropped = false; /* a new connection: what it is sent from here on is delivered */
    st->refs++;
    hreq_on_abort(r, stream_on_abort, st);
    hreq_add_header(r, "Cache-Control", "no-cache");
    hreq_add_header(r, "X-Accel-Buffering", "no");
    if (st->sess)
        hreq_add_header(r, "Mcp-Session-Id", st->sess->id);
    hreq_stream_start(r, 200, "text/event-stream");
}

void stream_detach(struct mcp_stream *st)
{
    struct hreq *r = st->req;
    if (r == NULL)
        return;
    st->req = NULL;
    hreq_on_abort(r, NULL, NULL);
    hreq_stream_end(r);
    if (st->ex && st->ex->req == r)
        st->ex->req = NULL; /* the exchange must not touch the ended response again */
    if (st->sess && st->sess->get_stream == st)
        st->sess->get_stream = NULL;
    stream_unref(st);
}

static void stream_emit(struct mcp_stream *st, const char *text, size_t len, unsigned long seq)
{
    if (st->sess) {
        struct sse_event *e = xcalloc(1, sizeof *e);
        e->seq = seq;
        e->text = xstrndup(text, len);
        e->len = len;
        if (st->tail)
            st->tail->next = e;
        else
            st->head = e;
        st->tail = e;
        if (++st->nevents > STREAM_KEEP_EVENTS) {
            struct sse_event *old = st->head;
            st->head = old->next;
            free(old->text);
            free(old);
            st->nevents--;
        }
    }
    if (st->req && !hreq_stream_write(st->req, text, len))
        st->dropped = true;
}

/* A priming event: an id the client can resume from, and how soon to come back. */
void stream_prime(struct mcp_stream *st)
{
    char text[96];
    unsigned long seq = ++st->seq;
    int n = snprintf(text, sizeof text, "id: %lu_%lu\nretry: %u\ndata: \n\n", st->no, seq,
                     SSE_RETRY_MS);
    stream_emit(st, text, (size_t)n, seq);
}

void stream_send(struct mcp_stream *st, json_t *msg)
{
    struct buf b;
    char *json = json_dumps(msg, JSON_COMPACT);
    unsigned long seq = ++st->seq;

    buf_init(&b, 0);
    if (st->no_ids)
        buf_printf(&b, "data: %s\n\n", json);
    else
        buf_printf(&b, "id: %lu_%lu\ndata: %s\n\n", st->no, seq, json);
    stream_emit(st, b.data, b.len, seq);
    buf_cleanup(&b);
    free(json);
}

/* Drops the session table's hold: the stream can no longer be resumed. */
void stream_forget(struct mcp_stream *st)
{
    char key[32];
    if (st->sess == NULL)
        return;
    snprintf(key, sizeof key, "%lu", st->no);
    if (strmap_del(st->sess->streams, key) == st)
        stream_unref(st);
}

/* The stream will carry nothing more. If the client is attached it gets everything now and
 * nothing is left to resume; otherwise the events wait for a GET with Last-Event-ID. */
void stream_close(struct mcp_stream *st)
{
    /* A response dropped for its backlog still has req until its abort comes from the loop:
     * what it missed is not delivered, and stays resumable. */
    bool delivered = st->req != NULL && !st->dropped;
    st->closed = true;
    stream_detach(st);
    if (delivered)
        stream_forget(st);
}

bool mcp_version_primes(const char *v)
{
    /* 2026-07-28 has no resumable streams: nothing to prime. */
    return strcmp(v, "2025-11-25") >= 0 && strcmp(v, MODERN_VERSION) < 0;
}
