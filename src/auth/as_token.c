/* as_token.c — POST /token (the code with its PKCE verifier, or a refresh token that rotates) and
 * POST /revoke (RFC 7009), with client authentication as RFC 6749 2.3 says. */
#include "as_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clientdoc.h"
#include "clientmeta.h"
#include "crypto.h"
#include "form.h"
#include "httpd.h"
#include "log.h"
#include "mem.h"
#include "oauthtokens.h"

/* Issues an access and a refresh token of family for client and scope, and answers with them. */
static void issue_pair(struct authserver *as, struct hreq *r, const char *client_id,
                       const char *scope, const char *family)
{
    char access[65], refresh[65], err[400];
    time_t now = time(NULL);
    struct token_grant g = {.kind = TOKEN_ACCESS,
                            .client_id = client_id,
                            .scope = scope,
                            .resource = as->resource,
                            .family = family,
                            .issued = now, /* both tokens from one clock reading: the store's
                                              write between them may cross a second */
                            .expires = now + (time_t)as->access_ttl_s};
    if (!tokenstore_issue(as->tokens, &g, access, err, sizeof err)) {
        log_error("oauth: %s", err);
        as_oauth_error(r, 503, OAUTH_TEMPORARILY_UNAVAILABLE,
                       "the token store cannot take a token");
        return;
    }
    g.kind = TOKEN_REFRESH;
    g.expires = now + (time_t)as->refresh_ttl_s;
    if (!tokenstore_issue(as->tokens, &g, refresh, err, sizeof err)) {
        log_error("oauth: %s", err);
        tokenstore_revoke(as->tokens, access, false, err, sizeof err);
        explicit_bzero(access, sizeof access);
        as_oauth_error(r, 503, OAUTH_TEMPORARILY_UNAVAILABLE,
                       "the token store cannot take a token");
        return;
    }
    as_reply_json(r, 200,
                  json_pack("{s:s, s:s, s:i, s:s, s:s}", "access_token", access, "token_type",
                            "Bearer", "expires_in", (int)as->access_ttl_s, "refresh_token", refresh,
                            "scope", scope));
    explicit_bzero(access, sizeof access);
    explicit_bzero(refresh, sizeof refresh);
}

bool as_verifier_matches(const char *verifier, const char *challenge)
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
        as_oauth_error(r, 400, OAUTH_INVALID_REQUEST, "code and client_id are required, once each");
        return;
    }
    if (form_get(body, len, "code_verifier", verifier, sizeof verifier) != FORM_OK) {
        as_oauth_error(r, 400, OAUTH_INVALID_REQUEST, "code_verifier is required (PKCE)");
        return;
    }
    if (as->pg) {
        as_pg_grant_code(as, r, code, uri, verifier, resource, client_id);
        return;
    }
    crypto_sha256(code, strlen(code), h);
    struct code *k = NULL;
    for (size_t i = 0; i < CODES_MAX && k == NULL; i++)
        if (as->codes[i].expires > now && crypto_equal(as->codes[i].hash, h, 32))
            k = &as->codes[i];
    if (k == NULL) {
        as_oauth_error(r, 400, OAUTH_INVALID_GRANT, "the code is unknown or expired");
        return;
    }
    if (k->used) {
        /* A replay: whoever has the code now also got the tokens; revoke them (RFC 9700). */
        log_warn("oauth: a code of client %s was used twice; its tokens are revoked", k->client_id);
        if (*k->family)
            tokenstore_revoke_family(as->tokens, k->family, err, sizeof err);
        k->expires = 0;
        as_oauth_error(r, 400, OAUTH_INVALID_GRANT, "the code was already used");
        return;
    }
    /* redirect_uri must match, and may be left out only if /authorize had none either. */
    bool uri_ok = strcmp(uri, k->redirect_uri) == 0 || (*uri == '\0' && !k->redirect_sent);
    if (strcmp(k->client_id, client_id) != 0 || !uri_ok) {
        k->expires = 0;
        as_oauth_error(r, 400, OAUTH_INVALID_GRANT,
                       "the code was issued to another client or "
                       "redirect_uri");
        return;
    }
    if (*resource && strcmp(resource, as->resource) != 0) {
        as_oauth_error(r, 400, OAUTH_INVALID_TARGET, "this server issues tokens for its /mcp only");
        return;
    }
    if (!as_verifier_matches(verifier, k->challenge)) {
        k->expires = 0;
        as_oauth_error(r, 400, OAUTH_INVALID_GRANT,
                       "the code_verifier does not match the challenge");
        return;
    }
    k->used = true; /* kept until it expires, so a replay is seen */
    if (!crypto_random_hex(k->family, 16)) {
        as_oauth_error(r, 500, OAUTH_SERVER_ERROR, "the random generator failed");
        return;
    }
    issue_pair(as, r, k->client_id, k->scope, k->family);
}

