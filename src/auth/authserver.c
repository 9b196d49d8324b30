/* authserver.c — the OAuth 2.1 authorization server, for connectors that cannot send a static
 * bearer header (claude.ai, ChatGPT, Claude Desktop, `auth: oauth` clients).
 *
 * The flow: a client registers (RFC 7591: public, or confidential with client_secret_post or
 * client_secret_basic: a secret /token and /revoke require, by either method), sends the
 * owner's browser to /authorize with a PKCE S256 challenge; the consent page names the client,
 * where it will send the code and the scopes (those it asked for that we know; unknown ones are
 * dropped), and needs the owner's passphrase (scrypt, rate limited per address) and a one-use
 * CSRF token that binds the POST to the request the page was made for (the parameters stay here,
 * the page only carries the token). The code (60 s, single use; a replay revokes what it
 * gave) is exchanged at /token with the verifier for an access token (1 h) and a refresh token
 * (30 d) that rotates on use; a rotated refresh token used again revokes its whole family.
 * Tokens are 256 random bits, stored only as hashes (oauthtokens.c), so they survive a restart.
 * Errors before the redirect URI is known good are shown, never redirected (no open redirect).
 * `hermes-mcp oauth clients revoke` edits the clients file while the server runs (storefile.h):
 * every request here first reads it again if it was replaced, and a registration is made under
 * its lock.
 *
 * This file holds the setup, the metadata (RFC 8414) and the route table; each endpoint is a
 * file of its own (as_register.c, as_authorize.c, as_consent.c, as_token.c), with the clients
 * table in as_clients.c and the pages and errors in as_reply.c. */
#include "as_internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cimd.h"
#include "httpd.h"
#include "log.h"
#include "mem.h"
#include "oauthpg.h"
#include "oauthtokens.h"
#include "ratelimit.h"
#include "storefile.h"
#include "verifier.h"

struct authserver *authserver_new(const struct authserver_opts *o, char *err, size_t errlen)
{
    struct authserver *as = xcalloc(1, sizeof *as);
    as->issuer = xstrdup(o->issuer);
    as->resource = xstrdup(o->resource);
    as->passphrase_path = xstrdup(o->passphrase_path);
    as->service = xstrdup(o->service ? o->service : "hermes-mcp");
    as->tokens = o->tokens;
    as->dcr = o->dcr;
    as->access_ttl_s = o->access_ttl_s ? o->access_ttl_s : AUTHSERVER_ACCESS_TTL;
    as->refresh_ttl_s = o->refresh_ttl_s ? o->refresh_ttl_s : AUTHSERVER_REFRESH_TTL;
    as->clients = xcalloc(AUTHSERVER_CLIENTS_MAX, sizeof *as->clients);
    as->rl_register = ratelimit_new(REGISTER_PER_MIN, 10000);
    as->clients_path = o->clients_path ? xstrdup(o->clients_path) : NULL;
    as->schemes = xstrdup(o->redirect_schemes ? o->redirect_schemes : AUTHSERVER_DEFAULT_SCHEMES);
    if (o->static_client_id) {
        snprintf(as->static_client.id, sizeof as->static_client.id, "%s", o->static_client_id);
        as->static_client.name = xasprintf("%s (the static client)", o->static_client_id);
        memcpy(as->static_secret_hash, o->static_secret_hash, 32);
    }
    as->upstream_known = o->upstream_known;
    as->upstream_arg = o->upstream_arg;
    as->cimd_on = o->cimd;
    as->cimd_ca_file = o->cimd_ca_file ? xstrdup(o->cimd_ca_file) : NULL;
    as->cimd_allow_hosts = o->cimd_allow_hosts ? xstrdup(o->cimd_allow_hosts) : NULL;
    if (as->clients_path && !as_load_clients(as, err, errlen)) {
        authserver_free(as);
        return NULL;
    }
    return as;
}

static void clients_changed(void *arg, const char *id)
{
    as_client_forget(arg, id);
}

void authserver_set_store(struct authserver *as, struct oauthpg *p)
{
    as->pg = p;
    if (p)
        oauthpg_on_clients(p, clients_changed, as);
}

