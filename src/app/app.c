/* app.c — wiring: loop + httpd + MCP engine, routes, auth, signals. */
#include "app.h"

#include <arpa/inet.h>

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "approvals.h"
#include "reaper.h"
#include "audit.h"
#include "authserver.h"
#include "buf.h"
#include "config.h"
#include "crypto.h"
#include "ctlsock.h"
#include "hdr.h"
#include "httpd.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "passphrase.h"
#include "metrics.h"
#include "principal.h"
#include "provider.h"
#include "tokenstore.h"
#include "ratelimit.h"
#include "sdlisten.h"
#include "sdnotify.h"
#include "version.h"
#include "whoami.h"

#define MAX_BODY (256 * 1024)
#define IDLE_TIMEOUT_S 30
#define RATE_TABLE_MAX 10000
#define AUDIT_ROTATE_BYTES (5u * 1024u * 1024u)
#define AUDIT_KEEP 3
/* JSON-RPC error for a call cut off on its SSE stream at the end of the drain (the
 * implementation-defined server error range). */
#define RPC_SHUTTING_DOWN (-32000)

struct app {
    const struct app_opts *o;
    struct config *cfg;
    struct loop *loop;
    struct httpd *httpd;
    struct mcp_server *mcp;
    int sigfd;
    struct loop_watch *sigw;
    struct ratelimit *rl;      /* per client IP: requests without a valid credential */
    struct ratelimit *rl_auth; /* per credential: authenticated requests */
    struct audit *audit;
    struct approvals *approvals; /* the operator's queue, answered through ctl */
    struct ctlsock *ctl;         /* NULL when the socket could not be made: requests time out */
    struct reaper *reaper;       /* keeps detached descendants below us (see reaper.h) */
    struct principals *principals; /* who the bearer tokens are (MCP_AUTH_TOKEN, TOKENS_FILE) */
    struct tokenstore *oauth_tokens; /* with OAUTH_ISSUER_URL: the tokens issued, by hash */
    char *oauth_resource;            /* <issuer>/mcp: the audience an access token must name */
    struct authserver *oauth_server; /* with OAUTH_ISSUER_URL: /authorize, /token, /register */
    uint64_t rate_limited, auth_failures;
    struct metric *http_requests, *rpc_requests, *rpc_duration, *principal_requests;
    time_t started;
    struct loop_timer *watchdog;
    unsigned watchdog_ms;
    bool draining; /* SIGTERM seen: calls in flight are finishing */
    bool hurry;    /* a second SIGTERM/SIGINT: end the drain now */
    size_t nsetup; /* providers whose setup ran, torn down in reverse */
};

#define EACH_PROVIDER(a, p)                                                                    \
    for (const struct provider *p = (a)->o->providers; p < (a)->o->providers + (a)->o->nproviders; \
         p++)

static bool in_list(const char *list, const char *item, size_t n)
{
    for (const char *p = list; p && *p;) {
        p += strspn(p, ", ");
        size_t k = strcspn(p, ", ");
        if (k && k == n && strncmp(p, item, n) == 0)
            return true;
        p += k;
    }
    return false;
}

/* The client's address: the peer, unless the peer is a trusted proxy; then the right-most
 * X-Forwarded-For entry that is not itself a trusted proxy. Of several X-Forwarded-For lines
 * (the client's own, then one a proxy such as HAProxy adds instead of appending) only the last
 * is the proxy's: a client's own line must not pick its rate-limit bucket or its address in the
 * audit log. */
static void client_ip(struct app *a, struct hreq *r, char *out, size_t outlen)
{
    const char *peer = hreq_peer(r);
    const char *xff = hreq_header_last(r, "X-Forwarded-For");

    snprintf(out, outlen, "%s", peer);
    if (xff == NULL || a->cfg->trusted_proxies == NULL ||
        !in_list(a->cfg->trusted_proxies, peer, strlen(peer)))
        return;
    const char *end = xff + strlen(xff);
    while (end > xff) {
        const char *start = end;
        while (start > xff && start[-1] != ',')
            start--;
        const char *s = start, *e = end;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e > s && !in_list(a->cfg->trusted_proxies, s, (size_t)(e - s))) {
            /* Only an address is believed: anything else (it goes into the log and the
             * audit line) leaves the proxy's own address. */
            char cand[INET6_ADDRSTRLEN];
            unsigned char bin[sizeof(struct in6_addr)];
            if ((size_t)(e - s) < sizeof cand) {
                snprintf(cand, sizeof cand, "%.*s", (int)(e - s), s);
                if ((inet_pton(AF_INET, cand, bin) == 1 || inet_pton(AF_INET6, cand, bin) == 1) &&
                    strlen(cand) < outlen)
                    snprintf(out, outlen, "%s", cand);
            }
            return;
        }
        end = start > xff ? start - 1 : xff;
    }
}

static void reply_simple_json(struct hreq *r, unsigned status, const char *json)
{
    hreq_reply(r, status, "application/json", json, strlen(json));
}

/* What the app knows of a request, kept in its user slot (httpd frees it when the request is
 * done): the principal its token named, and what the engine told of it (mcp_set_audit), for
 * on_done. The principal's set is held, so a reload in between cannot free it. */
struct rpc_note {
    struct principals *set;       /* held while who is set (a TOKENS_FILE principal) */
    struct principal *grant;      /* or this, owned: an OAuth access token's principal */
    const struct principal *who;  /* NULL: no credential (or authentication is off) */
    char caller[PRINCIPAL_NAME_MAX + 24]; /* an OAuth grant's: its principal and authorization */
    char *client_id;              /* an OAuth grant's client (whoami), or NULL */
    char rpc_method[40], tool[72], error[40];
};

static void note_free(void *p)
{
    struct rpc_note *n = p;
    principals_unref(n->set);
    principal_free(n->grant);
    free(n->client_id);
    free(n);
}

static struct rpc_note *note_of(struct hreq *r)
{
    struct rpc_note *n = hreq_user(r);
    if (n == NULL) {
        n = xcalloc(1, sizeof *n);
        hreq_set_user(r, n, note_free);
    }
    return n;
}

enum auth_result { AUTH_OK, AUTH_NO_TOKEN, AUTH_BAD_TOKEN, AUTH_EXPIRED };

/* The scopes a client should ask for when it authorizes (the 401's scope=): reading and
 * delegating; hermes_reset's hermes:admin is asked for by step-up (403) when it is needed. */
#define OAUTH_DEFAULT_SCOPES "hermes:read hermes:task"

