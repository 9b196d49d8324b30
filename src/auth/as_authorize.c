/* as_authorize.c — GET /authorize: the request checked (client, redirect URI, PKCE, scopes,
 * resource), then the consent page; a client named by its metadata document's URL waits for
 * the document (cimd.h). */
#include "as_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cimd.h"
#include "clientdoc.h"
#include "clientmeta.h"
#include "crypto.h"
#include "form.h"
#include "httpd.h"
#include "log.h"
#include "mem.h"
#include "passphrase.h"
#include "principal.h"
#include "ratelimit.h"
#include "scopes.h"

/* The scope granted for the scope asked (RFC 6749 3.3), into out (outsz bytes): the known
 * ones (hermes:*, gateway:<upstream>) in the order asked; foreign ones, outside our hermes: and
 * gateway: namespaces, are dropped (claude.ai asks "claudeai", others "openid" or their own
 * vocabulary), and when none is left, or none was asked (ChatGPT on a reconnect), the defaults.
 * False when a scope of our namespaces does not exist (a typo such as hermes:raed, or a
 * gateway:<name> of an upstream this server does not have, must not turn into the defaults,
 * which may be wider than meant) or a known scope is named twice: client errors, not a wider
 * grant. */
static bool scopes_grant(const struct authserver *as, const char *asked, char *out, size_t outsz)
{
    char one[PARAM_MAX + 1];
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = asked; *p;) {
        p += strspn(p, " ");
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        snprintf(one, sizeof one, "%.*s", (int)n, p);
        p += n;
        if (!principal_scope_known(one)) {
            if (strncmp(one, SCOPE_HERMES_PREFIX, strlen(SCOPE_HERMES_PREFIX)) == 0 ||
                scope_family(one))
                return false;
            continue;
        }
        if (strncmp(one, SCOPE_GATEWAY_PREFIX, strlen(SCOPE_GATEWAY_PREFIX)) == 0 &&
            as->upstream_known &&
            !as->upstream_known(as->upstream_arg, one + strlen(SCOPE_GATEWAY_PREFIX)))
            return false;
        for (const char *q = out; *q; q += strcspn(q, " "), q += strspn(q, " "))
            if (strncmp(q, one, n) == 0 && (q[n] == ' ' || q[n] == '\0'))
                return false;
        if (len + (len > 0) + n >= outsz)
            return false; /* not reached: out is as large as what was asked */
        len += (size_t)snprintf(out + len, outsz - len, "%s%s", len ? " " : "", one);
    }
    if (len == 0)
        snprintf(out, outsz, "%s", AUTHN_DEFAULT_SCOPES);
    return true;
}

/* A query parameter (httpd leaves it escaped), at most PARAM_MAX bytes decoded; "" when
 * absent. False when too long or badly escaped. */
static bool query_param(struct hreq *r, const char *name, char out[PARAM_MAX + 1])
{
    const char *v = hreq_query(r, name);
    size_t n;
    out[0] = '\0';
    return v == NULL || form_decode(v, strlen(v), out, PARAM_MAX + 1, &n);
}

