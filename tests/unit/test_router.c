/* Unit tests for src/app/router.c: which page each request reaches, and what is refused on the
 * way (no or a wrong token, a scope the credential lacks, a method the path does not take, an
 * unknown path, an empty rate bucket, a token in the query string), the client address behind
 * a trusted proxy, the protected resource metadata, and the metrics and audit line of a finished
 * request. The router is linked as it is, with authn.c and the real principals; the pages it
 * hands requests to (probes, the engine, the authorization server) are stand-ins that record the
 * call, and a request is a struct hreq of this file (no libmicrohttpd, no socket). */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <cmocka.h>

#include "app_internal.h"
#include "audit.h"
#include "authserver.h"
#include "config.h"
#include "httpd.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "metrics.h"
#include "ratelimit.h"
#include "scopes.h"

/* "foo" and "bar" hashed: a reader and an administrator of the tokens file. */
#define H_FOO "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
#define H_BAR "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"

enum page { NONE, HEALTH, HEALTHZ, READYZ, METRICS, MCP_HEADERS, MCP_BODY, AS_HEADERS, AS_BODY };

struct hreq {
    const char *method, *path, *peer, *query_token;
    const char *headers[4][2]; /* {name, value}; several of one name are several lines */
    unsigned status;
    char *reply;
    char allow[64], retry_after[16], www_authenticate[400];
    enum page page;
    void *user;
    void (*user_free)(void *);
};

/* ---- the hreq_* functions router.c and authn.c call (httpd.h) ---- */

const char *hreq_method(const struct hreq *r)
{
    return r->method ? r->method : "GET";
}
const char *hreq_path(const struct hreq *r)
{
    return r->path;
}
const char *hreq_peer(const struct hreq *r)
{
    return r->peer ? r->peer : "127.0.0.1";
}
const char *hreq_query(const struct hreq *r, const char *name)
{
    return strcmp(name, "access_token") == 0 ? r->query_token : NULL;
}
const char *hreq_header(const struct hreq *r, const char *name)
{
    for (size_t i = 0; i < 4 && r->headers[i][0]; i++)
        if (strcasecmp(name, r->headers[i][0]) == 0)
            return r->headers[i][1];
    return NULL;
}
const char *hreq_header_last(const struct hreq *r, const char *name)
{
    const char *last = NULL;
    for (size_t i = 0; i < 4 && r->headers[i][0]; i++)
        if (strcasecmp(name, r->headers[i][0]) == 0)
            last = r->headers[i][1];
    return last;
}
void hreq_add_header(struct hreq *r, const char *name, const char *value)
{
    if (strcasecmp(name, "Allow") == 0)
        snprintf(r->allow, sizeof r->allow, "%s", value);
    else if (strcasecmp(name, "Retry-After") == 0)
        snprintf(r->retry_after, sizeof r->retry_after, "%s", value);
    else if (strcasecmp(name, "WWW-Authenticate") == 0)
        snprintf(r->www_authenticate, sizeof r->www_authenticate, "%s", value);
}
void hreq_reply_take(struct hreq *r, unsigned status, const char *ct, char *body, size_t len)
{
    (void)ct;
    assert_null(r->reply); /* one answer per request */
    r->status = status;
    r->reply = strndup(body ? body : "", len);
    free(body);
}
void hreq_reply(struct hreq *r, unsigned status, const char *ct, const char *body, size_t len)
{
    hreq_reply_take(r, status, ct, strndup(body, len), len);
}
void hreq_set_user(struct hreq *r, void *user, void (*free_fn)(void *user))
{
    r->user = user;
    r->user_free = free_fn;
}
void *hreq_user(const struct hreq *r)
{
    return r->user;
}
/* authn holds a request only for an identity provider's keys: none here. */
void hreq_hold(struct hreq *r)
{
    (void)r;
    fail_msg("no request is held without OIDC_ISSUER_URL");
}
void hreq_release(struct hreq *r)
{
    (void)r;
}
void hreq_on_abort(struct hreq *r, httpd_cb *cb, void *arg)
{
    (void)r, (void)cb, (void)arg;
}