/* A WWW-Authenticate Bearer challenge (RFC 6750): error, scope and description when given; with
 * OAUTH_ISSUER_URL set also resource_metadata, where clients find our protected resource
 * metadata (RFC 9728; the MCP authorization spec's discovery). */
static void add_challenge(struct app *a, struct hreq *r, const char *error, const char *scope,
                          const char *description)
{
    struct buf v;
    buf_init(&v, 0);
    buf_printf(&v, "Bearer realm=\"hermes-mcp\"");
    if (error)
        buf_printf(&v, ", error=\"%s\"", error);
    if (scope)
        buf_printf(&v, ", scope=\"%s\"", scope);
    if (a->cfg->oauth_issuer)
        buf_printf(&v, ", resource_metadata=\"%s/.well-known/oauth-protected-resource/mcp\"",
                   a->cfg->oauth_issuer);
    if (description)
        buf_printf(&v, ", error_description=\"%s\"", description);
    hreq_add_header(r, "WWW-Authenticate", v.data);
    buf_cleanup(&v);
}

/* An access token from the OAuth token store: known, live, and issued for this resource (RFC
 * 8707 audience: a token meant for another server is refused, not passed on). Its principal is
 * "oauth:<client id>" (shortened with a digest when too long) with the scopes granted. */
static enum auth_result oauth_authenticate(struct app *a, struct hreq *r, const char *token)
{
    if (a->oauth_tokens == NULL)
        return AUTH_BAD_TOKEN;
    const struct token_grant *g = tokenstore_find(a->oauth_tokens, token, time(NULL));
    if (g == NULL || g->kind != TOKEN_ACCESS || strcmp(g->resource, a->oauth_resource) != 0)
        return AUTH_BAD_TOKEN;
    char name[PRINCIPAL_NAME_MAX + 1];
    principal_oauth_name(g->client_id, name);
    struct rpc_note *n = note_of(r);
    n->grant = principal_for_grant(name, g->scope, token);
    n->grant->expires = g->expires; /* told by whoami; the store already refused expired ones */
    n->who = n->grant;
    free(n->client_id);
    n->client_id = xstrdup(g->client_id);
    /* Tasks and sealed state belong to one authorization (its refreshed tokens included), not
     * to every authorization of the same client: the family names it, by a digest. */
    if (g->family) {
        static const char hex[] = "0123456789abcdef";
        static const char label[] = "hermes-mcp family v1";
        unsigned char d[32];
        crypto_hmac_sha256(label, sizeof label - 1, g->family, strlen(g->family), d);
        int len = snprintf(n->caller, sizeof n->caller, "%s/", name);
        for (int i = 0; i < 16; i++)
            n->caller[len + i] = hex[(d[i / 2] >> (i % 2 ? 0 : 4)) & 15];
        n->caller[len + 16] = '\0';
    }
    return AUTH_OK;
}

/* Finds the principal r's bearer token names and records it in r's note. AUTH_OK also when
 * authentication is off (the conformance server): then there is no principal. */
static enum auth_result authenticate(struct app *a, struct hreq *r)
{
    if (!a->cfg->auth)
        return AUTH_OK;
    const char *h = hdr_bearer(hreq_header(r, "Authorization"));
    if (h == NULL)
        return AUTH_NO_TOKEN;
    const struct principal *p = principals_find(a->principals, h);
    if (p == NULL)
        return oauth_authenticate(a, r, h);
    if (principal_expired(p, time(NULL)))
        return AUTH_EXPIRED;
    struct rpc_note *n = note_of(r);
    n->set = principals_ref(a->principals);
    n->who = p;
    return AUTH_OK;
}

/* Who sent r (mcp_set_caller): what tasks and sealed state are bound to. A TOKENS_FILE
 * principal's name; for an OAuth access token, its client and authorization (family), so the
 * client finds its tasks again with its next refreshed token, and another authorization of the
 * same client does not. */
static const char *caller_name(struct hreq *r, void *arg)
{
    const struct rpc_note *n = hreq_user(r);
    (void)arg;
    if (n && n->caller[0])
        return n->caller;
    return n && n->who ? n->who->name : NULL;
}

/* The tool filter (mcp_set_tool_filter): the request's principal must hold the tool's scope.
 * "agent:NAME" is the bridge asking whether the principal may delegate to agent NAME. */
static bool tool_allowed(struct hreq *r, const char *tool, const char *scope, bool refusing,
                         void *arg)
{
    struct app *a = arg;
    const struct rpc_note *n = hreq_user(r);
    const struct principal *p = n ? n->who : NULL;
    bool ok;

    if (!a->cfg->auth)
        return true;
    if (p == NULL)
        return false;
    if (scope && strcmp(scope, MCP_SCOPE_ANYONE) == 0)
        ok = true;
    else if (tool == NULL && scope && strncmp(scope, "agent:", 6) == 0)
        ok = principal_agent_allowed(p, scope + 6);
    else
        ok = principal_has_scope(p, scope);
    if (!ok && refusing) {
        char why[120];
        snprintf(why, sizeof why, "this credential may not call %s", tool);
        add_challenge(a, r, "insufficient_scope", scope, why);
    }
    return ok;
}

/* What whoami answers (mcp_set_whoami): the principal r's credential resolved to. */
static json_t *whoami_of(struct hreq *r, void *arg)
{
    const struct rpc_note *n = hreq_user(r);
    (void)arg;
    if (n == NULL || n->who == NULL)
        return NULL;
    enum whoami_kind kind = n->grant ? WHOAMI_OAUTH : n->who->all ? WHOAMI_OWNER : WHOAMI_TOKEN;
    return whoami_describe(n->who, kind, n->grant ? n->client_id : NULL);
}

/* The providers' readiness objects: one as it is, several merged ("{}" when none has one). */
static bool providers_ready(struct app *a, struct buf *out)
{
    bool ready = true;
    size_t n = 0;
    EACH_PROVIDER(a, p) {
        n += p->ops->ready != NULL;
    }
    if (n <= 1) {
        EACH_PROVIDER(a, p) {
            if (p->ops->ready)
                return p->ops->ready(p->self, out);
        }
        buf_appends(out, "{}");
        return true;
    }
    json_t *all = json_object();
    EACH_PROVIDER(a, p) {
        struct buf one;
        if (!p->ops->ready)
            continue;
        buf_init(&one, 0);
        ready = p->ops->ready(p->self, &one) && ready;
        json_t *o = one.data ? json_loads(one.data, 0, NULL) : NULL;
        json_object_update(all, o);
        json_decref(o);
        buf_cleanup(&one);
    }
    char *text = json_dumps(all, JSON_COMPACT);
    buf_appends(out, text ? text : "{}");
    free(text);
    json_decref(all);
    return ready;
}