static void grant_refresh(struct authserver *as, struct hreq *r, const char *body, size_t len,
                          const char *client_id)
{
    char token[80], err[400];
    if (form_get(body, len, "refresh_token", token, sizeof token) != FORM_OK) {
        as_oauth_error(r, 400, OAUTH_INVALID_REQUEST, "refresh_token and client_id are required");
        return;
    }
    if (as->pg) {
        as_pg_grant_refresh(as, r, token, client_id);
        return;
    }
    const struct token_grant *g = tokenstore_find(as->tokens, token, time(NULL));
    if (g == NULL || g->kind != TOKEN_REFRESH || strcmp(g->client_id, client_id) != 0) {
        as_oauth_error(r, 400, OAUTH_INVALID_GRANT,
                       "the refresh token is unknown, expired or not "
                       "this client's");
        return;
    }
    if (g->used) {
        log_warn("oauth: a rotated refresh token of client %s was used again; its family is "
                 "revoked",
                 client_id);
        tokenstore_revoke(as->tokens, token, true, err, sizeof err);
        as_oauth_error(r, 400, OAUTH_INVALID_GRANT, "the refresh token was already used");
        return;
    }
    /* Copies: the grant's strings belong to the store, which the next calls change. */
    char *scope = xstrdup(g->scope), *family = g->family ? xstrdup(g->family) : NULL;
    if (!tokenstore_mark_used(as->tokens, token, err, sizeof err)) {
        if (tokenstore_find(as->tokens, token, time(NULL)) == NULL) /* revoked meanwhile */
            as_oauth_error(r, 400, OAUTH_INVALID_GRANT, "the refresh token was revoked");
        else {
            log_error("oauth: %s", err);
            as_oauth_error(r, 503, OAUTH_TEMPORARILY_UNAVAILABLE,
                           "the token store cannot be written");
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
    const struct client *c = as_find_client(as, id);
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
        as_oauth_error(r, 400, OAUTH_INVALID_REQUEST,
                       "client_id is required, once, and one way of "
                       "client authentication at most");
        return false;
    }
    enum clientmeta_auth used = authz             ? CLIENTMETA_AUTH_BASIC
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
        log_event(EV_CLIENT_AUTH_FAILED,
                  LOG_FIELDS(LF_S("endpoint", endpoint), LF_S("client", shown ? client_id : "")),
                  "oauth: %s: client authentication failed (client %s)", endpoint,
                  shown ? client_id : "id not shown: empty, long or not printable");
        if (authz)
            hreq_add_header(r, "WWW-Authenticate", "Basic realm=\"oauth\"");
        as_oauth_error(r, 401, OAUTH_INVALID_CLIENT, "client authentication failed");
    }
    return ok;
}

/* With a store: the client the request names (by the body or Basic), in the table before the
 * request is judged; false when it is being asked for (the endpoint runs again then). */