/* ---- what the router hands requests to, recorded ---- */

static void note_free(void *p)
{
    struct rpc_note *n = p;
    authn_who_cleanup(&n->id);
    free(n);
}
struct rpc_note *app_note(struct hreq *r)
{
    if (r->user == NULL)
        hreq_set_user(r, xcalloc(1, sizeof(struct rpc_note)), note_free);
    return r->user;
}
static void page(struct hreq *r, enum page p)
{
    r->page = p;
    hreq_reply(r, 200, "text/plain", "ok", 2);
}
void app_health_page(struct app *a, struct hreq *r)
{
    (void)a;
    page(r, HEALTH);
}
void app_healthz_page(struct app *a, struct hreq *r)
{
    (void)a;
    page(r, HEALTHZ);
}
void app_readyz_page(struct app *a, struct hreq *r)
{
    (void)a;
    page(r, READYZ);
}
void app_metrics_page(struct app *a, struct hreq *r)
{
    (void)a;
    page(r, METRICS);
}
void mcp_http_headers(struct mcp_server *s, struct hreq *r)
{
    (void)s;
    r->page = MCP_HEADERS;
}
void mcp_http_request(struct mcp_server *s, struct hreq *r)
{
    (void)s;
    page(r, MCP_BODY);
}
bool authserver_owns(const char *path)
{
    return strcmp(path, "/token") == 0;
}
bool authserver_cors(struct hreq *r, const char *methods)
{
    (void)methods;
    if (strcmp(hreq_method(r), "OPTIONS") != 0)
        return false;
    hreq_reply(r, 204, NULL, "", 0);
    return true;
}
void authserver_headers(struct authserver *as, struct hreq *r, const char *ip, uint64_t now)
{
    (void)as, (void)ip, (void)now;
    r->page = AS_HEADERS;
}
void authserver_request(struct authserver *as, struct hreq *r, const char *ip, uint64_t now)
{
    (void)as, (void)ip, (void)now;
    page(r, AS_BODY);
}

/* ---- a server of the router's ---- */

struct fixture {
    struct config cfg;
    struct app_opts o;
    struct app a;
};

/* A server with authentication (the tokens foo: hermes:read, bar: hermes:admin), OAuth when
 * issuer is set, a rate limit of per_min a minute per address when not 0. */
static struct fixture *server(const char *issuer, unsigned per_min, const char *proxies)
{
    static const char tokens[] = "tokens:\n"
                                 "  - name: reader\n    sha256: " H_FOO "\n"
                                 "    scopes: [" SCOPE_READ "]\n"
                                 "  - name: ops\n    sha256: " H_BAR "\n"
                                 "    scopes: [" SCOPE_ADMIN "]\n";
    char err[200];
    struct fixture *f = xcalloc(1, sizeof *f);
    f->cfg.auth = true;
    f->cfg.oauth_issuer = issuer ? xstrdup(issuer) : NULL;
    f->cfg.trusted_proxies = proxies ? xstrdup(proxies) : NULL;
    f->cfg.rate_per_min = per_min;
    f->o.cfg = &f->cfg;
    f->o.service = "hermes-mcp";
    f->a.o = &f->o;
    f->a.cfg = &f->cfg;
    f->a.loop = loop_new();
    struct principals *who = tokens_parse(tokens, strlen(tokens), err, sizeof err);
    assert_non_null(who);
    f->a.resource_url = app_resource_url(&f->cfg);
    f->a.metadata_url = app_metadata_url(f->a.resource_url);
    f->a.authn = authn_new(
        &(struct authn_opts){.required = true, .issuer = issuer, .metadata_url = f->a.metadata_url},
        who);
    if (per_min)
        f->a.rl = ratelimit_new(per_min, 100);
    f->a.http_requests = metric_new("http", "h", METRIC_COUNTER, NULL, 0);
    f->a.rpc_requests = metric_new("rpc", "r", METRIC_COUNTER, NULL, 0);
    f->a.rpc_duration = metric_new("dur", "d", METRIC_HISTOGRAM, NULL, 0);
    f->a.principal_requests = metric_new("principal", "p", METRIC_COUNTER, NULL, 0);
    return f;
}