static void health(struct app *a, struct hreq *r)
{
    char body[4096], extra[3072] = "";
    const char *m = hreq_method(r);

    if (strcmp(m, "GET") && strcmp(m, "HEAD")) {
        hreq_add_header(r, "Allow", "GET, HEAD");
        reply_simple_json(r, 405, "{\"error\":\"method_not_allowed\",\"message\":\"use GET\"}");
        return;
    }
    EACH_PROVIDER(a, p) {
        size_t used = strlen(extra);
        if (p->ops->health)
            p->ops->health(p->self, extra + used, sizeof extra - used);
    }
    snprintf(body, sizeof body,
             "{\"status\":\"ok\",\"service\":\"%s\",\"version\":\"%s\",\"tools\":%zu,"
             "\"audit\":{\"enabled\":%s,\"dropped\":%llu},\"rate_limited\":%llu%s}",
             a->o->service, HM_VERSION, mcp_tool_count(a->mcp), a->audit ? "true" : "false",
             (unsigned long long)audit_dropped(a->audit), (unsigned long long)a->rate_limited,
             extra);
    hreq_add_header(r, "Cache-Control", "no-store");
    reply_simple_json(r, 200, body);
}

/* GET /healthz: 200 while the process runs, whatever the upstreams do. GET /readyz: 200 only
 * when every required upstream is ready, else 503. Both without auth (probes of a supervisor
 * or tunnel), both naming each upstream's state and nothing secret. */
static void probe(struct app *a, struct hreq *r, bool readiness)
{
    const char *m = hreq_method(r);
    struct buf states, body;
    if (strcmp(m, "GET") && strcmp(m, "HEAD")) {
        hreq_add_header(r, "Allow", "GET, HEAD");
        reply_simple_json(r, 405, "{\"error\":\"method_not_allowed\",\"message\":\"use GET\"}");
        return;
    }
    buf_init(&states, 0);
    buf_init(&body, 0);
    bool ready = providers_ready(a, &states);
    buf_printf(&body, "{\"status\":\"%s\",\"upstreams\":%s}",
               !readiness ? "ok" : ready ? "ready" : "not_ready", states.data);
    hreq_add_header(r, "Cache-Control", "no-store");
    reply_simple_json(r, readiness && !ready ? 503 : 200, body.data);
    buf_cleanup(&states);
    buf_cleanup(&body);
}

/* 401 for a missing or wrong bearer token. */
static void deny(struct app *a, struct hreq *r, enum auth_result why)
{
    /* With OAuth, the scopes to ask for: what a client authorizing from this 401 needs. */
    const char *scope = a->cfg->oauth_issuer ? OAUTH_DEFAULT_SCOPES : NULL;
    a->auth_failures++;
    if (why == AUTH_EXPIRED) {
        add_challenge(a, r, "invalid_token", scope, "the token has expired");
        reply_simple_json(r, 401, "{\"error\":\"unauthorized\",\"message\":\"the bearer "
                                  "token has expired\"}");
        return;
    }
    add_challenge(a, r, why == AUTH_BAD_TOKEN ? "invalid_token" : NULL, scope, NULL);
    reply_simple_json(r, 401, "{\"error\":\"unauthorized\",\"message\":\"missing or invalid "
                              "bearer token\"}");
}

static void gauge(struct buf *out, const char *name, const char *help, double v)
{
    metric_render_value(out, name, help, METRIC_GAUGE, v);
}

static void counter(struct buf *out, const char *name, const char *help, double v)
{
    metric_render_value(out, name, help, METRIC_COUNTER, v);
}

static double resident_bytes(void)
{
    unsigned long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

/* GET /metrics: Prometheus text format, behind the bearer token like /mcp. */
static void metrics_page(struct app *a, struct hreq *r)
{
    const char *m = hreq_method(r);
    struct httpd_stats st;
    struct buf out;

    if (strcmp(m, "GET") && strcmp(m, "HEAD")) {
        hreq_add_header(r, "Allow", "GET, HEAD");
        reply_simple_json(r, 405, "{\"error\":\"method_not_allowed\",\"message\":\"use GET\"}");
        return;
    }
    buf_init(&out, 0);
    buf_printf(&out, "# HELP hermes_mcp_build_info The running version\n"
                     "# TYPE hermes_mcp_build_info gauge\n"
                     "hermes_mcp_build_info{service=\"%s\",version=\"%s\"} 1\n",
               a->o->service, HM_VERSION);
    gauge(&out, "process_start_time_seconds", "Start time of the process since the Unix epoch",
          (double)a->started);
    gauge(&out, "process_resident_memory_bytes", "Resident memory size in bytes",
          resident_bytes());
    httpd_stats(a->httpd, &st);
    gauge(&out, "hermes_mcp_connections", "Open client connections", st.connections);
    gauge(&out, "hermes_mcp_requests_open", "HTTP requests received and not finished",
          (double)st.requests);
    gauge(&out, "hermes_mcp_requests_held",
          "Requests held open while their call runs (no answer yet)", (double)st.waiting);
    gauge(&out, "hermes_mcp_streams_open", "Responses being streamed (SSE)",
          (double)st.streaming);
    gauge(&out, "hermes_mcp_sessions", "Live MCP sessions", (double)mcp_session_count(a->mcp));
    gauge(&out, "hermes_mcp_calls_in_flight", "JSON-RPC requests being handled",
          (double)mcp_calls_in_flight(a->mcp));
    counter(&out, "hermes_mcp_rate_limited_total", "Requests refused with 429",
            (double)a->rate_limited);
    counter(&out, "hermes_mcp_auth_failures_total",
            "Requests refused with 401 (missing or wrong bearer token)",
            (double)a->auth_failures);
    counter(&out, "hermes_mcp_audit_lines_written_total", "Audit log lines written",
            (double)audit_written(a->audit));
    counter(&out, "hermes_mcp_audit_lines_dropped_total",
            "Audit log lines dropped (slow or full disk)", (double)audit_dropped(a->audit));
    metric_render(a->http_requests, &out);
    metric_render(a->rpc_requests, &out);
    metric_render(a->rpc_duration, &out);
    metric_render(a->principal_requests, &out);
    EACH_PROVIDER(a, p) {
        if (p->ops->metrics)
            p->ops->metrics(p->self, &out);
    }
    hreq_add_header(r, "Cache-Control", "no-store");
    hreq_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", out.data ? out.data : "",
               out.len);
    buf_cleanup(&out);
}

