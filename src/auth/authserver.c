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
 * Tokens are 256 random bits, stored only as hashes (tokenstore.c), so they survive a restart.
 * Errors before the redirect URI is known good are shown, never redirected (no open redirect).
 * `hermes-mcp oauth clients revoke` edits the clients file while the server runs (storefile.h):
 * every request here first reads it again if it was replaced, and a registration is made under
 * its lock. */
#include "authserver.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "atomicfile.h"
#include "buf.h"
#include "cimd.h"
#include "clientdoc.h"
#include "clientmeta.h"
#include "crypto.h"
#include "form.h"
#include "httpd.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "passphrase.h"
#include "principal.h"
#include "ratelimit.h"
#include "readfile.h"
#include "storefile.h"
#include "strmap.h"
#include "tokenstore.h"
#include "verifier.h"

#define PARAM_MAX CLIENTMETA_URI_MAX /* any one parameter: client id, redirect URI, state... */
#define REDIRECTS_MAX CLIENTMETA_REDIRECTS_MAX /* redirect URIs of one client */
#define CLIENT_NAME_MAX CLIENTMETA_NAME_MAX
#define CONSENTS_MAX 256     /* consent pages shown and not yet answered */
#define CONSENT_TTL 600      /* seconds the owner has to answer one */
#define CONSENTS_PER_ADDR 16 /* open consent pages one address (an IPv6 /64) may hold */
#define CODES_MAX 256
#define CONSENT_FAILS_MAX 5  /* wrong passphrases from one address in a minute */
#define CONSENT_FAILS_GLOBAL 30 /* wrong passphrases from all addresses in a minute */
#define VERIFIER_KEEP_FREE 4 /* queue places only an address with no failure or check may take */
#define FAIL_TABLE 1024      /* addresses whose failures are remembered */
#define REGISTER_PER_MIN 10  /* registrations a minute from one address */
#define DEFAULT_SCOPES "hermes:read hermes:task"

struct client {
    char id[65]; /* registered: 32 hex; the static client (OAUTH_CLIENT_ID): up to 64 */
    char *name;
    char *redirects[REDIRECTS_MAX];
    size_t nredirects;
    time_t created; /* Unix seconds; 0 when registered before this was kept */
    enum clientmeta_auth auth; /* as registered: none, or a secret (either method is taken) */
    char secret_hash[65];      /* a confidential one's: tokenstore_hash of its secret */
};

struct consent { /* a consent page shown: what its POST will approve */
    char csrf[65];
    char client_id[PARAM_MAX + 1]; /* a registered id, or a metadata document's URL */
    char client_name[CLIENT_NAME_MAX + 1]; /* a metadata document's (it may leave the cache) */
    char client_host[256];                  /* and where it is published */
    char redirect_uri[PARAM_MAX + 1], state[PARAM_MAX + 1], challenge[PARAM_MAX + 1];
    char scope[PARAM_MAX + 1];
    bool redirect_sent; /* redirect_uri was in the request: /token must repeat it (RFC 6749 §4.1.3) */
    char addr[48];      /* who asked (ratelimit_key): the per-address cap */
    time_t expires; /* 0: free slot */
};

struct code {
    unsigned char hash[32];
    char client_id[PARAM_MAX + 1];
    char redirect_uri[PARAM_MAX + 1], challenge[PARAM_MAX + 1], scope[PARAM_MAX + 1];
    char family[33]; /* the tokens it gave, once exchanged: a replay revokes them */
    bool redirect_sent; /* as in struct consent */
    bool used;
    time_t expires; /* 0: free slot */
};

struct failures { /* wrong passphrases from one address (an IPv6 /64) in the current minute */
    char key[48];
    unsigned count;
    uint64_t since_ms;
};

struct authserver {
    char *issuer, *resource, *passphrase_path, *service, *clients_path;
    struct tokenstore *tokens;
    bool dcr;
    unsigned access_ttl_s, refresh_ttl_s; /* the tokens' lives */
    struct client *clients;
    size_t nclients;
    struct storefile_id clients_seen; /* the clients file as last read or written here */
    struct consent consents[CONSENTS_MAX];
    struct code codes[CODES_MAX];
    struct failures fails[FAIL_TABLE];
    struct failures all_fails; /* every address's, for CONSENT_FAILS_GLOBAL */
    struct ratelimit *rl_register;
    struct loop *loop;
    struct verifier *verifier;  /* the passphrase's scrypt, off the loop (authserver_set_loop) */
    struct checking *checking;  /* consent POSTs waiting for it */
    char *schemes;              /* app schemes a redirect URI may use (comma-separated) */
    struct client static_client; /* OAUTH_CLIENT_ID, when set (static_client.id non-empty) */
    unsigned char static_secret_hash[32];
    bool cimd_on;                 /* OAUTH_CIMD: client ID metadata documents */
    char *cimd_ca_file, *cimd_allow_hosts;
    struct cimd *cimd;            /* their fetcher and cache, once the loop exists */
    struct lookup *lookups;       /* GET /authorize requests waiting for a document */
    bool (*upstream_known)(void *arg, const char *name); /* authserver_opts' */
    void *upstream_arg;
};

/* A GET /authorize waiting for its client's metadata document. */
struct lookup {
    struct lookup *next;
    struct authserver *as;
    struct hreq *r;
    struct cimd_fetch *fetch;
    char addr[48]; /* the asking address (ratelimit_key), for its consent */
};

/* A consent POST whose passphrase is being checked: what is needed to answer it afterwards. */
struct checking {
    struct checking *next;
    struct authserver *as;
    struct hreq *r; /* NULL once the client went away */
    char ip[64], key[48], csrf[80]; /* csrf as authorize_post read it (64 hex) */
};

static bool load_clients(struct authserver *as, char *err, size_t errlen);

char *authserver_clients_path_beside(const char *file)
{
    const char *slash = strrchr(file, '/');
    return xasprintf("%.*soauth-clients.json", slash ? (int)(slash - file + 1) : 0, file);
}

size_t authserver_client_count(const struct authserver *as)
{
    return as->nclients;
}

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
    if (as->clients_path && !load_clients(as, err, errlen)) {
        authserver_free(as);
        return NULL;
    }
    return as;
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
                 "are checked on the event loop", strerror(errno));
    if (as->cimd_on) {
        struct cimd_opts co = {.ca_file = as->cimd_ca_file, .allow_hosts = as->cimd_allow_hosts,
                               .schemes = as->schemes, .rule = authserver_redirect_ok_in};
        as->cimd = cimd_new(l, &co);
    }
}

static void free_clients_one(struct client *c)
{
    free(c->name);
    for (size_t j = 0; j < c->nredirects; j++)
        free(c->redirects[j]);
}

static void free_clients(struct client *clients, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free_clients_one(&clients[i]);
    free(clients);
}

void authserver_free(struct authserver *as)
{
    if (as == NULL)
        return;
    free_clients(as->clients, as->nclients);
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

#define WK_AS "/.well-known/oauth-authorization-server"
#define WK_OIDC "/.well-known/openid-configuration"

bool authserver_owns(const char *path)
{
    return strcmp(path, WK_AS) == 0 || strcmp(path, WK_OIDC) == 0 ||
           strcmp(path, "/authorize") == 0 || strcmp(path, "/token") == 0 ||
           strcmp(path, "/register") == 0 || strcmp(path, "/revoke") == 0;
}

/* ---- answers ---- */

static void reply_json(struct hreq *r, unsigned status, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    hreq_add_header(r, "Cache-Control", "no-store");
    if (text == NULL) {
        hreq_reply(r, 500, "application/json", "{\"error\":\"server_error\"}", 24);
        return;
    }
    hreq_reply_take(r, status, "application/json", text, strlen(text));
}

/* An OAuth error (RFC 6749 5.2) as JSON. */
static void oauth_error(struct hreq *r, unsigned status, const char *error, const char *why)
{
    reply_json(r, status, json_pack("{s:s, s:s}", "error", error, "error_description", why));
}

static void html_escape(struct buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': buf_appends(b, "&amp;"); break;
        case '<': buf_appends(b, "&lt;"); break;
        case '>': buf_appends(b, "&gt;"); break;
        case '"': buf_appends(b, "&quot;"); break;
        case '\'': buf_appends(b, "&#39;"); break;
        default: buf_append(b, s, 1);
        }
    }
}