static void server_free(struct fixture *f)
{
    authn_free(f->a.authn);
    free(f->a.resource_url);
    free(f->a.metadata_url);
    ratelimit_free(f->a.rl);
    loop_free(f->a.loop);
    metric_free(f->a.http_requests);
    metric_free(f->a.rpc_requests);
    metric_free(f->a.rpc_duration);
    metric_free(f->a.principal_requests);
    free(f->cfg.oauth_issuer);
    free(f->cfg.trusted_proxies);
    free(f);
}

/* r through the router as httpd would take it: the headers, the body when none answered, the
 * end. */
static void serve(struct fixture *f, struct hreq *r)
{
    app_on_headers(r, &f->a);
    if (r->reply == NULL)
        app_on_request(r, &f->a);
    app_on_done(r, r->status, 1, &f->a);
}

static void done(struct hreq *r)
{
    if (r->user_free)
        r->user_free(r->user);
    free(r->reply);
    memset(r, 0, sizeof *r);
}

static void expect_error(const struct hreq *r, unsigned status, const char *name)
{
    assert_int_equal(r->status, status);
    json_t *body = json_loads(r->reply, 0, NULL);
    assert_non_null(body);
    assert_string_equal(json_string_value(json_object_get(body, "error")), name);
    assert_true(json_is_string(json_object_get(body, "message")));
    json_decref(body);
}

static void probes_are_public_and_take_get(void **state)
{
    (void)state;
    struct fixture *f = server(NULL, 0, NULL);
    struct hreq r = {.path = "/health"};
    serve(f, &r);
    assert_int_equal(r.page, HEALTH);
    done(&r);
    r = (struct hreq){.method = "HEAD", .path = "/readyz"};
    serve(f, &r);
    assert_int_equal(r.page, READYZ);
    done(&r);
    r = (struct hreq){.method = "POST", .path = "/healthz"};
    serve(f, &r);
    assert_int_equal(r.page, NONE);
    expect_error(&r, 405, "method_not_allowed");
    assert_string_equal(r.allow, "GET, HEAD");
    done(&r);
    server_free(f);
}

static void mcp_needs_a_known_token(void **state)
{
    (void)state;
    struct fixture *f = server(NULL, 0, NULL);
    struct hreq r = {.method = "POST", .path = "/mcp"};
    serve(f, &r);
    expect_error(&r, 401, "unauthorized");
    assert_non_null(strstr(r.www_authenticate, "Bearer realm=\"hermes-mcp\""));
    assert_int_equal(f->a.auth_failures, 1);
    done(&r);
    r = (struct hreq){
        .method = "POST", .path = "/mcp", .headers = {{"Authorization", "Bearer baz"}}};
    serve(f, &r);
    expect_error(&r, 401, "unauthorized");
    assert_non_null(strstr(r.www_authenticate, "error=\"invalid_token\""));
    done(&r);
    r = (struct hreq){
        .method = "POST", .path = "/mcp", .headers = {{"Authorization", "Bearer foo"}}};
    serve(f, &r);
    assert_int_equal(r.page, MCP_BODY); /* the engine had the headers, then the body */
    assert_int_equal(r.status, 200);
    assert_true(metric_value(f->a.principal_requests, "principal=\"reader\"") == 1);
    assert_true(metric_value(f->a.http_requests, "path=\"/mcp\",code=\"200\"") == 1);
    assert_true(metric_value(f->a.http_requests, "path=\"/mcp\",code=\"401\"") == 2);
    done(&r);
    server_free(f);
}

static void metrics_need_admin(void **state)
{
    (void)state;
    struct fixture *f = server(NULL, 0, NULL);
    struct hreq r = {.path = "/metrics", .headers = {{"Authorization", "Bearer foo"}}};
    serve(f, &r);
    expect_error(&r, 403, "forbidden");
    assert_int_equal(r.page, NONE);
    done(&r);
    r = (struct hreq){.path = "/metrics", .headers = {{"Authorization", "Bearer bar"}}};
    serve(f, &r);
    assert_int_equal(r.page, METRICS);
    done(&r);
    r = (struct hreq){.path = "/metrics"};
    serve(f, &r);
    expect_error(&r, 401, "unauthorized");
    done(&r);
    server_free(f);
}