/* 429 when the bucket of who is asking is empty. Requests with a valid credential draw on that
 * credential's bucket (behind a tunnel every client shares 127.0.0.1, and one client's start-up
 * burst must not lock the others out); everything else (no token, a wrong one, unknown paths)
 * draws on the client address's bucket, which is what stops guessing and floods. The first
 * refusal of a bucket in a minute is logged, so an operator sees a limit that trips. */
static bool rate_limited(struct app *a, struct hreq *r, bool authed)
{
    struct ratelimit *rl = authed ? a->rl_auth : a->rl;
    char who[160], key[RATELIMIT_KEY_MAX];
    bool first = false;
    unsigned wait;

    if (rl == NULL)
        return false;
    if (authed) {
        /* A credential is named by a hash prefix of its own hash: never the secret itself. */
        static const char hex[] = "0123456789abcdef";
        const struct rpc_note *n = hreq_user(r);
        const unsigned char *hash = n && n->who ? n->who->hash : a->cfg->token_hash;
        char id[9];
        for (int i = 0; i < 4; i++) {
            id[2 * i] = hex[hash[i] >> 4];
            id[2 * i + 1] = hex[hash[i] & 15];
        }
        id[8] = '\0';
        /* Per credential and client address: behind a tunnel every client is the one proxy
         * address, so this is per credential; direct clients sharing the one token still
         * cannot use up each other's requests. */
        char ip[64], addr[48];
        client_ip(a, r, ip, sizeof ip);
        ratelimit_key(ip, addr, sizeof addr);
        snprintf(key, sizeof key, "%s@%s", id, addr);
        snprintf(who, sizeof who, "credential %s from %s", id, ip);
        wait = ratelimit_take_key(rl, key, loop_now(a->loop), &first);
    } else {
        char ip[64];
        client_ip(a, r, ip, sizeof ip);
        snprintf(who, sizeof who, "client %s", ip);
        wait = ratelimit_take(rl, ip, loop_now(a->loop), &first);
    }
    if (wait == 0)
        return false;
    if (first)
        log_warn("rate limit: %s is over %s=%u a minute; answering 429 (logged once a minute)",
                 who, authed ? "RATE_LIMIT_AUTH_PER_MIN" : "RATE_LIMIT_PER_MIN",
                 authed ? a->cfg->rate_auth_per_min : a->cfg->rate_per_min);
    char retry[16];
    snprintf(retry, sizeof retry, "%u", wait);
    a->rate_limited++;
    hreq_add_header(r, "Retry-After", retry);
    reply_simple_json(r, 429, "{\"error\":\"rate_limited\",\"message\":\"too many "
                              "requests; retry after the Retry-After seconds\"}");
    return true;
}

#define PRM_PATH "/.well-known/oauth-protected-resource"

/* RFC 9728 protected resource metadata, at the root well-known path and at the one for /mcp
 * (clients try the second first): public, no token, so a client that got a 401 can discover
 * where to authorize. The same document at both: the resource is our MCP endpoint. */
static bool is_metadata_path(const char *path)
{
    return strcmp(path, PRM_PATH) == 0 || strcmp(path, PRM_PATH "/mcp") == 0;
}

static void resource_metadata(struct app *a, struct hreq *r)
{
    const char *m = hreq_method(r);
    if (oauth_cors(r, "GET, HEAD, OPTIONS")) /* public, and no credentials */
        return;
    if (strcmp(m, "GET") && strcmp(m, "HEAD")) {
        hreq_add_header(r, "Allow", "GET, HEAD");
        reply_simple_json(r, 405, "{\"error\":\"method_not_allowed\",\"message\":\"use GET\"}");
        return;
    }
    const char *iss = a->cfg->oauth_issuer;
    json_t *doc = json_pack("{s:s+, s:[s], s:[sss], s:[s], s:s}", "resource", iss, "/mcp",
                            "authorization_servers", iss, "scopes_supported", "hermes:read",
                            "hermes:task", "hermes:admin", "bearer_methods_supported", "header",
                            "resource_name", a->o->service);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (text == NULL) {
        reply_simple_json(r, 500, "{\"error\":\"internal\",\"message\":\"out of memory\"}");
        return;
    }
    hreq_add_header(r, "Cache-Control", "max-age=300");
    hreq_reply_take(r, 200, "application/json", text, strlen(text));
}

/* With OAuth a token in the query string is refused outright (the MCP authorization spec: never
 * accepted there; it would end up in logs and proxies' histories), not merely ignored. */
static bool token_in_query(struct app *a, struct hreq *r)
{
    if (a->cfg->oauth_issuer == NULL || hreq_query(r, "access_token") == NULL)
        return false;
    add_challenge(a, r, "invalid_request", NULL,
                  "send the token in the Authorization header, never in the URL");
    reply_simple_json(r, 400, "{\"error\":\"invalid_request\",\"message\":\"access tokens are "
                              "not accepted in the query string; use the Authorization header\"}");
    return true;
}

static void on_headers(struct hreq *r, void *arg)
{
    struct app *a = arg;
    const char *path = hreq_path(r);

    if (a->cfg->oauth_issuer && is_metadata_path(path)) {
        resource_metadata(a, r);
        return;
    }
    if (strcmp(path, "/health") == 0) {
        health(a, r);
        return;
    }
    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0) {
        probe(a, r, path[1] == 'r');
        return;
    }
    bool ours = strcmp(path, "/mcp") == 0 || strcmp(path, "/metrics") == 0;
    if (ours && token_in_query(a, r))
        return;
    enum auth_result auth = ours ? authenticate(a, r) : AUTH_NO_TOKEN;
    bool allowed = auth == AUTH_OK; /* true when authentication is off */
    /* Only a credential in use counts as one: without authentication (the conformance server)
     * every request draws on its address's bucket. */
    bool by_credential = allowed && a->cfg->auth;
    /* A scraper with the token is not rate limited (a flood must not blind the monitoring); a
     * wrong token costs as usual. */
    if (allowed && strcmp(path, "/metrics") == 0) {
        const struct rpc_note *n = hreq_user(r);
        /* The counts name every principal: the owner's token and principals holding hermes:admin
         * (a TOKENS_FILE role, an OAuth token granted it) read them, so that a setup without
         * MCP_AUTH_TOKEN can be monitored too; other roles do not. */
        if (n && n->who && !principal_has_scope(n->who, "hermes:admin")) {
            reply_simple_json(r, 403, "{\"error\":\"forbidden\",\"message\":\"/metrics is "
                                      "for the owner's token (MCP_AUTH_TOKEN) and for tokens "
                                      "holding hermes:admin (a TOKENS_FILE role, an OAuth "
                                      "token)\"}");
            return;
        }
        metrics_page(a, r);
        return;
    }
    if (rate_limited(a, r, by_credential))
        return;
    if (a->oauth_server && authserver_owns(path)) {
        char ip[64];
        client_ip(a, r, ip, sizeof ip);
        authserver_headers(a->oauth_server, r, ip, loop_now(a->loop));
        return;
    }
    if (!ours) {
        reply_simple_json(r, 404, "{\"error\":\"not_found\",\"message\":\"no such path; the MCP "
                                  "endpoint is /mcp\"}");
        return;
    }
    /* Authentication comes before anything else about the request, body included. */
    if (!allowed) {
        deny(a, r, auth);
        return;
    }
    mcp_http_headers(a->mcp, r);
}