static bool client_in(struct authserver *as, struct hreq *r, const char *body, size_t len,
                      void (*again)(struct authserver *as, struct hreq *r, const char *ip))
{
    char id[PARAM_MAX + 1], secret[PARAM_MAX + 1];
    const char *authz = hreq_header(r, "Authorization");
    if (as->pg == NULL)
        return true;
    if (authz == NULL || !form_basic_auth(authz, id, sizeof id, secret, sizeof secret))
        if (form_get(body, len, "client_id", id, sizeof id) != FORM_OK)
            id[0] = '\0';
    explicit_bzero(secret, sizeof secret);
    return as_pg_client_ready(as, r, id, NULL, again);
}

static void token_again(struct authserver *as, struct hreq *r, const char *ip)
{
    (void)ip;
    as_token_endpoint(as, r);
}

void as_token_endpoint(struct authserver *as, struct hreq *r)
{
    size_t len;
    const char *body = hreq_body(r, &len);
    char grant[40];
    if (body == NULL)
        body = "", len = 0;
    if (!client_in(as, r, body, len, token_again))
        return;
    char client_id[PARAM_MAX + 1];
    if (!token_client(as, r, "/token", body, len, client_id))
        return;
    enum form_result gr = form_get(body, len, "grant_type", grant, sizeof grant);
    if (gr == FORM_OK && strcmp(grant, "authorization_code") == 0)
        grant_code(as, r, body, len, client_id);
    else if (gr == FORM_OK && strcmp(grant, "refresh_token") == 0)
        grant_refresh(as, r, body, len, client_id);
    else
        as_oauth_error(r, 400, gr == FORM_OK ? OAUTH_UNSUPPORTED_GRANT_TYPE : OAUTH_INVALID_REQUEST,
                       "grant_type must be authorization_code or refresh_token");
}

/* ---- /revoke (RFC 7009) ---- */

/* The client authenticates as at /token. A refresh token takes its whole family (every token
 * of that authorization) with it, an access token only itself. Unknown, expired or another
 * client's tokens are left alone and answered 200 all the same, so the answer tells nothing. */
static void revoke_again(struct authserver *as, struct hreq *r, const char *ip)
{
    (void)ip;
    as_revoke_endpoint(as, r);
}

void as_revoke_endpoint(struct authserver *as, struct hreq *r)
{
    size_t len;
    const char *body = hreq_body(r, &len);
    char client_id[PARAM_MAX + 1], token[80], hint[40], err[400];
    if (body == NULL)
        body = "", len = 0;
    if (!client_in(as, r, body, len, revoke_again))
        return;
    if (!token_client(as, r, "/revoke", body, len, client_id))
        return;
    if (form_get(body, len, "token", token, sizeof token) != FORM_OK ||
        form_get(body, len, "token_type_hint", hint, sizeof hint) == FORM_BAD) {
        as_oauth_error(r, 400, OAUTH_INVALID_REQUEST, "token is required, once");
        return;
    }
    if (as->pg) {
        as_pg_revoke(as, r, token, client_id);
        explicit_bzero(token, sizeof token);
        return;
    }
    const struct token_grant *g = tokenstore_find(as->tokens, token, time(NULL));
    if (g && strcmp(g->client_id, client_id) == 0) {
        bool family = g->kind == TOKEN_REFRESH;
        if (!tokenstore_revoke(as->tokens, token, family, err, sizeof err)) {
            log_error("oauth: %s", err);
            explicit_bzero(token, sizeof token);
            as_oauth_error(r, 503, OAUTH_TEMPORARILY_UNAVAILABLE,
                           "the token store cannot be written");
            return;
        }
        log_info("oauth: client %s revoked %s", client_id,
                 family ? "a refresh token and its family" : "an access token");
    }
    explicit_bzero(token, sizeof token);
    hreq_add_header(r, "Cache-Control", "no-store");
    hreq_reply(r, 200, "application/json", "{}", 2);
}