/* The audit log's file, read whole (audit_free has written what was queued). */
static char *read_all(const char *path)
{
    static char text[4096];
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    size_t n = fread(text, 1, sizeof text - 1, fp);
    text[n] = '\0';
    fclose(fp);
    return text;
}

static void unknown_paths_are_404_and_not_logged_verbatim(void **state)
{
    (void)state;
    struct fixture *f = server(NULL, 0, NULL);
    char audit_path[] = "/tmp/test_router_audit_XXXXXX";
    int fd = mkstemp(audit_path);
    assert_true(fd >= 0);
    close(fd);
    f->a.audit = audit_new(audit_path, 1 << 20, 0);
    /* stderr into a file around the request: nothing there may carry the path either. */
    FILE *err = tmpfile();
    int saved = dup(STDERR_FILENO);
    assert_true(err && saved >= 0);
    fflush(stderr);
    assert_true(dup2(fileno(err), STDERR_FILENO) >= 0);
    struct hreq r = {.path = "/secret\"path", .headers = {{"Authorization", "Bearer bar"}}};
    serve(f, &r);
    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    expect_error(&r, 404, "not_found");
    assert_true(metric_value(f->a.http_requests, "path=\"(other)\",code=\"404\"") == 1);
    done(&r);
    audit_free(f->a.audit, 1000);
    f->a.audit = NULL;
    const char *line = read_all(audit_path);
    unlink(audit_path);
    assert_non_null(strstr(line, "\"path\":\"(other)\",\"status\":404"));
    assert_null(strstr(line, "secret"));
    char said[1024];
    rewind(err);
    size_t n = fread(said, 1, sizeof said - 1, err);
    said[n] = '\0';
    fclose(err);
    assert_null(strstr(said, "secret"));
    /* The OAuth-only routes do not exist without OAuth. */
    r = (struct hreq){.path = "/.well-known/oauth-protected-resource"};
    serve(f, &r);
    expect_error(&r, 404, "not_found");
    done(&r);
    r = (struct hreq){.path = "/token", .method = "POST"};
    serve(f, &r);
    expect_error(&r, 404, "not_found");
    done(&r);
    server_free(f);
}

static void resource_metadata_with_oauth(void **state)
{
    (void)state;
    struct fixture *f = server("https://example.test", 0, NULL);
    struct hreq r = {.path = "/.well-known/oauth-protected-resource/mcp"};
    serve(f, &r);
    assert_int_equal(r.status, 200);
    json_t *doc = json_loads(r.reply, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "resource")),
                        "https://example.test/mcp");
    json_t *scopes = json_object_get(doc, "scopes_supported");
    assert_int_equal(json_array_size(scopes), 3);
    assert_string_equal(json_string_value(json_array_get(scopes, 0)), SCOPE_READ);
    assert_string_equal(json_string_value(json_array_get(scopes, 1)), SCOPE_TASK);
    assert_string_equal(json_string_value(json_array_get(scopes, 2)), SCOPE_ADMIN);
    json_decref(doc);
    done(&r);
    r = (struct hreq){.method = "DELETE", .path = "/.well-known/oauth-protected-resource"};
    serve(f, &r);
    expect_error(&r, 405, "method_not_allowed");
    assert_string_equal(r.allow, "GET, HEAD");
    done(&r);
    r = (struct hreq){.method = "OPTIONS", .path = "/.well-known/oauth-protected-resource"};
    serve(f, &r);
    assert_int_equal(r.status, 204); /* CORS preflight, answered by the authorization server */
    done(&r);
    /* With OAuth a token in the query string is refused, and the 401 names the metadata. */
    r = (struct hreq){.method = "POST", .path = "/mcp", .query_token = "foo"};
    serve(f, &r);
    expect_error(&r, 400, "invalid_request");
    done(&r);
    r = (struct hreq){.method = "POST", .path = "/mcp"};
    serve(f, &r);
    expect_error(&r, 401, "unauthorized");
    assert_non_null(strstr(r.www_authenticate, "resource_metadata=\"https://example.test/"
                                               ".well-known/oauth-protected-resource/mcp\""));
    assert_non_null(strstr(r.www_authenticate, "scope=\"" SCOPES_DEFAULT "\""));
    done(&r);
    /* The authorization server's paths go to it, past the router's token check. */
    f->a.oauth_server = (struct authserver *)f; /* only compared with NULL here */
    r = (struct hreq){.method = "POST", .path = "/token"};
    serve(f, &r);
    assert_int_equal(r.page, AS_BODY);
    done(&r);
    server_free(f);
}