bool authserver_client_add_doc(struct authserver *as, const char *doc)
{
    json_t *o = json_loads(doc, JSON_REJECT_DUPLICATES, NULL);
    bool ok = o && as_client_add_json(as, o);
    json_decref(o);
    return ok;
}

void authserver_set_loop(struct authserver *as, struct loop *l)
{
    /* Tests only (README, "Testing"): hold every check this much longer, on the worker. */
    const char *delay = getenv("HERMES_TEST_CONSENT_DELAY_MS");
    unsigned long ms = delay ? strtoul(delay, NULL, 10) : 0;
    as->loop = l;
    as->verifier = verifier_new(l, ms > 60000 ? 60000 : (unsigned)ms);
    if (as->verifier == NULL)
        log_warn("oauth: cannot set up the passphrase checking thread (%s); consent passphrases "
                 "are checked on the event loop",
                 strerror(errno));
    if (as->cimd_on) {
        struct cimd_opts co = {.ca_file = as->cimd_ca_file,
                               .allow_hosts = as->cimd_allow_hosts,
                               .schemes = as->schemes,
                               .rule = authserver_redirect_ok_in};
        as->cimd = cimd_new(l, &co);
    }
}

void authserver_free(struct authserver *as)
{
    if (as == NULL)
        return;
    as_free_clients(as->clients, as->nclients);
    free(as->static_client.name);
    free(as->schemes);
    explicit_bzero(as->static_secret_hash, sizeof as->static_secret_hash);
    verifier_free(as->verifier); /* cancels what is still checked: frees their records */
    explicit_bzero(as->consents, sizeof as->consents);
    ratelimit_free(as->rl_register);
    while (as->lookups) { /* httpd_shutdown answered their requests: only the records are left */
        struct lookup *k = as->lookups;
        as->lookups = k->next;
        cimd_cancel(k->fetch);
        free(k);
    }
    cimd_free(as->cimd);
    free(as->cimd_ca_file);
    free(as->cimd_allow_hosts);
    free(as->issuer);
    free(as->resource);
    free(as->passphrase_path);
    free(as->service);
    free(as->clients_path);
    free(as);
}

/* ---- metadata (RFC 8414) ---- */

static void metadata(struct authserver *as, struct hreq *r)
{
    json_t *doc = json_pack(
        "{s:s, s:s+, s:s+, s:[s], s:[ss], s:[s], s:[sss], s:o, s:b, s:[s]}", "issuer", as->issuer,
        "authorization_endpoint", as->issuer, "/authorize", "token_endpoint", as->issuer, "/token",
        "response_types_supported", "code", "grant_types_supported", "authorization_code",
        "refresh_token", "code_challenge_methods_supported", "S256",
        "token_endpoint_auth_methods_supported", "none", "client_secret_basic",
        "client_secret_post", "scopes_supported", authn_scopes_supported(),
        "authorization_response_iss_parameter_supported", 1, "response_modes_supported", "query");
    if (doc) {
        char *revoke = xasprintf("%s/revoke", as->issuer);
        json_object_set_new(doc, "revocation_endpoint", json_string(revoke));
        json_t *methods = json_object_get(doc, "token_endpoint_auth_methods_supported");
        json_object_set_new(doc, "revocation_endpoint_auth_methods_supported",
                            json_deep_copy(methods));
        free(revoke);
    }
    if (doc && as->cimd)
        json_object_set_new(doc, "client_id_metadata_document_supported", json_true());
    if (doc && as->dcr) {
        char *reg = xasprintf("%s/register", as->issuer);
        json_object_set_new(doc, "registration_endpoint", json_string(reg));
        free(reg);
    }
    as_reply_json(r, 200, doc); /* Access-Control-Allow-Origin: authserver_headers added it */
}

/* ---- routing ---- */

static void register_locked(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms)
{
    (void)now_ms;
    int lock = as->clients_path ? storefile_lock(as->clients_path) : -1;
    as_clients_sync(as); /* under the lock: the list a revocation just wrote */
    as_register(as, r, ip);
    storefile_unlock(lock);
}

static void token_body(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms)
{
    (void)ip, (void)now_ms;
    as_token_endpoint(as, r);
}

static void revoke_body(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms)
{
    (void)ip, (void)now_ms;
    as_revoke_endpoint(as, r);
}

