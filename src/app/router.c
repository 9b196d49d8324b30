/* router.c — each request by its route: one table of the paths we serve, with who may ask
 * (public or a bearer token, and the scope a page needs), which rate bucket it draws on, the
 * methods its page answers and its label in the metrics and the audit log. Unknown paths go to
 * the OAuth authorization server when it owns them, else 404. */
#include "app_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "authserver.h"
#include "buf.h"
#include "config.h"
#include "hex.h"
#include "httpd.h"
#include "httperr.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "metrics.h"
#include "oidc.h"
#include "principal.h"
#include "ratelimit.h"

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
void app_client_ip(struct app *a, struct hreq *r, char *out, size_t outlen)
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
        const struct rpc_note *n = hreq_user(r);
        const unsigned char *hash = n && n->id.who ? n->id.who->hash : a->cfg->token_hash;
        char id[9];
        hex_encode(hash, 4, id);
        /* Per credential and client address: behind a tunnel every client is the one proxy
         * address, so this is per credential; direct clients sharing the one token still
         * cannot use up each other's requests. */
        char ip[64], addr[48];
        app_client_ip(a, r, ip, sizeof ip);
        ratelimit_key(ip, addr, sizeof addr);
        snprintf(key, sizeof key, "%s@%s", id, addr);
        snprintf(who, sizeof who, "credential %s from %s", id, ip);
        wait = ratelimit_consume_key(rl, key, loop_now(a->loop), &first);
    } else {
        char ip[64];
        app_client_ip(a, r, ip, sizeof ip);
        snprintf(who, sizeof who, "client %s", ip);
        wait = ratelimit_consume(rl, ip, loop_now(a->loop), &first);
    }
    if (wait == 0)
        return false;
    if (first)
        log_event(
            EV_RATE_LIMITED,
            LOG_FIELDS(LF_S("who", who),
                       LF_S("limit", authed ? "RATE_LIMIT_AUTH_PER_MIN" : "RATE_LIMIT_PER_MIN"),
                       LF_N("per_min", authed ? a->cfg->rate_auth_per_min : a->cfg->rate_per_min)),
            "rate limit: %s is over %s=%u a minute%s; answering 429 (logged once a minute)", who,
            authed ? "RATE_LIMIT_AUTH_PER_MIN" : "RATE_LIMIT_PER_MIN",
            authed ? a->cfg->rate_auth_per_min : a->cfg->rate_per_min,
            a->cfg->replicas > 1 ? " (this replica's share: divided by REPLICAS)" : "");
    char retry[16];
    snprintf(retry, sizeof retry, "%u", wait);
    a->rate_limited++;
    hreq_add_header(r, "Retry-After", retry);
    httperr_reply(r, HTTPERR_RATE_LIMITED);
    return true;
}

bool app_admit_token(struct hreq *r, void *arg)
{
    return !rate_limited(arg, r, false); /* refused: answered 429 already */
}

#define PRM_PATH "/.well-known/oauth-protected-resource"

/* RFC 9728 protected resource metadata, at the root well-known path and at the one for /mcp
 * (clients try the second first): public, no token, so a client that got a 401 can discover
 * where to authorize. The same document at both: the resource is our MCP endpoint. */
static void resource_metadata(struct app *a, struct hreq *r)
{
    const char *m = hreq_method(r);
    if (authserver_cors(r, "GET, HEAD, OPTIONS")) /* public, and no credentials */
        return;
    if (strcmp(m, "GET") && strcmp(m, "HEAD")) {
        hreq_add_header(r, "Allow", "GET, HEAD");
        httperr_reply(r, HTTPERR_METHOD_NOT_ALLOWED);
        return;
    }
    /* Every issuer whose tokens are accepted: ours, then the external providers'. */
    json_t *servers = json_array();
    if (a->cfg->oauth_issuer)
        json_array_append_new(servers, json_string(a->cfg->oauth_issuer));
    for (size_t i = 0; a->oidc && i < oidc_issuer_count(a->oidc); i++)
        json_array_append_new(servers, json_string(oidc_issuer_at(a->oidc, i)));
    json_t *doc =
        json_pack("{s:s, s:o, s:o, s:[s], s:s}", "resource", a->resource_url,
                  "authorization_servers", servers, "scopes_supported", authn_scopes_supported(),
                  "bearer_methods_supported", "header", "resource_name", a->o->service);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (text == NULL) {
        httperr_reply(r, HTTPERR_INTERNAL);
        return;
    }
    hreq_add_header(r, "Cache-Control", "max-age=300");
    hreq_reply_take(r, 200, "application/json", text, strlen(text));
}

