/* session.c — MCP sessions: a session is what lets a client resume streams and cancel its own
 * calls by id. It lives in the server's session table from initialize until DELETE, idle expiry
 * or shutdown, and is refcounted because exchanges, calls and streams may outlive its end by a
 * moment. Kept apart from the streams and calls it owns so that its lifetime reads in one place;
 * the notifications sent to every subscribed session are here too. */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "crypto.h"
#include "log.h"
#include "loop.h"
#include "stream.h"
#include "strmap.h"

struct mcp_session *session_ref(struct mcp_session *s)
{
    if (s)
        s->refs++;
    return s;
}

void session_unref(struct mcp_session *s)
{
    if (s == NULL || --s->refs > 0)
        return;
    json_decref(s->client_caps);
    json_decref(s->subs);
    strmap_free(s->streams);
    free(s);
}

/* Ends a session: cancels its calls, closes its streams, forgets it. */
void session_end(struct mcp_server *srv, struct mcp_session *s)
{
    size_t n;
    void **v;

    if (s->ended)
        return;
    s->ended = true;
    strmap_del(srv->sessions, s->id);
    v = strmap_values(srv->inflight, &n);
    for (size_t i = 0; i < n; i++)
        if (((struct mcp_call *)v[i])->sess == s)
            mcp_call_cancel(v[i]);
    free(v);
    v = strmap_values(s->streams, &n);
    for (size_t i = 0; i < n; i++) {
        struct mcp_stream *st = v[i];
        st->closed = true;
        stream_detach(st);
        stream_forget(st);
    }
    free(v);
    s->get_stream = NULL;
    session_unref(s);
}

static void session_sweep(struct loop *l, void *arg)
{
    struct mcp_server *srv = arg;
    size_t n;
    void **v = strmap_values(srv->sessions, &n);

    for (size_t i = 0; i < n; i++) {
        struct mcp_session *s = v[i];
        if (s->active == 0 && s->get_stream == NULL &&
            loop_now(l) - s->last_used > SESSION_IDLE_MS) {
            log_debug("session expired after idling");
            session_end(srv, s);
        }
    }
    free(v);
    srv->sweep = NULL;
    session_sweep_arm(srv);
}

void session_sweep_arm(struct mcp_server *srv)
{
    size_t n;
    void **v = strmap_values(srv->sessions, &n);
    uint64_t now = loop_now(srv->loop), due = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        uint64_t at = ((struct mcp_session *)v[i])->last_used + SESSION_IDLE_MS;
        if (at < due)
            due = at;
    }
    free(v);
    loop_timer_cancel(srv->sweep);
    srv->sweep = NULL;
    if (n == 0)
        return;
    /* A session in use past its expiry is skipped by the sweep: look again a minute later,
     * not at once. */
    uint64_t wait = due > now + SWEEP_MS ? due - now : SWEEP_MS;
    srv->sweep = loop_timer_add(srv->loop, wait, session_sweep, srv);
}

/* ---------- ids ---------- */

void mcp_set_replica_name(struct mcp_server *s, const char *name)
{
    s->session_prefix[0] = '\0';
    if (name == NULL || *name == '\0')
        return;
    size_t n = strlen(name);
    /* The proxy's map matches the prefix as written: anything else would route nowhere. */
    if (n > MCP_REPLICA_NAME_MAX || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != n) {
        log_error("replica name refused (not 1-%d of a-z, 0-9, '-'): session ids without it",
                  MCP_REPLICA_NAME_MAX);
        return;
    }
    snprintf(s->session_prefix, sizeof s->session_prefix, "%s.", name);
}

bool session_make_id(const struct mcp_server *srv, char *out, size_t outlen)
{
    size_t n = strlen(srv->session_prefix);
    if (outlen < MCP_SESSION_ID_MAX)
        return false;
    memcpy(out, srv->session_prefix, n);
    return crypto_random_hex(out + n, 32);
}

/* ---------- notifications to sessions ---------- */

void mcp_resource_updated(struct mcp_server *s, const char *uri)
{
    size_t n;
    void **v = strmap_values(s->sessions, &n);

    for (size_t i = 0; i < n; i++) {
        struct mcp_session *sess = v[i];
        if (sess->get_stream && json_object_get(sess->subs, uri)) {
            json_t *msg = jrpc_notification("notifications/resources/updated",
                                            json_pack("{s:s}", "uri", uri));
            stream_send(sess->get_stream, msg);
            json_decref(msg);
        }
    }
    free(v);
}