/* Every HTML answer: our own markup only, no script, not framable, not cached, no referrer. */
static void html_headers(struct hreq *r)
{
    hreq_add_header(r, "Content-Security-Policy",
                    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; "
                    "base-uri 'none'");
    hreq_add_header(r, "X-Frame-Options", "DENY");
    hreq_add_header(r, "X-Content-Type-Options", "nosniff");
    /* same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with the
     * form's POST (Fetch, "append a request Origin header"), which same_origin() must refuse.
     * Other sites, the client's redirect URI among them, still get no Referer. */
    hreq_add_header(r, "Referrer-Policy", "same-origin");
    hreq_add_header(r, "Cache-Control", "no-store");
}

static void page_start(struct buf *b, const char *title)
{
    buf_appends(b, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width\"><title>");
    html_escape(b, title);
    buf_appends(b, "</title><style>body{font:16px sans-serif;max-width:34em;margin:3em auto;"
                   "padding:0 1em}code{background:#eee;padding:0 .2em}</style></head><body><h1>");
    html_escape(b, title);
    buf_appends(b, "</h1>");
}

static void reply_page(struct hreq *r, unsigned status, struct buf *b)
{
    buf_appends(b, "</body></html>\n");
    html_headers(r);
    hreq_reply(r, status, "text/html; charset=utf-8", b->data, b->len);
    buf_cleanup(b);
}

/* A page that ends the flow here (an unknown client, a redirect URI we will not send to). */
static void error_page(struct hreq *r, unsigned status, const char *title, const char *text)
{
    struct buf b;
    buf_init(&b, 0);
    page_start(&b, title);
    buf_appends(&b, "<p>");
    html_escape(&b, text);
    buf_appends(&b, "</p>");
    reply_page(r, status, &b);
}

static void url_escape(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            buf_append(b, s, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            buf_append(b, e, 3);
        }
    }
}

/* 302 to the client's (checked) redirect URI with name=value pairs, the state and our issuer
 * (RFC 9207) added. */
static void redirect_back(struct authserver *as, struct hreq *r, const char *redirect_uri,
                          const char *state, const char *k1, const char *v1, const char *k2,
                          const char *v2)
{
    struct buf b;
    buf_init(&b, 0);
    buf_appends(&b, redirect_uri);
    buf_appends(&b, strchr(redirect_uri, '?') ? "&" : "?");
    buf_appends(&b, k1);
    buf_appends(&b, "=");
    url_escape(&b, v1);
    if (k2) {
        buf_printf(&b, "&%s=", k2);
        url_escape(&b, v2);
    }
    if (state && *state) {
        buf_appends(&b, "&state=");
        url_escape(&b, state);
    }
    buf_appends(&b, "&iss=");
    url_escape(&b, as->issuer);
    hreq_add_header(r, "Location", b.data);
    hreq_add_header(r, "Cache-Control", "no-store");
    /* The redirect URI is another site: it gets no Referer naming our consent page. */
    hreq_add_header(r, "Referrer-Policy", "same-origin");
    hreq_reply(r, 302, "text/plain", "", 0);
    buf_cleanup(&b);
}

/* ---- metadata (RFC 8414) ---- */

static void metadata(struct authserver *as, struct hreq *r)
{
    json_t *doc = json_pack(
        "{s:s, s:s+, s:s+, s:[s], s:[ss], s:[s], s:[sss], s:[sss], s:b, s:[s]}", "issuer",
        as->issuer, "authorization_endpoint", as->issuer, "/authorize", "token_endpoint",
        as->issuer, "/token", "response_types_supported", "code", "grant_types_supported",
        "authorization_code", "refresh_token", "code_challenge_methods_supported", "S256",
        "token_endpoint_auth_methods_supported", "none", "client_secret_basic",
        "client_secret_post", "scopes_supported", "hermes:read",
        "hermes:task", "hermes:admin", "authorization_response_iss_parameter_supported", 1,
        "response_modes_supported", "query");
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
    reply_json(r, 200, doc); /* Access-Control-Allow-Origin: authserver_headers added it */
}

/* ---- clients ---- */

static struct client *find_client(struct authserver *as, const char *id)
{
    if (*as->static_client.id && strcmp(as->static_client.id, id) == 0)
        return &as->static_client;
    for (size_t i = 0; i < as->nclients; i++)
        if (strcmp(as->clients[i].id, id) == 0)
            return &as->clients[i];
    return NULL;
}

/* The registered clients, one JSON file beside the token store (atomic, mode 600): a client
 * that comes back after a restart to authorize again is still known. */
static bool save_clients(struct authserver *as, char *err, size_t errlen)
{
    json_t *list = json_array();
    bool confidential = false;
    for (size_t i = 0; i < as->nclients; i++) {
        const struct client *c = &as->clients[i];
        json_t *uris = json_array();
        for (size_t j = 0; j < c->nredirects; j++)
            json_array_append_new(uris, json_string(c->redirects[j]));
        json_t *o = json_pack("{s:s, s:s, s:o}", "client_id", c->id, "client_name", c->name,
                              "redirect_uris", uris);
        if (c->created)
            json_object_set_new(o, "created", json_integer((json_int_t)c->created));
        if (c->auth != CLIENTMETA_AUTH_NONE) {
            json_object_set_new(o, "token_endpoint_auth_method",
                                json_string(clientmeta_auth_name(c->auth)));
            json_object_set_new(o, "client_secret_sha256", json_string(c->secret_hash));
            confidential = true;
        }
        json_array_append_new(list, o);
    }
    /* Version 2 only when a confidential client is kept: a server from before them refuses the
     * file rather than let such a client in without its secret. */
    json_t *doc = json_pack("{s:i, s:o}", "version", confidential ? 2 : 1, "clients", list);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    char why[300];
    bool ok = text && atomicfile_write(as->clients_path, text, strlen(text), 0600, why, sizeof why);
    if (!ok)
        snprintf(err, errlen, "cannot write the OAuth clients file %s: %s", as->clients_path,
                 text ? why : "out of memory");
    else
        storefile_note(as->clients_path, &as->clients_seen);
    free(text);
    return ok;
}

static bool client_id_ok(const char *id)
{
    return id && strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
}

/* One entry of a clients file of version (1 or 2). False when it is not one this server
 * writes; *why then says what is wrong when it is worth saying. */