static void mcp_headers(struct app *a, struct hreq *r)
{
    mcp_http_headers(a->mcp, r);
}

static void mcp_request(struct app *a, struct hreq *r)
{
    mcp_http_request(a->mcp, r);
}

enum route_auth { ROUTE_PUBLIC, ROUTE_BEARER };
/* A request with a valid credential draws on that credential's bucket, any other on its
 * address's (rate_limited); a scraper with the token is not limited at all (a flood must not
 * blind the monitoring), while a wrong token costs as usual. */
enum route_rate { RATE_NONE, RATE_ALWAYS, RATE_UNLESS_AUTHED };

/* A path we serve; what is left out (zero) is public, unlimited and unscoped. */
struct route {
    const char *path; /* also its label in the metrics and the audit log */
    bool oauth;       /* served only with OAUTH_ISSUER_URL (else: an unknown path) */
    enum route_auth auth;
    enum route_rate rate; /* public routes draw on no bucket */
    /* A principal without this scope gets the 403 forbidden names (scope NULL: any
     * principal, and forbidden is unused). */
    const char *scope;
    enum httperr forbidden;
    const char *methods; /* else 405 with Allow; NULL: the page decides (CORS, the engine) */
    void (*page)(struct app *a, struct hreq *r);    /* at the headers */
    void (*request)(struct app *a, struct hreq *r); /* with the body; NULL: none */
};

static const struct route routes[] = {
    {.path = PRM_PATH, .oauth = true, .page = resource_metadata},
    {.path = PRM_PATH "/mcp", .oauth = true, .page = resource_metadata},
    {.path = "/health", .methods = "GET, HEAD", .page = app_health_page},
    {.path = "/healthz", .methods = "GET, HEAD", .page = app_healthz_page},
    {.path = "/readyz", .methods = "GET, HEAD", .page = app_readyz_page},
    /* The counts name every principal: the owner's token and principals holding hermes:admin
     * (a TOKENS_FILE role, an OAuth token granted it) read them, so that a setup without
     * MCP_AUTH_TOKEN can be monitored too; other roles do not. */
    {.path = "/metrics",
     .auth = ROUTE_BEARER,
     .rate = RATE_UNLESS_AUTHED,
     .scope = SCOPE_ADMIN,
     .forbidden = HTTPERR_METRICS_FORBIDDEN,
     .methods = "GET, HEAD",
     .page = app_metrics_page},
    {.path = "/mcp",
     .auth = ROUTE_BEARER,
     .rate = RATE_ALWAYS,
     .page = mcp_headers,
     .request = mcp_request},
};

static const struct route *route_find(const char *path)
{
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++)
        if (strcmp(routes[i].path, path) == 0)
            return &routes[i];
    return NULL;
}

/* The route's page, once who asks may have it. */
static void serve_route(struct app *a, const struct route *rt, struct hreq *r)
{
    const struct rpc_note *n = hreq_user(r);
    const char *m = hreq_method(r);
    if (rt->scope && n && n->id.who && !principal_has_scope(n->id.who, rt->scope)) {
        httperr_reply(r, rt->forbidden);
        return;
    }
    if (rt->methods && !in_list(rt->methods, m, strlen(m))) {
        hreq_add_header(r, "Allow", rt->methods);
        httperr_reply(r, HTTPERR_METHOD_NOT_ALLOWED);
        return;
    }
    rt->page(a, r);
}