static void rate_limits_by_address(void **state)
{
    (void)state;
    struct fixture *f = server(NULL, 2, NULL);
    struct hreq r;
    for (int i = 0; i < 2; i++) {
        r = (struct hreq){.path = "/nowhere"};
        serve(f, &r);
        expect_error(&r, 404, "not_found");
        done(&r);
    }
    r = (struct hreq){.path = "/nowhere"};
    serve(f, &r);
    expect_error(&r, 429, "rate_limited");
    assert_true(atoi(r.retry_after) > 0);
    assert_int_equal(f->a.rate_limited, 1);
    done(&r);
    /* Another address has its own bucket; a scraper with the token is not limited at all. */
    r = (struct hreq){.path = "/nowhere", .peer = "127.0.0.2"};
    serve(f, &r);
    expect_error(&r, 404, "not_found");
    done(&r);
    r = (struct hreq){.path = "/metrics", .headers = {{"Authorization", "Bearer bar"}}};
    serve(f, &r);
    assert_int_equal(r.page, METRICS);
    done(&r);
    /* Probes draw on no bucket. */
    r = (struct hreq){.path = "/healthz"};
    serve(f, &r);
    assert_int_equal(r.page, HEALTHZ);
    done(&r);
    server_free(f);
}

static void a_trusted_proxy_names_the_client(void **state)
{
    (void)state;
    struct fixture *f = server(NULL, 1, "10.0.0.1");
    struct hreq r = {
        .path = "/x", .peer = "10.0.0.1", .headers = {{"X-Forwarded-For", "192.0.2.7, 10.0.0.1"}}};
    serve(f, &r);
    expect_error(&r, 404, "not_found");
    done(&r);
    /* Another client behind the same proxy: its own bucket. */
    r = (struct hreq){
        .path = "/x", .peer = "10.0.0.1", .headers = {{"X-Forwarded-For", "192.0.2.8"}}};
    serve(f, &r);
    expect_error(&r, 404, "not_found");
    done(&r);
    /* The first again: its bucket is empty, whatever line of its own it sends first. */
    r = (struct hreq){
        .path = "/x",
        .peer = "10.0.0.1",
        .headers = {{"X-Forwarded-For", "198.51.100.1"}, {"X-Forwarded-For", "192.0.2.7"}}};
    serve(f, &r);
    expect_error(&r, 429, "rate_limited");
    done(&r);
    /* An untrusted peer's X-Forwarded-For is not believed: it is the peer that is counted. */
    r = (struct hreq){
        .path = "/x", .peer = "203.0.113.9", .headers = {{"X-Forwarded-For", "192.0.2.99"}}};
    serve(f, &r);
    expect_error(&r, 404, "not_found");
    done(&r);
    r = (struct hreq){
        .path = "/x", .peer = "203.0.113.9", .headers = {{"X-Forwarded-For", "192.0.2.100"}}};
    serve(f, &r);
    expect_error(&r, 429, "rate_limited");
    done(&r);
    server_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(probes_are_public_and_take_get),
        cmocka_unit_test(mcp_needs_a_known_token),
        cmocka_unit_test(metrics_need_admin),
        cmocka_unit_test(unknown_paths_are_404_and_not_logged_verbatim),
        cmocka_unit_test(resource_metadata_with_oauth),
        cmocka_unit_test(rate_limits_by_address),
        cmocka_unit_test(a_trusted_proxy_names_the_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