static void on_request(struct hreq *r, void *arg)
{
    struct app *a = arg;
    if (a->oauth_server && authserver_owns(hreq_path(r))) {
        char ip[64];
        client_ip(a, r, ip, sizeof ip);
        authserver_request(a->oauth_server, r, ip, loop_now(a->loop));
        return;
    }
    mcp_http_request(a->mcp, r);
}

/* What the engine told of a request (mcp_set_audit), for on_done. */
static void on_rpc_note(struct hreq *r, const char *rpc_method, const char *tool,
                        const char *error, void *arg)
{
    struct rpc_note *n = note_of(r);
    (void)arg;

    if (rpc_method)
        snprintf(n->rpc_method, sizeof n->rpc_method, "%s", rpc_method);
    if (tool)
        snprintf(n->tool, sizeof n->tool, "%s", tool);
    if (error)
        snprintf(n->error, sizeof n->error, "%s", error);
}

static void on_done(struct hreq *r, unsigned status, uint64_t duration_ms, void *arg)
{
    struct app *a = arg;
    const struct rpc_note *n = hreq_user(r);
    const char *rpc = NULL, *tool = NULL, *error = NULL;
    const char *principal = n && n->who ? n->who->name : NULL;
    char ip[64], labels[200], code[8];

    /* Empty means "not known" (no JSON-RPC body, no tool, no error). */
    if (n) {
        rpc = *n->rpc_method ? n->rpc_method : NULL;
        tool = *n->tool ? n->tool : NULL;
        error = *n->error ? n->error : NULL;
    }
    /* The path is the client's text: only ours go to the log and the metrics verbatim. */
    static const char *const methods[] = {"GET", "HEAD", "POST", "DELETE", "PUT", "PATCH",
                                          "OPTIONS"};
    const char *path = hreq_path(r), *method = "(other)";
    if (strcmp(path, "/mcp") && strcmp(path, "/health") && strcmp(path, "/metrics") &&
        strcmp(path, "/healthz") && strcmp(path, "/readyz"))
        path = "(other)";
    snprintf(code, sizeof code, "%u", status < 1000 ? status : 0);
    if (is_metadata_path(hreq_path(r)) ||
        (a->oauth_server && authserver_owns(hreq_path(r))))
        path = hreq_path(r); /* ours too, when OAuth is on */
    metric_labels(labels, sizeof labels, "path", path, "code", code, NULL);
    metric_add(a->http_requests, labels, 1);
    if (principal) {
        metric_labels(labels, sizeof labels, "principal", principal, NULL);
        metric_add(a->principal_requests, labels, 1);
    }
    if (rpc) {
        metric_labels(labels, sizeof labels, "method", rpc, "tool", tool, "outcome",
                      error ? error : "ok", NULL);
        metric_add(a->rpc_requests, labels, 1);
        metric_labels(labels, sizeof labels, "method", rpc, "tool", tool, NULL);
        metric_observe(a->rpc_duration, labels, (double)duration_ms / 1000.0);
    }
    if (a->audit == NULL)
        return;
    client_ip(a, r, ip, sizeof ip);
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (strcmp(hreq_method(r), methods[i]) == 0)
            method = methods[i];
    struct audit_entry e = {.ip = ip, .principal = principal, .method = method, .path = path,
                            .status = status, .duration_ms = duration_ms, .rpc_method = rpc,
                            .tool = tool, .error = error};
    audit_log(a->audit, &e);
}

static void reload(struct app *a)
{
    struct config fresh;
    char err[512];

    if (a->cfg->env_file == NULL) {
        log_info("SIGHUP: no env file to reload");
        return;
    }
    sdnotify_reloading();
    if (!config_load(&fresh, a->cfg->env_file, err, sizeof err)) {
        log_warn("reload failed, keeping the current settings: %s", err);
        sdnotify("READY=1\nSTATUS=reload failed; running with the previous settings");
        return;
    }
    /* A file that lost its token must not turn authentication off, nor leave only a way in
     * that this process does not serve (OAUTH_ISSUER_URL takes effect at a restart). */
    if (a->cfg->auth && !fresh.owner_token && !fresh.tokens_file && a->oauth_server == NULL) {
        /* The three ways in, as serve names them at start (main.c). */
        const char *f = a->cfg->env_file;
        if (fresh.oauth_issuer)
            log_warn("reload failed, keeping the current settings: %s has no MCP_AUTH_TOKEN nor "
                     "TOKENS_FILE, and its OAUTH_ISSUER_URL takes effect only at a restart (set "
                     "the consent passphrase with hermes-mcp oauth passwd --env-file %s, then "
                     "restart), or create a token with: hermes-mcp token gen --env-file %s, or "
                     "set TOKENS_FILE",
                     f, f, f);
        else
            log_warn("reload failed, keeping the current settings: no MCP_AUTH_TOKEN, TOKENS_FILE "
                     "or OAUTH_ISSUER_URL in %s, so no client could authenticate; set TOKENS_FILE "
                     "again, or create a token with: hermes-mcp token gen --env-file %s (or set "
                     "OAUTH_ISSUER_URL, then: hermes-mcp oauth passwd --env-file %s, and restart)",
                     f, f, f);
        config_cleanup(&fresh);
        sdnotify("READY=1\nSTATUS=reload failed; running with the previous settings");
        return;
    }
    struct principals *who = principals_load(fresh.owner_token ? fresh.token_hash : NULL,
                                             fresh.tokens_file, err, sizeof err);
    if (who && who->n == 0 && a->oauth_server == NULL) {
        snprintf(err, sizeof err, "TOKENS_FILE %s names no principal and there is no "
                                  "MCP_AUTH_TOKEN: no client could authenticate",
                 fresh.tokens_file);
        principals_unref(who);
        who = NULL;
    }
    if (who == NULL) {
        /* A broken tokens file must not lock the roles out, nor let anyone new in. */
        log_warn("reload failed, keeping the current settings: %s", err);
        config_cleanup(&fresh);
        sdnotify("READY=1\nSTATUS=reload failed; running with the previous settings");
        return;
    }
    principals_unref(a->principals);
    a->principals = who;
    /* Only what can change without re-binding takes effect; say what does not. */
    char keys[512];
    if (config_restart_keys(a->cfg, &fresh, keys, sizeof keys))
        log_warn("reload: %s changed; restart to apply", keys);
    a->cfg->owner_token = fresh.owner_token;
    memcpy(a->cfg->token_hash, fresh.token_hash, sizeof fresh.token_hash);
    free(a->cfg->tokens_file);
    a->cfg->tokens_file = fresh.tokens_file;
    fresh.tokens_file = NULL;
    log_set_level(fresh.log_level);
    a->cfg->drain_grace_s = fresh.drain_grace_s; /* read when the drain starts */
    a->cfg->tasks_retention_days = fresh.tasks_retention_days; /* read at each prune */
    a->cfg->tasks_max = fresh.tasks_max;
    /* A tunnel's new public name must not need a restart (README: add it, reload). */
    mcp_set_public_hosts(a->mcp, fresh.public_hosts);
    free(a->cfg->public_hosts);
    a->cfg->public_hosts = fresh.public_hosts;
    fresh.public_hosts = NULL;
    config_cleanup(&fresh);
    log_info("reloaded %s", a->cfg->env_file);
    EACH_PROVIDER(a, p) {
        if (p->ops->reload)
            p->ops->reload(p->self);
    }
    sdnotifyf("READY=1\nSTATUS=reloaded %s", a->cfg->env_file);
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *arg)
{
    struct app *a = arg;
    struct signalfd_siginfo si;
    (void)events;

    while (read(fd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) {
            reaper_on_sigchld(a->reaper); /* adopted orphans, not the children it owns */
        } else if (si.ssi_signo == SIGHUP) {
            if (a->draining)
                log_info("SIGHUP while draining: ignored");
            else
                reload(a);
        } else if (!a->draining) {
            log_info("received %s, draining", strsignal((int)si.ssi_signo));
            a->draining = true;
            loop_stop(l);
        } else {
            log_info("received %s again: ending the drain now", strsignal((int)si.ssi_signo));
            a->hurry = true;
        }
    }
}