static bool challenge_ok(const char *c)
{
    size_t n = strlen(c);
    return n == 43 &&
           strspn(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

/* A free consent slot for addr; NULL when addr holds CONSENTS_PER_ADDR open ones already (*full
 * false) or the table is full (*full true). A live consent is never evicted: it may be the
 * owner's, open in a tab, and whoever fills the table must not make the right passphrase fail. */
static struct consent *new_consent(struct authserver *as, time_t now, const char *addr, bool *full)
{
    struct consent *slot = NULL;
    unsigned mine = 0;
    for (size_t i = 0; i < CONSENTS_MAX; i++) {
        struct consent *c = &as->consents[i];
        if (c->expires <= now)
            slot = slot ? slot : c;
        else if (strcmp(c->addr, addr) == 0)
            mine++;
    }
    *full = slot == NULL;
    return mine < CONSENTS_PER_ADDR ? slot : NULL;
}

struct consent *as_find_consent(struct authserver *as, const char *csrf, time_t now)
{
    if (strlen(csrf) != 64)
        return NULL;
    for (size_t i = 0; i < CONSENTS_MAX; i++) {
        struct consent *c = &as->consents[i];
        if (c->expires > now && crypto_equal(c->csrf, csrf, 64))
            return c;
    }
    return NULL;
}

void as_consent_page(struct authserver *as, struct hreq *r, const struct consent *c,
                     const char *problem)
{
    const struct client *cl = as_find_client(as, c->client_id);
    char host[PARAM_MAX + 1];
    struct buf b;
    clientmeta_redirect_host(c->redirect_uri, host, sizeof host);
    buf_init(&b, 0);
    as_page_start(&b, "Allow access?");
    if (problem) {
        buf_appends(&b, "<p role=\"alert\"><strong>");
        as_html_escape(&b, problem);
        buf_appends(&b, "</strong></p>");
    }
    buf_appends(&b, "<p>The application <strong id=\"client\">");
    as_html_escape(&b, cl ? cl->name : *c->client_name ? c->client_name : c->client_id);
    if (*c->client_host) { /* a metadata document: its name is only what that host says */
        buf_appends(&b, "</strong> (as described by <strong id=\"clienthost\">");
        as_html_escape(&b, c->client_host);
        buf_appends(&b, "</strong>)");
    } else {
        buf_appends(&b, "</strong>");
    }
    buf_appends(&b, " asks to use ");
    as_html_escape(&b, as->service);
    buf_appends(&b, " on your behalf. Its answer goes to <strong id=\"host\">");
    as_html_escape(&b, host);
    buf_appends(&b, "</strong>.</p><p>It asks for:</p><ul id=\"scopes\">");
    for (const char *p = c->scope; *p;) {
        p += strspn(p, " ");
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        char one[PARAM_MAX + 1];
        snprintf(one, sizeof one, "%.*s", (int)n, p);
        buf_appends(&b, "<li><code>");
        as_html_escape(&b, one);
        buf_appends(&b, "</code></li>");
        p += n;
    }
    buf_appends(&b, "</ul><form method=\"post\" action=\"/authorize\">"
                    "<input type=\"hidden\" name=\"csrf\" value=\"");
    buf_appends(&b, c->csrf);
    buf_appends(&b, "\"><p><label>Owner passphrase <input type=\"password\" name=\"passphrase\" "
                    "autocomplete=\"current-password\" required autofocus></label></p>"
                    "<p><button type=\"submit\" name=\"action\" value=\"approve\">Allow</button> "
                    "<button type=\"submit\" name=\"action\" value=\"deny\" formnovalidate>Deny"
                    "</button></p></form>");
    as_reply_page(r, problem ? 403 : 200, &b);
}

/* The parameters of a GET /authorize, decoded. */
struct authz_query {
    char client_id[PARAM_MAX + 1], redirect_uri[PARAM_MAX + 1], state[PARAM_MAX + 1];
    char response_type[PARAM_MAX + 1], challenge[PARAM_MAX + 1], method[PARAM_MAX + 1];
    char scope[PARAM_MAX + 1], resource[PARAM_MAX + 1];
    char addr[48]; /* the asking address (ratelimit_key); not a parameter */
};

static bool authz_query_read(struct hreq *r, struct authz_query *q)
{
    return query_param(r, "client_id", q->client_id) &&
           query_param(r, "redirect_uri", q->redirect_uri) && query_param(r, "state", q->state) &&
           query_param(r, "response_type", q->response_type) &&
           query_param(r, "code_challenge", q->challenge) &&
           query_param(r, "code_challenge_method", q->method) &&
           query_param(r, "scope", q->scope) && query_param(r, "resource", q->resource);
}

/* The client /authorize deals with: a registered one (or the static one, any_redirect), or
 * one described by a metadata document (host: where it is published). */
struct client_view {
    const char *id, *name, *host;
    char *const *redirects;
    size_t nredirects;
    bool any_redirect;
};

static void authorize_client(struct authserver *as, struct hreq *r, struct authz_query *q,
                             const struct client_view *cl)
{
    char line[PASSPHRASE_LINE_MAX], err[400];
    char *redirect_uri = q->redirect_uri, *state = q->state, *challenge = q->challenge;
    char scope[PARAM_MAX + 1];
    bool known = false;
    bool redirect_sent = *redirect_uri != '\0';
    if (*redirect_uri == '\0' && cl->nredirects == 1)
        snprintf(redirect_uri, sizeof q->redirect_uri, "%s", cl->redirects[0]);
    for (size_t i = 0; i < cl->nredirects; i++)
        known = known || clientmeta_redirect_matches(cl->redirects[i], redirect_uri);
    /* The static client (OAUTH_CLIENT_ID) registered no URIs: any that passes the scheme rules; the
     * code is of no use without its secret, and the page names the host it goes to. */
    if (cl->any_redirect)
        known = authserver_redirect_ok_in(redirect_uri, as->schemes);
    if (!known) {
        as_error_page(r, 400, "Wrong redirect address",
                      "The redirect_uri is not one this application registered, so no answer is "
                      "sent to it.");
        return;
    }
    /* From here errors go back to the application, which can tell its user. */
    if (strcmp(q->response_type, "code") != 0) {
        as_redirect_error(as, r, redirect_uri, state, OAUTH_UNSUPPORTED_RESPONSE_TYPE, NULL);
        return;
    }
    if (strcmp(q->method, "S256") != 0 || !challenge_ok(challenge)) {
        as_redirect_error(as, r, redirect_uri, state, OAUTH_INVALID_REQUEST,
                          "PKCE with code_challenge_method S256 is required");
        return;
    }
    if (!scopes_grant(as, q->scope, scope, sizeof scope)) {
        as_redirect_error(as, r, redirect_uri, state, OAUTH_INVALID_SCOPE, NULL);
        return;
    }
    if (*q->resource && strcmp(q->resource, as->resource) != 0) {
        as_redirect_error(as, r, redirect_uri, state, OAUTH_INVALID_TARGET, NULL);
        return;
    }
    if (as->pg == NULL && !passphrase_load(as->passphrase_path, line, err, sizeof err)) {
        log_warn("oauth: consent refused: %s", err);
        as_error_page(r, 503, "No consent passphrase set",
                      "The owner has not set a consent passphrase, so no application can be "
                      "allowed yet. On the server, run: hermes-mcp oauth passwd");
        return;
    }
    explicit_bzero(line, sizeof line);
    time_t now = time(NULL);
    bool head = strcmp(hreq_method(r), "HEAD") == 0, full = false;
    /* HEAD shows the page without opening a consent (it could never be answered). */
    bool own = head || as->pg; /* not a slot of the table: stored (as->pg) or never kept */
    struct consent *c = own ? xcalloc(1, sizeof *c) : new_consent(as, now, q->addr, &full);
    if (c == NULL) {
        log_warn("oauth: consent page refused to %s: %s", q->addr,
                 full ? "all consent slots are open" : "too many open from this address");
        hreq_add_header(r, "Retry-After", "60");
        as_error_page(r, full ? 503 : 429, full ? "Busy" : "Too many open requests",
                      full ? "Too many applications are waiting for the owner's answer; try "
                             "again in a few minutes."
                           : "Too many authorization requests from this address are waiting for "
                             "an answer; answer or close them, or try again in a few minutes.");
        return;
    }
    memset(c, 0, sizeof *c);
    if (!crypto_random_hex(c->csrf, 32)) {
        if (own)
            free(c);
        as_error_page(r, 500, "Server error", "The random generator failed.");
        return;
    }
    snprintf(c->client_id, sizeof c->client_id, "%s", cl->id); /* the registered id: it matched */
    /* The name too: the page may be shown again by a replica that has not read the client. */
    snprintf(c->client_name, sizeof c->client_name, "%s", cl->name);
    if (cl->host)
        snprintf(c->client_host, sizeof c->client_host, "%s", cl->host);
    snprintf(c->redirect_uri, sizeof c->redirect_uri, "%s", redirect_uri);
    c->redirect_sent = redirect_sent;
    snprintf(c->state, sizeof c->state, "%s", state);
    snprintf(c->challenge, sizeof c->challenge, "%s", challenge);
    snprintf(c->scope, sizeof c->scope, "%s", scope);
    snprintf(c->addr, sizeof c->addr, "%s", q->addr);
    c->expires = now + CONSENT_TTL;
    if (as->pg && !head)
        as_pg_consent_show(as, r, c);
    else
        as_consent_page(as, r, c, NULL);
    if (own) {
        explicit_bzero(c, sizeof *c);
        free(c);
    }
}

static void bad_query_page(struct hreq *r)
{
    as_error_page(r, 400, "Bad request",
                  "A parameter of this request is too long or badly "
                  "escaped.");
}

static void document_authorize(struct authserver *as, struct hreq *r, struct authz_query *q,
                               const struct clientdoc *d)
{
    struct client_view v = {.id = q->client_id,
                            .name = d->name,
                            .host = d->host,
                            .redirects = d->redirects,
                            .nredirects = d->nredirects};
    authorize_client(as, r, q, &v);
}

static void document_refused(struct hreq *r, const char *why)
{
    struct buf b;
    buf_init(&b, 0);
    as_page_start(&b, "Application description refused");
    buf_appends(&b, "<p>This application names itself by the address of its description "
                    "(a client ID metadata document), which this server will not use:</p>"
                    "<p id=\"reason\">");
    as_html_escape(&b, why);
    buf_appends(&b, ".</p>");
    as_reply_page(r, 400, &b);
}

void as_authorize_get(struct authserver *as, struct hreq *r, const char *ip)
{
    struct authz_query q;
    /* With a store, from the body callback only (as_authorize_fetch): its client may have to be
     * read, and the consent is stored before its page is answered. */
    if (as->pg && as->client_asked != r)
        return;
    if (!authz_query_read(r, &q)) {
        bad_query_page(r);
        return;
    }
    ratelimit_key(ip, q.addr, sizeof q.addr);
    if (clientdoc_is_url(q.client_id)) {
        const struct clientdoc *d = as->cimd ? cimd_cached(as->cimd, q.client_id) : NULL;
        if (as->cimd == NULL)
            as_error_page(r, 400, "Unknown application",
                          "This server does not take client metadata documents (OAUTH_CIMD=0); "
                          "the application should register instead.");
        else if (d)
            document_authorize(as, r, &q, d);
        /* else unanswered: authserver_request fetches the document (as_authorize_fetch) */
        return;
    }
    const struct client *cl = as_find_client(as, q.client_id);
    if (cl == NULL) {
        as_error_page(r, 400, "Unknown application",
                      "This application is not registered with this server; it should register "
                      "again.");
        return;
    }
    struct client_view v = {.id = cl->id,
                            .name = cl->name,
                            .redirects = cl->redirects,
                            .nredirects = cl->nredirects,
                            .any_redirect = cl == &as->static_client};
    authorize_client(as, r, &q, &v);
}

static void lookup_unlink(struct authserver *as, struct lookup *k)
{
    for (struct lookup **p = &as->lookups; *p; p = &(*p)->next)
        if (*p == k) {
            *p = k->next;
            return;
        }
}

static void on_lookup_gone(struct hreq *r, void *arg)
{
    struct lookup *k = arg;
    (void)r;
    lookup_unlink(k->as, k);
    cimd_cancel(k->fetch);
    free(k);
}

static void on_document(void *arg, const struct clientdoc *d, const char *error)
{
    struct lookup *k = arg;
    struct authserver *as = k->as;
    struct hreq *r = k->r;
    struct authz_query q;
    char addr[48];
    snprintf(addr, sizeof addr, "%s", k->addr);
    lookup_unlink(as, k);
    free(k);
    if (d == NULL)
        document_refused(r, error);
    else if (!authz_query_read(r, &q))
        bad_query_page(r);
    else {
        snprintf(q.addr, sizeof q.addr, "%s", addr);
        document_authorize(as, r, &q, d);
    }
}

/* As GET /authorize, its client asked for: not found means unknown. */
static void authorize_again(struct authserver *as, struct hreq *r, const char *ip)
{
    as->client_asked = r;
    as_authorize_get(as, r, ip);
    as->client_asked = NULL;
}

/* A GET /authorize whose client's document is not cached: fetched on the loop, the request
 * waits (suspended) and is answered from on_document. */
void as_authorize_fetch(struct authserver *as, struct hreq *r, const char *ip)
{
    struct authz_query q;
    char err[300];
    if (!authz_query_read(r, &q)) {
        bad_query_page(r);
        return;
    }
    bool url = clientdoc_is_url(q.client_id);
    if (as->pg && !(url && as->cimd && !cimd_cached(as->cimd, q.client_id))) {
        if (url || as_pg_client_ready(as, r, q.client_id, ip, authorize_again))
            authorize_again(as, r, ip);
        return;
    }
    if (cimd_busy(as->cimd)) {
        hreq_add_header(r, "Retry-After", "5");
        as_error_page(r, 503, "Busy",
                      "Too many application descriptions are being fetched; try "
                      "again in a moment.");
        return;
    }
    struct lookup *k = xcalloc(1, sizeof *k);
    k->as = as;
    k->r = r;
    ratelimit_key(ip, k->addr, sizeof k->addr);
    k->fetch = cimd_fetch(as->cimd, q.client_id, on_document, k, err, sizeof err);
    if (k->fetch == NULL) {
        free(k);
        document_refused(r, err);
        return;
    }
    k->next = as->lookups;
    as->lookups = k;
    hreq_on_abort(r, on_lookup_gone, k);
}