static bool load_client(struct authserver *as, json_t *o, json_int_t version, const char **why)
{
    const char *id = json_string_value(json_object_get(o, "client_id"));
    const char *name = json_string_value(json_object_get(o, "client_name"));
    json_t *uris = json_object_get(o, "redirect_uris");
    json_t *created = json_object_get(o, "created");
    const char *method = json_string_value(json_object_get(o, "token_endpoint_auth_method"));
    const char *hash = json_string_value(json_object_get(o, "client_secret_sha256"));
    enum clientmeta_auth auth = CLIENTMETA_AUTH_NONE;
    size_t i;
    json_t *u;
    /* A client kept before confidential ones existed has neither field: public. Version 1 never
     * has them: a confidential client makes the file version 2, which older servers refuse. */
    if (version == 1 && (json_object_get(o, "token_endpoint_auth_method") ||
                         json_object_get(o, "client_secret_sha256"))) {
        *why = "a version-1 file holds public clients only, without token_endpoint_auth_method "
               "or client_secret_sha256";
        return false;
    }
    if (method && !clientmeta_auth_parse(method, &auth))
        return false;
    if ((auth != CLIENTMETA_AUTH_NONE) != (hash != NULL) ||
        (hash && (strlen(hash) != 64 || strspn(hash, "0123456789abcdef") != 64)))
        return false;
    if (!client_id_ok(id) || !clientmeta_name_ok(name) || (created && !json_is_integer(created)) ||
        !json_is_array(uris) || json_array_size(uris) == 0 ||
        json_array_size(uris) > REDIRECTS_MAX || find_client(as, id) ||
        as->nclients >= AUTHSERVER_CLIENTS_MAX)
        return false;
    json_array_foreach(uris, i, u) if (!json_is_string(u)) return false;
    /* Checked with the configured schemes; one no longer allowed (the owner changed
     * OAUTH_ALLOWED_REDIRECT_SCHEMES) costs that client only, not the whole file. */
    json_array_foreach(uris, i, u) if (!authserver_redirect_ok_in(json_string_value(u), as->schemes)) {
        log_warn("oauth: skipping OAuth client %s: its redirect URI scheme is not allowed "
                 "(OAUTH_ALLOWED_REDIRECT_SCHEMES)", id);
        return true;
    }
    struct client *c = &as->clients[as->nclients++];
    snprintf(c->id, sizeof c->id, "%s", id);
    c->name = xstrdup(name);
    c->created = (time_t)json_integer_value(created);
    c->auth = auth;
    snprintf(c->secret_hash, sizeof c->secret_hash, "%s", hash ? hash : "");
    json_array_foreach(uris, i, u) c->redirects[c->nredirects++] = xstrdup(json_string_value(u));
    return true;
}

static bool load_clients(struct authserver *as, char *err, size_t errlen)
{
    struct stat st;
    size_t len = 0, i;
    char why[300];
    json_t *o;
    const char *path = as->clients_path;
    if (lstat(path, &st) != 0 && errno == ENOENT) {
        storefile_id_of(NULL, &as->clients_seen);
        return true;
    }
    char *text = readfile_capped(path, path, 4u * 1024u * 1024u, &st, &len, why, sizeof why);
    if (text == NULL) {
        snprintf(err, errlen, "OAuth clients file: %s", why);
        return false;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen, "OAuth clients file %s is readable or writable by others; run: "
                              "chmod 600 %s", path, path);
        free(text);
        return false;
    }
    storefile_id_of(&st, &as->clients_seen);
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    free(text);
    json_t *list = json_object_get(doc, "clients");
    json_int_t version = json_integer_value(json_object_get(doc, "version"));
    bool ok = json_is_array(list) && (version == 1 || version == 2);
    const char *why_client = NULL, *bad_id = NULL;
    json_array_foreach(list, i, o) if (ok && !load_client(as, o, version, &why_client)) {
        ok = false;
        bad_id = json_string_value(json_object_get(o, "client_id"));
    }
    if (!ok && why_client)
        snprintf(err, errlen, "OAuth clients file %s is not one this server wrote: client %.64s: "
                              "%s", path, bad_id ? bad_id : "(no id)", why_client);
    else if (!ok)
        snprintf(err, errlen, "OAuth clients file %s is not one this server wrote (version 1 "
                              "or 2)", path);
    json_decref(doc);
    return ok;
}

/* Reads the clients file again when another process (oauth clients revoke) replaced it; one
 * that cannot be used now is logged and the clients known so far kept. */
static void clients_sync(struct authserver *as)
{
    char err[400];
    if (as->clients_path == NULL || !storefile_changed(as->clients_path, &as->clients_seen))
        return;
    struct client *old = as->clients;
    size_t nold = as->nclients;
    as->clients = xcalloc(AUTHSERVER_CLIENTS_MAX, sizeof *as->clients);
    as->nclients = 0;
    if (load_clients(as, err, sizeof err)) {
        free_clients(old, nold);
        return;
    }
    log_warn("oauth: %s; keeping the clients read before", err);
    free_clients(as->clients, as->nclients);
    as->clients = old;
    as->nclients = nold;
    storefile_note(as->clients_path, &as->clients_seen); /* said once */
}

#define CLIENT_UNUSED_TTL (24 * 3600) /* a client with no token is dropped this long after */

static void note_client_with_token(const struct token_grant *g, void *arg)
{
    if (g->client_id)
        strmap_put(arg, g->client_id, (void *)1);
}

/* Makes room for a registration when the table is full: clients that never got a token (none
 * in the store) and registered over CLIENT_UNUSED_TTL ago go; if none did, the oldest such
 * client goes. A client that got a token is never dropped here, so the cap is no lockout. */
static void drop_unused_clients(struct authserver *as)
{
    struct strmap *with_tokens = strmap_new();
    time_t now = time(NULL);
    size_t oldest = as->nclients, kept = 0;
    tokenstore_each(as->tokens, note_client_with_token, with_tokens);
    for (size_t i = 0; i < as->nclients; i++)
        if (!strmap_get(with_tokens, as->clients[i].id) &&
            (oldest == as->nclients || as->clients[i].created < as->clients[oldest].created))
            oldest = i;
    for (size_t i = 0; i < as->nclients; i++) {
        struct client *c = &as->clients[i];
        bool unused = !strmap_get(with_tokens, c->id);
        if (unused && (now - c->created >= CLIENT_UNUSED_TTL || i == oldest)) {
            log_info("oauth: dropping client %s (%s): no token since it registered", c->id,
                     c->name);
            free_clients_one(c);
        } else {
            as->clients[kept++] = *c;
        }
    }
    for (size_t i = kept; i < as->nclients; i++)
        memset(&as->clients[i], 0, sizeof as->clients[i]);
    as->nclients = kept;
    strmap_free(with_tokens);
}

static void register_client(struct authserver *as, struct hreq *r)
{
    size_t len;
    const char *body = hreq_body(r, &len);
    if (len > AUTHSERVER_REGISTER_BODY_MAX) {
        oauth_error(r, 413, "invalid_client_metadata", "the registration is too large");
        return;
    }
    json_t *doc = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, NULL);
    const char *code = "invalid_client_metadata";
    enum clientmeta_auth auth = CLIENTMETA_AUTH_NONE;
    const char *why = clientmeta_check_registration(doc, as->schemes, &code, &auth);
    json_t *uris = json_object_get(doc, "redirect_uris");
    json_t *name = json_object_get(doc, "client_name");
    size_t i;
    json_t *u;
    if (why == NULL && as->nclients >= AUTHSERVER_CLIENTS_MAX && as->tokens)
        drop_unused_clients(as);
    if (why == NULL && as->nclients >= AUTHSERVER_CLIENTS_MAX) {
        why = "the server holds as many clients as it takes";
        code = "temporarily_unavailable";
    }
    if (why) {
        json_decref(doc);
        oauth_error(r, 400, code, why);
        return;
    }
    struct client *c = &as->clients[as->nclients];
    char secret[65] = "";
    c->auth = auth;
    if (!crypto_random_hex(c->id, 16) ||
        (c->auth != CLIENTMETA_AUTH_NONE && !crypto_random_hex(secret, 32))) {
        memset(c, 0, sizeof *c);
        json_decref(doc);
        oauth_error(r, 500, "server_error", "the random generator failed");
        return;
    }
    if (c->auth != CLIENTMETA_AUTH_NONE)
        tokenstore_hash(secret, c->secret_hash); /* the secret itself is shown once, below */
    as->nclients++;
    c->created = time(NULL);
    c->name = xstrdup(name ? json_string_value(name) : "unnamed client");
    json_array_foreach(uris, i, u) c->redirects[c->nredirects++] = xstrdup(json_string_value(u));
    char err[400];
    if (as->clients_path && !save_clients(as, err, sizeof err)) {
        /* Not durable, not registered: the client would be lost at the next restart. */
        log_error("oauth: %s", err);
        free(c->name);
        for (size_t j = 0; j < c->nredirects; j++)
            free(c->redirects[j]);
        memset(c, 0, sizeof *c);
        as->nclients--;
        explicit_bzero(secret, sizeof secret);
        json_decref(doc);
        oauth_error(r, 503, "temporarily_unavailable", "the client cannot be stored");
        return;
    }
    json_t *out = json_pack("{s:s, s:I, s:O, s:s, s:[ss], s:[s], s:s}", "client_id", c->id,
                            "client_id_issued_at", (json_int_t)time(NULL), "redirect_uris", uris,
                            "token_endpoint_auth_method", clientmeta_auth_name(c->auth),
                            "grant_types", "authorization_code", "refresh_token",
                            "response_types", "code", "client_name", c->name);
    if (out && c->auth != CLIENTMETA_AUTH_NONE) { /* RFC 7591 3.2.1; it never expires */
        /* Its copies in out and in the answer's text (reply_json) are freed unwiped, as the
         * tokens issue_pair sends are: jansson and the HTTP layer own those buffers. Only
         * secret[] is ours to wipe, below. */
        json_object_set_new(out, "client_secret", json_string(secret));
        json_object_set_new(out, "client_secret_expires_at", json_integer(0));
    }
    explicit_bzero(secret, sizeof secret);
    json_decref(doc);
    log_info("oauth: registered client %s", c->id); /* not its name: the client's text */
    reply_json(r, 201, out);
}