static void on_watchdog(struct loop *l, void *arg)
{
    struct app *a = arg;
    /* Sent from the loop, so a loop that hangs stops feeding it and systemd restarts us. */
    sdnotify("WATCHDOG=1");
    a->watchdog = loop_timer_add(l, a->watchdog_ms, on_watchdog, a);
}

static bool busy(struct app *a)
{
    if (mcp_calls_active(a->mcp) > 0 || httpd_receiving(a->httpd) > 0)
        return true;
    EACH_PROVIDER(a, p) {
        if (p->ops->draining_work && p->ops->draining_work(p->self) > 0)
            return true;
    }
    return false;
}

/* SIGTERM: stop taking work, give the calls in flight up to MCP_DRAIN_GRACE_S to finish. What
 * is still running afterwards is answered by the shutdown that follows (503, or an error on the
 * call's SSE stream). Async runs are on disk and are followed again after the next start. */
static void drain(struct app *a)
{
    uint64_t grace_ms = (uint64_t)a->cfg->drain_grace_s * 1000u;
    uint64_t t0 = loop_now(a->loop);
    uint64_t started = mcp_calls_started(a->mcp);
    size_t waiting = mcp_calls_active(a->mcp);

    httpd_drain(a->httpd);
    mcp_end_subscriptions(a->mcp); /* they would only end at the grace's end */
    /* No operator answers a stopping server: what waits for one is denied now, not cut off. */
    size_t denied = approvals_deny_all(a->approvals, "server stopping", APPROVALS_BY_SHUTDOWN);
    if (denied)
        log_info("drain: %zu request%s waiting for approval denied (server stopping)", denied,
                 denied == 1 ? "" : "s");
    EACH_PROVIDER(a, p) {
        if (p->ops->drain)
            p->ops->drain(p->self); /* the gateway answers the calls it has not sent yet */
    }
    sdnotifyf("STOPPING=1\nSTATUS=draining: %zu call%s in flight", waiting,
              waiting == 1 ? "" : "s");
    log_info("drain: %zu call%s in flight, up to %u s for them to finish; new connections are "
             "refused",
             waiting, waiting == 1 ? "" : "s", a->cfg->drain_grace_s);
    while (!a->hurry && busy(a)) {
        uint64_t spent = loop_now(a->loop) - t0;
        if (spent >= grace_ms)
            break;
        uint64_t left = grace_ms - spent;
        if (loop_once(a->loop, left > 1000 ? 1000 : (int)left) < 0)
            break;
    }
    size_t total = waiting + (size_t)(mcp_calls_started(a->mcp) - started);
    size_t cut = mcp_calls_active(a->mcp);
    log_info("drain over after %llu ms: %zu of %zu call%s finished, %zu cut off",
             (unsigned long long)(loop_now(a->loop) - t0), total - cut, total,
             total == 1 ? "" : "s", cut);
    mcp_abort_streams(a->mcp, RPC_SHUTTING_DOWN, "Server is shutting down; retry the call");
}

/* Socket activation: serve on the socket systemd passed, under the same loopback rule as
 * MCP_HOST. Returns 0 to go on (*fd -1 when there is none), or an exit code. */
static int take_socket(struct app *a, int *fd, char *host, size_t hostlen, unsigned *port)
{
    char err[512];

    if (!sdlisten_take(fd, host, hostlen, port, err, sizeof err)) {
        log_error("%s", err);
        return 2;
    }
    if (*fd < 0)
        return 0;
    if (!config_is_loopback(host) && !a->cfg->allow_remote) {
        log_error("the socket passed by systemd listens on %s, not a loopback address; use "
                  "ListenStream=127.0.0.1:PORT, or set MCP_ALLOW_NON_LOOPBACK=1",
                  host);
        close(*fd);
        *fd = -1;
        return 2;
    }
    if (!config_is_loopback(host))
        log_warn("LISTENING BEYOND LOOPBACK on %s (socket passed by systemd): anyone who can "
                 "reach it is one token away from your agent",
                 host);
    log_info("serving on the socket passed by systemd; MCP_HOST and MCP_PORT are not used");
    return 0;
}

static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Tests only (README, "Testing"): HERMES_TEST_STATE_TTL_MS shortens how long a 2026-07-28
 * requestState (and so a gateway call held for its answer) lives; 0 (unset): the default. */