void app_on_headers(struct hreq *r, void *arg)
{
    struct app *a = arg;
    const char *path = hreq_path(r);
    const struct route *rt = route_find(path);

    if (rt && rt->oauth && !a->resource_url)
        rt = NULL;
    app_trace_start(a, r);
    if (rt && rt->auth == ROUTE_PUBLIC) { /* probes of a supervisor, discovery: no token */
        serve_route(a, rt, r);
        return;
    }
    if (rt && authn_refuse_query_token(a->authn, r))
        return;
    enum authn_result auth = rt ? authn_request(a->authn, r, &app_note(r)->id) : AUTHN_NO_TOKEN;
    if (auth == AUTHN_WAIT || auth == AUTHN_LIMITED)
        return; /* held until its provider's keys are in, or answered 429 by app_admit_token */
    bool allowed = auth == AUTHN_OK; /* true when authentication is off */
    /* Only a credential in use counts as one: without authentication (the conformance server)
     * every request draws on its address's bucket. */
    bool by_credential = allowed && a->cfg->auth;
    if (allowed && rt->rate == RATE_UNLESS_AUTHED) {
        serve_route(a, rt, r);
        return;
    }
    if (rate_limited(a, r, by_credential))
        return;
    if (a->oauth_server && authserver_owns(path)) {
        char ip[64];
        app_client_ip(a, r, ip, sizeof ip);
        authserver_headers(a->oauth_server, r, ip, loop_now(a->loop));
        return;
    }
    if (rt == NULL) {
        httperr_reply(r, HTTPERR_NOT_FOUND);
        return;
    }
    /* Authentication comes before anything else about the request, body included. */
    if (!allowed) {
        a->auth_failures++;
        authn_deny(a->authn, r, auth, app_note(r)->id.why);
        return;
    }
    serve_route(a, rt, r);
}

void app_on_request(struct hreq *r, void *arg)
{
    struct app *a = arg;
    const struct route *rt = route_find(hreq_path(r));
    if (a->oauth_server && authserver_owns(hreq_path(r))) {
        char ip[64];
        app_client_ip(a, r, ip, sizeof ip);
        authserver_request(a->oauth_server, r, ip, loop_now(a->loop));
        return;
    }
    if (rt && rt->request)
        rt->request(a, r);
    else
        mcp_http_request(a->mcp, r);
}

void app_on_done(struct hreq *r, unsigned status, uint64_t duration_ms, void *arg)
{
    struct app *a = arg;
    const struct rpc_note *n = hreq_user(r);
    const char *rpc = NULL, *tool = NULL, *error = NULL;
    const char *principal = n && n->id.who ? n->id.who->name : NULL;
    char ip[64], labels[200], code[8];

    /* Empty means "not known" (no JSON-RPC body, no tool, no error). */
    if (n) {
        rpc = *n->rpc_method ? n->rpc_method : NULL;
        tool = *n->tool ? n->tool : NULL;
        error = *n->error ? n->error : NULL;
    }
    /* The path is the client's text: only ours go to the log and the metrics verbatim. */
    static const char *const methods[] = {"GET", "HEAD",  "POST",   "DELETE",
                                          "PUT", "PATCH", "OPTIONS"};
    const struct route *rt = route_find(hreq_path(r));
    const char *path = rt ? rt->path : "(other)", *method = "(other)";
    snprintf(code, sizeof code, "%u", status < 1000 ? status : 0);
    if (a->oauth_server && authserver_owns(hreq_path(r)))
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
    app_trace_done(a, r, status, duration_ms);
    if (a->audit == NULL)
        return;
    app_client_ip(a, r, ip, sizeof ip);
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (strcmp(hreq_method(r), methods[i]) == 0)
            method = methods[i];
    struct audit_entry e = {.ip = ip,
                            .principal = principal,
                            .method = method,
                            .path = path,
                            .status = status,
                            .duration_ms = duration_ms,
                            .rpc_method = rpc,
                            .tool = tool,
                            .error = error};
    audit_log(a->audit, &e);
}