static void metadata_get(struct authserver *as, struct hreq *r, const char *ip)
{
    (void)ip;
    metadata(as, r);
}

/* The endpoints, the one list authserver_owns, the CORS answers, the method checks and the
 * dispatch read. */
static const struct route {
    const char *path;
    const char *cors;  /* methods a page of another origin may call it with; NULL: none */
    const char *allow; /* the methods it takes; any other is 405 */
    bool dcr;          /* exists only with dynamic registration on (OAUTH_DCR) */
    bool limited;      /* draws on the per-address registration bucket (429 when empty) */
    /* A GET or HEAD, answered once the headers are in; NULL: GET is not taken. */
    void (*get)(struct authserver *as, struct hreq *r, const char *ip);
    /* A request still unanswered once its body is in (a POST; a GET waiting for a document). */
    void (*body)(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms);
} routes[] = {
    {"/.well-known/oauth-authorization-server", "GET, HEAD, OPTIONS", "GET, HEAD", false, false,
     metadata_get, NULL},
    {"/.well-known/openid-configuration", "GET, HEAD, OPTIONS", "GET, HEAD", false, false,
     metadata_get, NULL},
    /* No CORS: the owner's consent is no cross-origin API. */
    {"/authorize", NULL, "GET, HEAD, POST", false, false, as_authorize_get, as_authorize_post},
    {"/token", "POST, OPTIONS", "POST", false, false, NULL, token_body},
    {"/revoke", "POST, OPTIONS", "POST", false, false, NULL, revoke_body},
    {"/register", "POST, OPTIONS", "POST", true, true, NULL, register_locked},
};

static const struct route *route_of(const char *path)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(routes[i].path, path) == 0)
            return &routes[i];
    return NULL;
}

/* Whether method is one of list ("GET, HEAD"). */
static bool method_in(const char *method, const char *list)
{
    size_t n = strlen(method);
    for (const char *p = list; *p; p += strspn(p, ", ")) {
        size_t k = strcspn(p, ", ");
        if (k == n && strncmp(p, method, n) == 0)
            return true;
        p += k;
    }
    return false;
}

bool authserver_owns(const char *path)
{
    return route_of(path) != NULL;
}

bool authserver_cors(struct hreq *r, const char *methods)
{
    hreq_add_header(r, "Access-Control-Allow-Origin", "*");
    if (strcmp(hreq_method(r), "OPTIONS") != 0)
        return false;
    hreq_add_header(r, "Access-Control-Allow-Methods", methods);
    /* What the SDK sends: the protocol version on discovery, JSON to /register, Basic
     * credentials to /token. A fixed list, not the request's own echoed back. */
    hreq_add_header(r, "Access-Control-Allow-Headers",
                    "Authorization, Content-Type, MCP-Protocol-Version");
    hreq_add_header(r, "Access-Control-Max-Age", "600");
    hreq_reply(r, 204, NULL, "", 0);
    return true;
}

void authserver_headers(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms)
{
    const struct route *rt = route_of(hreq_path(r));
    const char *m = hreq_method(r);
    bool first;
    if (rt == NULL)
        return;
    bool on = !rt->dcr || as->dcr;
    if (on && rt->cors && authserver_cors(r, rt->cors))
        return;
    as_clients_sync(as);
    if (!on) {
        as_oauth_error(r, 404, OAUTH_INVALID_REQUEST,
                       "dynamic client registration is off "
                       "(OAUTH_DCR=0)");
    } else if (!method_in(m, rt->allow)) {
        hreq_add_header(r, "Allow", rt->allow);
        as_oauth_error(r, 405, OAUTH_INVALID_REQUEST, "method not allowed here");
    } else if (rt->get && (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)) {
        rt->get(as, r, ip);
    } else if (rt->limited && ratelimit_consume(as->rl_register, ip, now_ms, &first)) {
        hreq_add_header(r, "Retry-After", "60");
        as_oauth_error(r, 429, OAUTH_TEMPORARILY_UNAVAILABLE,
                       "too many registrations; wait a "
                       "minute");
    }
}

void authserver_request(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms)
{
    const struct route *rt = route_of(hreq_path(r));
    as_clients_sync(as);
    if (rt && rt->body)
        rt->body(as, r, ip, now_ms);
}