/* ---- /authorize ---- */

/* The scope granted for the scope asked (RFC 6749 3.3), into out (outsz bytes): the known
 * ones (hermes:*, gateway:<upstream>) in the order asked; foreign ones, outside our hermes: and
 * gateway: namespaces, are dropped (claude.ai asks "claudeai", others "openid" or their own
 * vocabulary), and when none is left, or none was asked (ChatGPT on a reconnect), the defaults.
 * False when a scope of our namespaces does not exist (a typo such as hermes:raed, or a
 * gateway:<name> of an upstream this server does not have, must not turn into the defaults,
 * which may be wider than meant) or a known scope is named twice: client errors, not a wider
 * grant. */
static bool scopes_grant(const struct authserver *as, const char *asked, char *out,
                         size_t outsz)
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
        if (!scope_known(one)) {
            if (strncmp(one, "hermes:", 7) == 0 || strncmp(one, "gateway:", 8) == 0)
                return false;
            continue;
        }
        if (strncmp(one, "gateway:", 8) == 0 && as->upstream_known &&
            !as->upstream_known(as->upstream_arg, one + 8))
            return false;
        for (const char *q = out; *q; q += strcspn(q, " "), q += strspn(q, " "))
            if (strncmp(q, one, n) == 0 && (q[n] == ' ' || q[n] == '\0'))
                return false;
        if (len + (len > 0) + n >= outsz)
            return false; /* not reached: out is as large as what was asked */
        len += (size_t)snprintf(out + len, outsz - len, "%s%s", len ? " " : "", one);
    }
    if (len == 0)
        snprintf(out, outsz, "%s", DEFAULT_SCOPES);
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
    return n == 43 && strspn(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == n;
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

static struct consent *find_consent(struct authserver *as, const char *csrf, time_t now)
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

static void redirect_host(const char *uri, char *out, size_t outlen)
{
    const char *p = strstr(uri, "://");
    p = p ? p + 3 : uri;
    size_t n = p == uri ? strcspn(p, ":") : strcspn(p, "/?");
    snprintf(out, outlen, "%.*s", (int)n, p);
}

static void consent_page(struct authserver *as, struct hreq *r, const struct consent *c,
                         const char *problem)
{
    const struct client *cl = find_client(as, c->client_id);
    char host[PARAM_MAX + 1];
    struct buf b;
    redirect_host(c->redirect_uri, host, sizeof host);
    buf_init(&b, 0);
    page_start(&b, "Allow access?");
    if (problem) {
        buf_appends(&b, "<p role=\"alert\"><strong>");
        html_escape(&b, problem);
        buf_appends(&b, "</strong></p>");
    }
    buf_appends(&b, "<p>The application <strong id=\"client\">");
    html_escape(&b, cl ? cl->name : *c->client_name ? c->client_name : c->client_id);
    if (*c->client_host) { /* a metadata document: its name is only what that host says */
        buf_appends(&b, "</strong> (as described by <strong id=\"clienthost\">");
        html_escape(&b, c->client_host);
        buf_appends(&b, "</strong>)");
    } else {
        buf_appends(&b, "</strong>");
    }
    buf_appends(&b, " asks to use ");
    html_escape(&b, as->service);
    buf_appends(&b, " on your behalf. Its answer goes to <strong id=\"host\">");
    html_escape(&b, host);
    buf_appends(&b, "</strong>.</p><p>It asks for:</p><ul id=\"scopes\">");
    for (const char *p = c->scope; *p;) {
        p += strspn(p, " ");
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        char one[PARAM_MAX + 1];
        snprintf(one, sizeof one, "%.*s", (int)n, p);
        buf_appends(&b, "<li><code>");
        html_escape(&b, one);
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
    reply_page(r, problem ? 403 : 200, &b);
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
    /* The static client registered no URIs (seed 002): any that passes the scheme rules; the
     * code is of no use without its secret, and the page names the host it goes to. */
    if (cl->any_redirect)
        known = authserver_redirect_ok_in(redirect_uri, as->schemes);
    if (!known) {
        error_page(r, 400, "Wrong redirect address",
                   "The redirect_uri is not one this application registered, so no answer is "
                   "sent to it.");
        return;
    }
    /* From here errors go back to the application, which can tell its user. */
    if (strcmp(q->response_type, "code") != 0) {
        redirect_back(as, r, redirect_uri, state, "error", "unsupported_response_type", NULL, NULL);
        return;
    }
    if (strcmp(q->method, "S256") != 0 || !challenge_ok(challenge)) {
        redirect_back(as, r, redirect_uri, state, "error", "invalid_request",
                      "error_description", "PKCE with code_challenge_method S256 is required");
        return;
    }
    if (!scopes_grant(as, q->scope, scope, sizeof scope)) {
        redirect_back(as, r, redirect_uri, state, "error", "invalid_scope", NULL, NULL);
        return;
    }
    if (*q->resource && strcmp(q->resource, as->resource) != 0) {
        redirect_back(as, r, redirect_uri, state, "error", "invalid_target", NULL, NULL);
        return;
    }
    if (!passphrase_load(as->passphrase_path, line, err, sizeof err)) {
        log_warn("oauth: consent refused: %s", err);
        error_page(r, 503, "No consent passphrase set",
                   "The owner has not set a consent passphrase, so no application can be "
                   "allowed yet. On the server, run: hermes-mcp oauth passwd");
        return;
    }
    explicit_bzero(line, sizeof line);
    time_t now = time(NULL);
    bool head = strcmp(hreq_method(r), "HEAD") == 0, full = false;
    /* HEAD shows the page without opening a consent (it could never be answered). */
    struct consent *c = head ? xcalloc(1, sizeof *c) : new_consent(as, now, q->addr, &full);
    if (c == NULL) {
        log_warn("oauth: consent page refused to %s: %s", q->addr,
                 full ? "all consent slots are open" : "too many open from this address");
        hreq_add_header(r, "Retry-After", "60");
        error_page(r, full ? 503 : 429, full ? "Busy" : "Too many open requests",
                   full ? "Too many applications are waiting for the owner's answer; try "
                          "again in a few minutes."
                        : "Too many authorization requests from this address are waiting for "
                          "an answer; answer or close them, or try again in a few minutes.");
        return;
    }
    memset(c, 0, sizeof *c);
    if (!crypto_random_hex(c->csrf, 32)) {
        error_page(r, 500, "Server error", "The random generator failed.");
        return;
    }
    snprintf(c->client_id, sizeof c->client_id, "%s", cl->id); /* the registered id: it matched */
    if (cl->host) {
        snprintf(c->client_name, sizeof c->client_name, "%s", cl->name);
        snprintf(c->client_host, sizeof c->client_host, "%s", cl->host);
    }
    snprintf(c->redirect_uri, sizeof c->redirect_uri, "%s", redirect_uri);
    c->redirect_sent = redirect_sent;
    snprintf(c->state, sizeof c->state, "%s", state);
    snprintf(c->challenge, sizeof c->challenge, "%s", challenge);
    snprintf(c->scope, sizeof c->scope, "%s", scope);
    snprintf(c->addr, sizeof c->addr, "%s", q->addr);
    c->expires = now + CONSENT_TTL;
    consent_page(as, r, c, NULL);
    if (head)
        free(c);
}

static void bad_query_page(struct hreq *r)
{
    error_page(r, 400, "Bad request", "A parameter of this request is too long or badly "
                                      "escaped.");
}

static void document_authorize(struct authserver *as, struct hreq *r, struct authz_query *q,
                               const struct clientdoc *d)
{
    struct client_view v = {.id = q->client_id, .name = d->name, .host = d->host,
                            .redirects = d->redirects, .nredirects = d->nredirects};
    authorize_client(as, r, q, &v);
}

static void document_refused(struct hreq *r, const char *why)
{
    struct buf b;
    buf_init(&b, 0);
    page_start(&b, "Application description refused");
    buf_appends(&b, "<p>This application names itself by the address of its description "
                    "(a client ID metadata document), which this server will not use:</p>"
                    "<p id=\"reason\">");
    html_escape(&b, why);
    buf_appends(&b, ".</p>");
    reply_page(r, 400, &b);
}

static void authorize_get(struct authserver *as, struct hreq *r, const char *ip)
{
    struct authz_query q;
    if (!authz_query_read(r, &q)) {
        bad_query_page(r);
        return;
    }
    ratelimit_key(ip, q.addr, sizeof q.addr);
    if (clientdoc_is_url(q.client_id)) {
        const struct clientdoc *d = as->cimd ? cimd_cached(as->cimd, q.client_id) : NULL;
        if (as->cimd == NULL)
            error_page(r, 400, "Unknown application",
                       "This server does not take client metadata documents (OAUTH_CIMD=0); "
                       "the application should register instead.");
        else if (d)
            document_authorize(as, r, &q, d);
        /* else unanswered: authserver_request fetches the document (authorize_fetch) */
        return;
    }
    const struct client *cl = find_client(as, q.client_id);
    if (cl == NULL) {
        error_page(r, 400, "Unknown application",
                   "This application is not registered with this server; it should register "
                   "again.");
        return;
    }
    struct client_view v = {.id = cl->id, .name = cl->name, .redirects = cl->redirects,
                            .nredirects = cl->nredirects, .any_redirect = cl == &as->static_client};
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

/* A GET /authorize whose client's document is not cached: fetched on the loop, the request
 * waits (suspended) and is answered from on_document. */
static void authorize_fetch(struct authserver *as, struct hreq *r, const char *ip)
{
    struct authz_query q;
    char err[300];
    if (!authz_query_read(r, &q)) {
        bad_query_page(r);
        return;
    }
    if (cimd_busy(as->cimd)) {
        hreq_add_header(r, "Retry-After", "5");
        error_page(r, 503, "Busy", "Too many application descriptions are being fetched; try "
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

static struct code *new_code(struct authserver *as, time_t now)
{
    struct code *slot = &as->codes[0];
    for (size_t i = 0; i < CODES_MAX; i++) {
        if (as->codes[i].expires <= now)
            return &as->codes[i];
        if (as->codes[i].expires < slot->expires)
            slot = &as->codes[i];
    }
    return slot;
}

/* The failures of ip's address in the minute from its first failure: a fresh (or the oldest)
 * slot when it has none. Only wrong passphrases count, so the owner approving several clients
 * in a row is never slowed, while guessing gets CONSENT_FAILS_MAX tries a minute. */
static struct failures *failures_of(struct authserver *as, const char *ip, uint64_t now_ms,
                                    bool create)
{
    char key[48];
    struct failures *slot = NULL;
    ratelimit_key(ip, key, sizeof key);
    for (size_t i = 0; i < FAIL_TABLE; i++) {
        struct failures *f = &as->fails[i];
        if (f->count && strcmp(f->key, key) == 0) {
            if (now_ms - f->since_ms >= 60000)
                f->count = 0, f->since_ms = now_ms;
            return f;
        }
        if (f->count == 0) { /* a free slot beats any taken one */
            if (slot == NULL || slot->count != 0)
                slot = f;
        } else if (slot == NULL || (slot->count != 0 && f->since_ms < slot->since_ms)) {
            slot = f;
        }
    }
    if (!create)
        return NULL;
    memset(slot, 0, sizeof *slot);
    snprintf(slot->key, sizeof slot->key, "%s", key);
    slot->since_ms = now_ms;
    return slot;
}

static bool same_origin(struct authserver *as, struct hreq *r)
{
    const char *origin = hreq_header(r, "Origin");
    /* Browsers send Origin on a form POST; "null" (a sandboxed frame, a data: page) and any
     * other site are a cross-site submission. A client without Origin is not a browser. */
    return origin == NULL || strcmp(origin, as->issuer) == 0;
}

static void expired_page(struct hreq *r)
{
    error_page(r, 403, "Expired or forged request",
               "This consent form is not one this server showed, or it has expired. Start "
               "again from the application.");
}

/* The wrong passphrases of the current minute, from every address: many addresses guessing a
 * few times each are stopped too (the owner waits a minute then, as a guesser does). */
static unsigned global_failures(struct authserver *as, uint64_t now_ms)
{
    if (now_ms - as->all_fails.since_ms >= 60000)
        as->all_fails.count = 0, as->all_fails.since_ms = now_ms;
    return as->all_fails.count;
}

static void count_wrong_passphrase(struct authserver *as, const char *ip, uint64_t now_ms)
{
    if (global_failures(as, now_ms) + 1 == CONSENT_FAILS_GLOBAL)
        log_warn("oauth: %d wrong consent passphrases this minute from all addresses; refusing "
                 "every consent until the minute is over", CONSENT_FAILS_GLOBAL);
    as->all_fails.count++;
    struct failures *f = failures_of(as, ip, now_ms, true);
    if (++f->count == CONSENT_FAILS_MAX)
        log_warn("oauth: %d wrong consent passphrases from %s this minute; refusing more",
                 CONSENT_FAILS_MAX, ip);
    else
        log_warn("oauth: wrong consent passphrase from %s", ip);
}

/* After the passphrase check: the code and the redirect back, or the page again saying why
 * (with the consent's fresh CSRF token, the one csrf names: authorize_post spent the one the
 * form carried). The consent is looked up again by it: it may have expired meanwhile. */
static void consent_checked(struct authserver *as, struct hreq *r, const char *ip,
                            const char *csrf, bool ok, uint64_t now_ms)
{
    time_t now = time(NULL);
    struct consent *c = find_consent(as, csrf, now);
    if (!ok) {
        count_wrong_passphrase(as, ip, now_ms);
        if (c)
            consent_page(as, r, c, "Wrong passphrase.");
        else
            expired_page(r);
        return;
    }
    if (c == NULL) {
        expired_page(r);
        return;
    }
    char code[65];
    struct code *k = new_code(as, now);
    memset(k, 0, sizeof *k);
    if (!crypto_random_hex(code, 32)) {
        error_page(r, 500, "Server error", "The random generator failed.");
        return;
    }
    crypto_sha256(code, 64, k->hash);
    snprintf(k->client_id, sizeof k->client_id, "%s", c->client_id);
    snprintf(k->redirect_uri, sizeof k->redirect_uri, "%s", c->redirect_uri);
    k->redirect_sent = c->redirect_sent;
    snprintf(k->challenge, sizeof k->challenge, "%s", c->challenge);
    snprintf(k->scope, sizeof k->scope, "%s", c->scope);
    k->expires = now + AUTHSERVER_CODE_TTL;
    c->expires = 0; /* one consent, one code */
    log_info("oauth: the owner allowed client %s (%s)", k->client_id, k->scope);
    redirect_back(as, r, k->redirect_uri, c->state, "code", code, NULL, NULL);
    explicit_bzero(code, sizeof code);
}

/* Consent POSTs from ip's address whose passphrase is still being checked: each may turn out
 * wrong, so they count against CONSENT_FAILS_MAX before their answer is known. */
static unsigned checking_from(struct authserver *as, const char *key)
{
    unsigned n = 0;
    for (const struct checking *k = as->checking; k; k = k->next)
        n += strcmp(k->key, key) == 0;
    return n;
}

static unsigned checking_count(struct authserver *as)
{
    unsigned n = 0;
    for (const struct checking *k = as->checking; k; k = k->next)
        n++;
    return n;
}

static void checking_unlink(struct authserver *as, struct checking *k)
{
    for (struct checking **p = &as->checking; *p; p = &(*p)->next)
        if (*p == k) {
            *p = k->next;
            return;
        }
}

static void on_client_gone(struct hreq *r, void *arg)
{
    struct checking *k = arg;
    (void)r;
    k->r = NULL; /* the check runs on; its answer is dropped, a wrong guess still counts */
}

static void on_checked(void *ctx, enum verify_result result)
{
    struct checking *k = ctx;
    struct authserver *as = k->as;
    checking_unlink(as, k);
    if (result != VERIFY_CANCELLED && k->r) {
        consent_checked(as, k->r, k->ip, k->csrf, result == VERIFY_OK, loop_now(as->loop));
    } else {
        /* Nobody is left to see the consent's new token: it can never be answered. */
        struct consent *c = find_consent(as, k->csrf, time(NULL));
        if (c)
            c->expires = 0;
        if (result == VERIFY_WRONG)
            count_wrong_passphrase(as, k->ip, loop_now(as->loop));
    }
    explicit_bzero(k, sizeof *k);
    free(k);
}

/* Hands the passphrase to the worker; the request is answered from on_checked. False when the
 * worker cannot take it (authorize_post saw room in its queue, so its thread did not start):
 * the caller checks on the loop then, as without a worker. */
static bool check_later(struct authserver *as, struct hreq *r, const char *ip, const char *csrf,
                        const char *line, const char *pass)
{
    struct checking *k = xcalloc(1, sizeof *k);
    k->as = as;
    k->r = r;
    snprintf(k->ip, sizeof k->ip, "%s", ip);
    ratelimit_key(ip, k->key, sizeof k->key);
    snprintf(k->csrf, sizeof k->csrf, "%s", csrf);
    if (!verifier_submit(as->verifier, line, pass, strlen(pass), on_checked, k)) {
        explicit_bzero(k, sizeof *k);
        free(k);
        return false;
    }
    k->next = as->checking;
    as->checking = k;
    hreq_on_abort(r, on_client_gone, k);
    return true;
}

static void busy_page(struct hreq *r)
{
    hreq_add_header(r, "Retry-After", "1");
    error_page(r, 503, "Busy", "Too many consents are being checked; try again in a moment.");
}

static void authorize_post(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms)
{
    size_t len;
    const char *body = hreq_body(r, &len);
    char csrf[80], action[16], pass[PASSPHRASE_MAX + 1], line[PASSPHRASE_LINE_MAX], err[400];
    char key[48];
    if (strcmp(hreq_method(r), "POST") != 0) {
        authorize_fetch(as, r, ip); /* a GET the headers callback left: its client's document */
        return;
    }
    if (body == NULL)
        body = "", len = 0;
    if (!same_origin(as, r)) {
        error_page(r, 403, "Refused", "This form was sent from another site.");
        return;
    }
    struct failures *f = failures_of(as, ip, now_ms, false);
    ratelimit_key(ip, key, sizeof key);
    if ((f ? f->count : 0) + checking_from(as, key) >= CONSENT_FAILS_MAX) {
        char retry[16];
        snprintf(retry, sizeof retry, "%u",
                 f && f->count >= CONSENT_FAILS_MAX
                     ? (unsigned)((60000 - (now_ms - f->since_ms)) / 1000 + 1) : 1u);
        hreq_add_header(r, "Retry-After", retry);
        error_page(r, 429, "Too many attempts", "Wait a minute, then try again.");
        return;
    }
    unsigned checking = checking_count(as);
    if (global_failures(as, now_ms) + checking >= CONSENT_FAILS_GLOBAL) {
        char retry[16];
        snprintf(retry, sizeof retry, "%u",
                 (unsigned)((60000 - (now_ms - as->all_fails.since_ms)) / 1000 + 1));
        hreq_add_header(r, "Retry-After", retry);
        error_page(r, 429, "Too many attempts", "Too many wrong passphrases were tried this "
                                                "minute; wait a minute, then try again.");
        return;
    }
    /* The last places in the verifier's queue are kept for an address with no failure and no
     * check running, so a few guessing addresses cannot keep the owner out with Busy. */
    if (checking >= VERIFIER_QUEUE_MAX - VERIFIER_KEEP_FREE &&
        ((f && f->count) || checking_from(as, key))) {
        busy_page(r);
        return;
    }
    time_t now = time(NULL);
    struct consent *c = NULL;
    if (form_get(body, len, "csrf", csrf, sizeof csrf) == FORM_OK)
        c = find_consent(as, csrf, now);
    if (c == NULL) {
        expired_page(r);
        return;
    }
    bool deny = form_get(body, len, "action", action, sizeof action) == FORM_OK &&
                strcmp(action, "deny") == 0;
    /* A full queue is told before the token is spent, so "try again" with the same form works
     * and the consent does not sit dead in its address's and the table's places. */
    if (!deny && as->verifier && verifier_pending(as->verifier) >= VERIFIER_QUEUE_MAX) {
        busy_page(r);
        return;
    }
    /* One use: the token this POST carries is spent now, whatever the answer. The consent gets
     * a fresh one, known only here until a wrong passphrase shows the page again with it. */
    if (!crypto_random_hex(c->csrf, 32)) {
        c->expires = 0;
        error_page(r, 500, "Server error", "The random generator failed.");
        return;
    }
    snprintf(csrf, sizeof csrf, "%s", c->csrf);
    if (deny) {
        char uri[PARAM_MAX + 1], state[PARAM_MAX + 1];
        snprintf(uri, sizeof uri, "%s", c->redirect_uri);
        snprintf(state, sizeof state, "%s", c->state);
        c->expires = 0;
        redirect_back(as, r, uri, state, "error", "access_denied", NULL, NULL);
        return;
    }
    bool have = form_get(body, len, "passphrase", pass, sizeof pass) == FORM_OK &&
                passphrase_load(as->passphrase_path, line, err, sizeof err);
    if (!have || as->verifier == NULL || !check_later(as, r, ip, csrf, line, pass))
        consent_checked(as, r, ip, csrf, have && passphrase_verify(line, pass, strlen(pass)),
                        now_ms);
    explicit_bzero(pass, sizeof pass);
    explicit_bzero(line, sizeof line);
}

/* ---- /token ---- */

/* Issues an access and a refresh token of family for client and scope, and answers with them. */
static void issue_pair(struct authserver *as, struct hreq *r, const char *client_id,
                       const char *scope, const char *family)
{
    char access[65], refresh[65], err[400];
    time_t now = time(NULL);
    struct token_grant g = {.kind = TOKEN_ACCESS, .client_id = client_id, .scope = scope,
                            .resource = as->resource, .family = family,
                            .expires = now + (time_t)as->access_ttl_s};
    if (!tokenstore_issue(as->tokens, &g, access, err, sizeof err)) {
        log_error("oauth: %s", err);
        oauth_error(r, 503, "temporarily_unavailable", "the token store cannot take a token");
        return;
    }
    g.kind = TOKEN_REFRESH;
    g.expires = now + (time_t)as->refresh_ttl_s;
    if (!tokenstore_issue(as->tokens, &g, refresh, err, sizeof err)) {
        log_error("oauth: %s", err);
        tokenstore_revoke(as->tokens, access, false, err, sizeof err);
        explicit_bzero(access, sizeof access);
        oauth_error(r, 503, "temporarily_unavailable", "the token store cannot take a token");
        return;
    }
    reply_json(r, 200, json_pack("{s:s, s:s, s:i, s:s, s:s}", "access_token", access,
                                 "token_type", "Bearer", "expires_in", (int)as->access_ttl_s,
                                 "refresh_token", refresh, "scope", scope));
    explicit_bzero(access, sizeof access);
    explicit_bzero(refresh, sizeof refresh);
}

static bool verifier_matches(const char *verifier, const char *challenge)
{
    size_t n = strlen(verifier);
    unsigned char d[32];
    char enc[48];
    if (n < 43 || n > 128 ||
        strspn(verifier, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") != n)
        return false;
    crypto_sha256(verifier, n, d);
    crypto_b64_encode(true, d, sizeof d, enc);
    return strlen(enc) == 43 && crypto_equal(enc, challenge, 43);
}

static void grant_code(struct authserver *as, struct hreq *r, const char *body, size_t len,
                       const char *client_id)
{
    char code[80], uri[PARAM_MAX + 1], verifier[200];
    char resource[PARAM_MAX + 1], err[400];
    unsigned char h[32];
    time_t now = time(NULL);
    if (form_get(body, len, "code", code, sizeof code) != FORM_OK ||
        form_get(body, len, "redirect_uri", uri, sizeof uri) == FORM_BAD ||
        form_get(body, len, "resource", resource, sizeof resource) == FORM_BAD) {
        oauth_error(r, 400, "invalid_request", "code and client_id are required, once each");
        return;
    }
    if (form_get(body, len, "code_verifier", verifier, sizeof verifier) != FORM_OK) {
        oauth_error(r, 400, "invalid_request", "code_verifier is required (PKCE)");
        return;
    }
    crypto_sha256(code, strlen(code), h);
    struct code *k = NULL;
    for (size_t i = 0; i < CODES_MAX && k == NULL; i++)
        if (as->codes[i].expires > now && crypto_equal(as->codes[i].hash, h, 32))
            k = &as->codes[i];
    if (k == NULL) {
        oauth_error(r, 400, "invalid_grant", "the code is unknown or expired");
        return;
    }
    if (k->used) {
        /* A replay: whoever has the code now also got the tokens; revoke them (RFC 9700). */
        log_warn("oauth: a code of client %s was used twice; its tokens are revoked",
                 k->client_id);
        if (*k->family)
            tokenstore_revoke_family(as->tokens, k->family, err, sizeof err);
        k->expires = 0;
        oauth_error(r, 400, "invalid_grant", "the code was already used");
        return;
    }
    /* redirect_uri must match, and may be left out only if /authorize had none either. */
    bool uri_ok = strcmp(uri, k->redirect_uri) == 0 || (*uri == '\0' && !k->redirect_sent);
    if (strcmp(k->client_id, client_id) != 0 || !uri_ok) {
        k->expires = 0;
        oauth_error(r, 400, "invalid_grant", "the code was issued to another client or "
                                             "redirect_uri");
        return;
    }
    if (*resource && strcmp(resource, as->resource) != 0) {
        oauth_error(r, 400, "invalid_target", "this server issues tokens for its /mcp only");
        return;
    }
    if (!verifier_matches(verifier, k->challenge)) {
        k->expires = 0;
        oauth_error(r, 400, "invalid_grant", "the code_verifier does not match the challenge");
        return;
    }
    k->used = true; /* kept until it expires, so a replay is seen */
    if (!crypto_random_hex(k->family, 16)) {
        oauth_error(r, 500, "server_error", "the random generator failed");
        return;
    }
    issue_pair(as, r, k->client_id, k->scope, k->family);
}

static void grant_refresh(struct authserver *as, struct hreq *r, const char *body, size_t len,
                          const char *client_id)
{
    char token[80], err[400];
    if (form_get(body, len, "refresh_token", token, sizeof token) != FORM_OK) {
        oauth_error(r, 400, "invalid_request", "refresh_token and client_id are required");
        return;
    }
    const struct token_grant *g = tokenstore_find(as->tokens, token, time(NULL));
    if (g == NULL || g->kind != TOKEN_REFRESH || strcmp(g->client_id, client_id) != 0) {
        oauth_error(r, 400, "invalid_grant", "the refresh token is unknown, expired or not "
                                             "this client's");
        return;
    }
    if (g->used) {
        log_warn("oauth: a rotated refresh token of client %s was used again; its family is "
                 "revoked", client_id);
        tokenstore_revoke(as->tokens, token, true, err, sizeof err);
        oauth_error(r, 400, "invalid_grant", "the refresh token was already used");
        return;
    }
    /* Copies: the grant's strings belong to the store, which the next calls change. */
    char *scope = xstrdup(g->scope), *family = g->family ? xstrdup(g->family) : NULL;
    if (!tokenstore_mark_used(as->tokens, token, err, sizeof err)) {
        if (tokenstore_find(as->tokens, token, time(NULL)) == NULL) /* revoked meanwhile */
            oauth_error(r, 400, "invalid_grant", "the refresh token was revoked");
        else {
            log_error("oauth: %s", err);
            oauth_error(r, 503, "temporarily_unavailable", "the token store cannot be written");
        }
    } else {
        issue_pair(as, r, client_id, scope, family);
    }
    free(scope);
    free(family);
}

/* Whether the client id authenticates as it must (RFC 6749 2.3), having used the method used
 * (with secret, for the two secret methods): the static client and a confidential registered
 * one with their secret, by either secret method, whichever was registered (RFC 6749 2.3.1,
 * OAuth 2.1 2.4.1: Basic MUST be taken from any client issued a secret; the body is the
 * alternative), never by their id alone; a public client and a metadata document's (a URL)
 * by the id alone; an id that is neither registered nor a URL never (RFC 6749 5.2: an unknown
 * client is invalid_client; a client revoked since told so registers again). Secrets are
 * compared as hashes, in constant time, so their length leaks nothing either. */
static bool client_auth_ok(struct authserver *as, const char *id, enum clientmeta_auth used,
                           const char *secret)
{
    const struct client *c = find_client(as, id);
    if (c && c == &as->static_client) {
        unsigned char h[32];
        crypto_sha256(secret, strlen(secret), h);
        return used != CLIENTMETA_AUTH_NONE && crypto_equal(h, as->static_secret_hash, 32);
    }
    if (c && c->auth != CLIENTMETA_AUTH_NONE) {
        char h[65];
        tokenstore_hash(secret, h);
        return used != CLIENTMETA_AUTH_NONE && crypto_equal(h, c->secret_hash, 64);
    }
    return used == CLIENTMETA_AUTH_NONE && (c || clientdoc_is_url(id));
}

/* Who asks at endpoint ("/token", "/revoke"): client_id and client_secret in the body
 * (client_secret_post), both in an HTTP Basic header (client_secret_basic), or client_id alone
 * (a public client); client_auth_ok says whether that is enough for this client. Writes the
 * client's id; false when it answered (400, or 401 invalid_client, RFC 6749 5.2, logged with
 * the id it claimed: the client's text, so only when it is short printable text). */
static bool token_client(struct authserver *as, struct hreq *r, const char *endpoint,
                         const char *body, size_t len, char client_id[PARAM_MAX + 1])
{
    char form_id[PARAM_MAX + 1], secret[PARAM_MAX + 1];
    const char *authz = hreq_header(r, "Authorization");
    enum form_result fid = form_get(body, len, "client_id", form_id, sizeof form_id);
    enum form_result fsec = form_get(body, len, "client_secret", secret, sizeof secret);
    bool ok = true;
    client_id[0] = '\0';
    if (fid == FORM_BAD || fsec == FORM_BAD || (authz && fsec == FORM_OK) ||
        (!authz && fid != FORM_OK)) {
        explicit_bzero(secret, sizeof secret);
        oauth_error(r, 400, "invalid_request", "client_id is required, once, and one way of "
                                               "client authentication at most");
        return false;
    }
    enum clientmeta_auth used = authz            ? CLIENTMETA_AUTH_BASIC
                                : fsec == FORM_OK ? CLIENTMETA_AUTH_POST
                                                  : CLIENTMETA_AUTH_NONE;
    if (used != CLIENTMETA_AUTH_POST)
        secret[0] = '\0';
    if (authz) {
        ok = form_basic_auth(authz, client_id, PARAM_MAX + 1, secret, sizeof secret);
        if (!ok)
            client_id[0] = '\0'; /* what it holds is no id */
        ok = ok && (fid != FORM_OK || strcmp(form_id, client_id) == 0);
    } else {
        snprintf(client_id, PARAM_MAX + 1, "%s", form_id);
    }
    ok = ok && client_auth_ok(as, client_id, used, secret);
    explicit_bzero(secret, sizeof secret);
    if (!ok) {
        bool shown = *client_id && strlen(client_id) <= 128 && clientmeta_name_ok(client_id);
        log_warn("oauth: %s: client authentication failed (client %s)", endpoint,
                 shown ? client_id : "id not shown: empty, long or not printable");
        if (authz)
            hreq_add_header(r, "WWW-Authenticate", "Basic realm=\"oauth\"");
        oauth_error(r, 401, "invalid_client", "client authentication failed");
    }
    return ok;
}

static void token_endpoint(struct authserver *as, struct hreq *r)
{
    size_t len;
    const char *body = hreq_body(r, &len);
    char grant[40];
    if (body == NULL)
        body = "", len = 0;
    char client_id[PARAM_MAX + 1];
    if (!token_client(as, r, "/token", body, len, client_id))
        return;
    enum form_result gr = form_get(body, len, "grant_type", grant, sizeof grant);
    if (gr == FORM_OK && strcmp(grant, "authorization_code") == 0)
        grant_code(as, r, body, len, client_id);
    else if (gr == FORM_OK && strcmp(grant, "refresh_token") == 0)
        grant_refresh(as, r, body, len, client_id);
    else
        oauth_error(r, 400, gr == FORM_OK ? "unsupported_grant_type" : "invalid_request",
                    "grant_type must be authorization_code or refresh_token");
}

/* ---- /revoke (RFC 7009) ---- */

/* The client authenticates as at /token. A refresh token takes its whole family (every token
 * of that authorization) with it, an access token only itself. Unknown, expired or another
 * client's tokens are left alone and answered 200 all the same, so the answer tells nothing. */
static void revoke_endpoint(struct authserver *as, struct hreq *r)
{
    size_t len;
    const char *body = hreq_body(r, &len);
    char client_id[PARAM_MAX + 1], token[80], hint[40], err[400];
    if (body == NULL)
        body = "", len = 0;
    if (!token_client(as, r, "/revoke", body, len, client_id))
        return;
    if (form_get(body, len, "token", token, sizeof token) != FORM_OK ||
        form_get(body, len, "token_type_hint", hint, sizeof hint) == FORM_BAD) {
        oauth_error(r, 400, "invalid_request", "token is required, once");
        return;
    }
    const struct token_grant *g = tokenstore_find(as->tokens, token, time(NULL));
    if (g && strcmp(g->client_id, client_id) == 0) {
        bool family = g->kind == TOKEN_REFRESH;
        if (!tokenstore_revoke(as->tokens, token, family, err, sizeof err)) {
            log_error("oauth: %s", err);
            explicit_bzero(token, sizeof token);
            oauth_error(r, 503, "temporarily_unavailable", "the token store cannot be written");
            return;
        }
        log_info("oauth: client %s revoked %s", client_id,
                 family ? "a refresh token and its family" : "an access token");
    }
    explicit_bzero(token, sizeof token);
    hreq_add_header(r, "Cache-Control", "no-store");
    hreq_reply(r, 200, "application/json", "{}", 2);
}

/* ---- routing ---- */

static void method_not_allowed(struct hreq *r, const char *allow)
{
    hreq_add_header(r, "Allow", allow);
    oauth_error(r, 405, "invalid_request", "method not allowed here");
}

bool oauth_cors(struct hreq *r, const char *methods)
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

/* The endpoints a browser-based client calls from another origin, with the methods they take;
 * NULL for /authorize (the owner's consent is no cross-origin API) and /register when off. */
static const char *cors_methods(const struct authserver *as, const char *path)
{
    if (strcmp(path, WK_AS) == 0 || strcmp(path, WK_OIDC) == 0)
        return "GET, HEAD, OPTIONS";
    if (strcmp(path, "/token") == 0 || strcmp(path, "/revoke") == 0 ||
        (as->dcr && strcmp(path, "/register") == 0))
        return "POST, OPTIONS";
    return NULL;
}

void authserver_headers(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms)
{
    const char *path = hreq_path(r), *m = hreq_method(r);
    bool get = strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0, post = strcmp(m, "POST") == 0;
    bool first;
    const char *cors = cors_methods(as, path);
    if (cors && oauth_cors(r, cors))
        return;
    clients_sync(as);
    if (strcmp(path, WK_AS) == 0 || strcmp(path, WK_OIDC) == 0) {
        if (get)
            metadata(as, r);
        else
            method_not_allowed(r, "GET, HEAD");
    } else if (strcmp(path, "/authorize") == 0) {
        if (get)
            authorize_get(as, r, ip);
        else if (!post)
            method_not_allowed(r, "GET, HEAD, POST");
    } else if (strcmp(path, "/token") == 0 || strcmp(path, "/revoke") == 0) {
        if (!post)
            method_not_allowed(r, "POST");
    } else if (strcmp(path, "/register") == 0) {
        if (!as->dcr)
            oauth_error(r, 404, "invalid_request", "dynamic client registration is off "
                                                   "(OAUTH_DCR=0)");
        else if (!post)
            method_not_allowed(r, "POST");
        else if (ratelimit_take(as->rl_register, ip, now_ms, &first)) {
            hreq_add_header(r, "Retry-After", "60");
            oauth_error(r, 429, "temporarily_unavailable", "too many registrations; wait a "
                                                           "minute");
        }
    }
}

void authserver_request(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms)
{
    const char *path = hreq_path(r);
    clients_sync(as);
    if (strcmp(path, "/authorize") == 0)
        authorize_post(as, r, ip, now_ms);
    else if (strcmp(path, "/token") == 0)
        token_endpoint(as, r);
    else if (strcmp(path, "/register") == 0) {
        int lock = as->clients_path ? storefile_lock(as->clients_path) : -1;
        clients_sync(as); /* under the lock: the list a revocation just wrote */
        register_client(as, r);
        storefile_unlock(lock);
    } else if (strcmp(path, "/revoke") == 0)
        revoke_endpoint(as, r);
}

/* ---- for `hermes-mcp oauth clients` ---- */

bool authserver_client_at(struct authserver *as, size_t i, struct authserver_client_info *out)
{
    if (i == 0)
        clients_sync(as);
    if (i >= as->nclients)
        return false;
    const struct client *c = &as->clients[i];
    *out = (struct authserver_client_info){.id = c->id, .name = c->name,
                                           .redirects = (const char *const *)c->redirects,
                                           .nredirects = c->nredirects, .created = c->created};
    return true;
}

bool authserver_client_remove(struct authserver *as, const char *id, bool *found, char *err,
                              size_t errlen)
{
    *found = false;
    if (as->clients_path == NULL)
        return true;
    int lock = storefile_lock(as->clients_path);
    clients_sync(as);
    bool ok = true;
    for (size_t i = 0; i < as->nclients; i++) {
        if (strcmp(as->clients[i].id, id) != 0)
            continue;
        struct client gone = as->clients[i];
        memmove(&as->clients[i], &as->clients[i + 1],
                (as->nclients - i - 1) * sizeof *as->clients);
        as->nclients--;
        memset(&as->clients[as->nclients], 0, sizeof *as->clients);
        *found = true;
        ok = save_clients(as, err, errlen);
        free(gone.name);
        for (size_t j = 0; j < gone.nredirects; j++)
            free(gone.redirects[j]);
        break;
    }
    storefile_unlock(lock);
    return ok;
}