static unsigned test_state_ttl_ms(void)
{
    const char *ttl = getenv("HERMES_TEST_STATE_TTL_MS");
    unsigned long ms = ttl ? strtoul(ttl, NULL, 10) : 0;
    return ms > 600000 ? 600000 : (unsigned)ms;
}

/* The control socket's status: the providers' facts, merged. */
static json_t *providers_status(void *arg)
{
    struct app *a = arg;
    json_t *all = json_object();
    EACH_PROVIDER(a, p) {
        json_t *facts = p->ops->status ? p->ops->status(p->self) : NULL;
        if (facts)
            json_object_update(all, facts);
        json_decref(facts);
    }
    return all;
}

/* Whether some provider knows the upstream an OAuth client asks for (gateway:<name>). */
static bool providers_know_upstream(void *arg, const char *name)
{
    struct app *a = arg;
    EACH_PROVIDER(a, p) {
        if (p->ops->knows_upstream && p->ops->knows_upstream(p->self, name))
            return true;
    }
    return false;
}

/* The approval queue and its control socket. Without the socket the server still serves:
 * nothing can be approved, so whatever waits for an operator is denied at its timeout. */
static void open_approvals(struct app *a)
{
    char err[512] = "";
    a->approvals = approvals_new(a->loop, a->o->approvals_timeout_s);
    char *path = ctl_socket_path(a->cfg->env_file);
    if (path)
        a->ctl = ctlsock_new(a->loop, path, a->approvals, err, sizeof err);
    else
        snprintf(err, sizeof err, "control socket: the env file's directory path is too long");
    if (!a->ctl)
        log_warn("%s; approvals cannot be answered", err);
    else {
        ctlsock_set_status(a->ctl, providers_status, a);
        a->reaper = reaper_start(a->loop, a->o->owned_child);
    }
    free(path);
}

static void audit_provider_event(void *arg, const struct provider_event *e)
{
    struct app *a = arg;
    audit_log_event(a->audit, &(struct audit_event){.event = e->event, .principal = e->principal,
                                                    .upstream = e->upstream, .tool = e->tool,
                                                    .upstream_tool = e->upstream_tool,
                                                    .status = e->status,
                                                    .decided_by = e->decided_by,
                                                    .duration_ms = e->duration_ms});
}

/* Each provider in order, each seeing the ones before it. */
static bool setup_providers(struct app *a)
{
    for (size_t i = 0; i < a->o->nproviders; i++) {
        const struct provider *p = &a->o->providers[i];
        struct provider_host h = {.mcp = a->mcp, .loop = a->loop, .cfg = a->cfg,
                                  .approvals = a->approvals, .audit = audit_provider_event,
                                  .audit_arg = a, .before = a->o->providers, .nbefore = i};
        a->nsetup = i + 1; /* torn down even when its setup failed half-way */
        if (!p->ops->setup(p->self, &h))
            return false;
    }
    return true;
}

int app_run(const struct app_opts *o)
{
    struct app a = {.o = o, .cfg = o->cfg, .sigfd = -1};
    sigset_t mask;
    char err[512], sock_host[INET6_ADDRSTRLEN] = "";
    unsigned sock_port = 0;
    int rc = 1, sock_fd = -1;

    log_set_level(o->cfg->log_level);
    a.principals = principals_load(o->cfg->owner_token ? o->cfg->token_hash : NULL,
                                   o->cfg->tokens_file, err, sizeof err);
    if (a.principals == NULL) {
        log_error("%s", err);
        return 2;
    }
    if (o->cfg->auth && a.principals->n == 0 && !o->cfg->oauth_issuer) {
        log_error("TOKENS_FILE %s names no principal and there is no MCP_AUTH_TOKEN nor "
                  "OAUTH_ISSUER_URL: no client could authenticate",
                  o->cfg->tokens_file);
        principals_unref(a.principals);
        return 2;
    }
    if (o->cfg->oauth_issuer) {
        a.oauth_tokens = tokenstore_open(o->cfg->oauth_store, err, sizeof err);
        if (a.oauth_tokens == NULL) {
            log_error("%s", err);
            principals_unref(a.principals);
            return 2;
        }
        a.oauth_resource = xasprintf("%s/mcp", o->cfg->oauth_issuer);
        bool know_upstreams = false; /* no provider with upstreams: any name */
        EACH_PROVIDER(&a, p) {
            know_upstreams = know_upstreams || p->ops->knows_upstream;
        }
        char *passphrase = passphrase_path_beside(o->cfg->oauth_store);
        char *clients = authserver_clients_path_beside(o->cfg->oauth_store);
        struct authserver_opts ao = {.issuer = o->cfg->oauth_issuer,
                                     .resource = a.oauth_resource,
                                     .passphrase_path = passphrase, .service = o->service,
                                     .tokens = a.oauth_tokens, .dcr = o->cfg->oauth_dcr,
                                     .clients_path = clients,
                                     .static_client_id = o->cfg->oauth_client_id,
                                     .static_secret_hash = o->cfg->oauth_client_secret_hash,
                                     .redirect_schemes = o->cfg->oauth_redirect_schemes,
                                     .cimd = o->cfg->oauth_cimd,
                                     .cimd_ca_file = o->cfg->oauth_cimd_ca_file,
                                     .cimd_allow_hosts = o->cfg->oauth_cimd_allow_hosts,
                                     .access_ttl_s = o->cfg->oauth_access_ttl_s,
                                     .refresh_ttl_s = o->cfg->oauth_refresh_ttl_s,
                                     .upstream_known = know_upstreams ? providers_know_upstream
                                                                      : NULL,
                                     .upstream_arg = &a};
        a.oauth_server = authserver_new(&ao, err, sizeof err);
        free(passphrase);
        free(clients);
        if (a.oauth_server == NULL) {
            log_error("%s", err);
            principals_unref(a.principals);
            tokenstore_free(a.oauth_tokens);
            free(a.oauth_resource);
            return 2;
        }
    }
    rc = take_socket(&a, &sock_fd, sock_host, sizeof sock_host, &sock_port);
    if (rc != 0) {
        principals_unref(a.principals);
        authserver_free(a.oauth_server);
        tokenstore_free(a.oauth_tokens);
        free(a.oauth_resource);
        return rc;
    }
    rc = 1;
    raise_fd_limit();
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGCHLD); /* for the reaper (reaper.h); children get a clean mask */
    sigprocmask(SIG_BLOCK, &mask, NULL);

    a.loop = loop_new();
    a.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (a.loop == NULL || a.sigfd < 0) {
        log_error("cannot set up the event loop: %s", strerror(errno));
        goto out;
    }
    a.sigw = loop_watch_add(a.loop, a.sigfd, EPOLLIN, on_signal, &a);
    if (a.oauth_server)
        authserver_set_loop(a.oauth_server, a.loop);
    a.started = time(NULL);
    static const double bounds[] = {0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10, 60, 300, 1800};
    a.http_requests = metric_new("hermes_mcp_http_requests_total",
                                 "HTTP requests answered, by path and status code",
                                 METRIC_COUNTER, NULL, 0);
    a.rpc_requests = metric_new("hermes_mcp_rpc_requests_total",
                                "JSON-RPC requests answered, by method, tool and outcome (ok, "
                                "a JSON-RPC error code or a tool error code)",
                                METRIC_COUNTER, NULL, 0);
    a.rpc_duration = metric_new("hermes_mcp_rpc_duration_seconds",
                                "Time from request to answer, by method and tool",
                                METRIC_HISTOGRAM, bounds, sizeof bounds / sizeof *bounds);
    a.principal_requests = metric_new("hermes_mcp_principal_requests_total",
                                      "Authenticated HTTP requests, by principal (its name)",
                                      METRIC_COUNTER, NULL, 0);

    struct mcp_opts mo = {.name = o->service, .version = HM_VERSION,
                          .sessions = o->cfg->sessions, .public_hosts = o->cfg->public_hosts,
                          .call_timeout_ms = o->cfg->call_timeout_ms,
                          /* Without authentication every caller gets the same lists. */
                          .cache_public = !o->cfg->auth,
                          .state_ttl_ms = test_state_ttl_ms()};
    a.mcp = mcp_new(a.loop, &mo);
    mcp_set_audit(a.mcp, on_rpc_note, &a);
    mcp_set_tool_filter(a.mcp, tool_allowed, &a);
    mcp_set_caller(a.mcp, caller_name, &a);
    mcp_set_whoami(a.mcp, whoami_of, &a);
    /* Opened before setup: the gateway audits what it finds at start (a withheld tool). */
    if (o->cfg->audit_path)
        a.audit = audit_new(o->cfg->audit_path, AUDIT_ROTATE_BYTES, AUDIT_KEEP);
    open_approvals(&a);
    if (!setup_providers(&a))
        goto out;
    if (a.draining) { /* SIGTERM while setting up (the gateway's start-up wait): never serve */
        log_info("stopped before listening");
        rc = 0;
        goto out;
    }

    struct httpd_opts ho = {.host = o->cfg->host, .port = o->cfg->port, .listen_fd = sock_fd,
                            .max_body = MAX_BODY, .max_conns = o->cfg->max_conns,
                            .idle_timeout = IDLE_TIMEOUT_S,
                            .header_timeout_ms = o->cfg->header_timeout_ms,
                            .body_timeout_ms = o->cfg->body_timeout_ms, .on_headers = on_headers,
                            .on_request = on_request, .on_done = on_done,
                            .error_body = mcp_http_error_body, .arg = &a};
    if (o->cfg->rate_per_min)
        a.rl = ratelimit_new(o->cfg->rate_per_min, RATE_TABLE_MAX);
    if (o->cfg->rate_auth_per_min)
        a.rl_auth = ratelimit_new(o->cfg->rate_auth_per_min, RATE_TABLE_MAX);
    a.httpd = httpd_new(a.loop, &ho, err, sizeof err);
    sock_fd = -1; /* httpd owns it now, or closed it */
    if (a.httpd == NULL) {
        log_error("%s", err);
        goto out;
    }
    const char *host = sock_host[0] ? sock_host : o->cfg->host;
    mcp_set_listen(a.mcp, host, httpd_port(a.httpd));
    bool v6 = strchr(host, ':') != NULL;
    char url[300];
    snprintf(url, sizeof url, "http://%s%s%s:%u/mcp", v6 ? "[" : "", host, v6 ? "]" : "",
             httpd_port(a.httpd));
    printf("%s: listening on %s\n", o->service, url);
    fflush(stdout);
    if (!o->cfg->auth)
        log_warn("authentication is off: anyone who can reach the port can call the tools");
    else if (!o->cfg->owner_token && a.oauth_server)
        log_info("no MCP_AUTH_TOKEN: no static owner token; the owner allows OAuth clients "
                 "with the consent passphrase (hermes-mcp oauth passwd) and uses the CLI");
    sdnotifyf("READY=1\nSTATUS=listening on %s", url);
    a.watchdog_ms = sdnotify_watchdog_ms();
    if (a.watchdog_ms)
        a.watchdog = loop_timer_add(a.loop, a.watchdog_ms, on_watchdog, &a);
    if (loop_run(a.loop) < 0) {
        log_error("event loop failed: %s", strerror(errno));
        goto out;
    }
    drain(&a);
    if (a.hurry) {
        /* Asked twice: the signalfd took the second one, and the loop no longer runs. Left
         * pending, it tells the teardown's bounded waits (child_reap_all) not to wait. */
        loop_watch_del(a.sigw);
        a.sigw = NULL;
        raise(SIGTERM);
    }
    rc = 0;
out:
    if (sock_fd >= 0)
        close(sock_fd);
    if (a.httpd) {
        /* Answer everything still waiting before the engine goes away. */
        httpd_shutdown(a.httpd);
    }
    /* The engine first: ending its sessions cancels the calls still running, and their
     * providers must still be there to hear it. */
    mcp_free(a.mcp);
    a.mcp = NULL;
    for (size_t i = a.nsetup; i-- > 0;) {
        if (o->providers[i].ops->teardown)
            o->providers[i].ops->teardown(o->providers[i].self);
    }
    httpd_free(a.httpd);
    ctlsock_free(a.ctl);
    reaper_free(a.reaper);
    approvals_free(a.approvals); /* after teardown: providers withdraw what they queued */
    audit_free(a.audit, 2000);
    ratelimit_free(a.rl);
    ratelimit_free(a.rl_auth);
    metric_free(a.http_requests);
    metric_free(a.rpc_requests);
    metric_free(a.rpc_duration);
    metric_free(a.principal_requests);
    principals_unref(a.principals);
    authserver_free(a.oauth_server);
    tokenstore_free(a.oauth_tokens);
    free(a.oauth_resource);
    loop_timer_cancel(a.watchdog);
    loop_watch_del(a.sigw);
    if (a.sigfd >= 0)
        close(a.sigfd);
    loop_free(a.loop);
    if (rc == 0)
        log_info("stopped");
    return rc;
}
