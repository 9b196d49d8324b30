/* as_register.c — POST /register: dynamic client registration (RFC 7591), public or confidential
 * (a secret shown once, kept as its hash); a full table makes room from clients that never got a
 * token. */
#include "as_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clientmeta.h"
#include "crypto.h"
#include "httpd.h"
#include "log.h"
#include "mem.h"
#include "oauthtokens.h"
#include "strmap.h"

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
            as_client_clear(c);
        } else {
            as->clients[kept++] = *c;
        }
    }
    for (size_t i = kept; i < as->nclients; i++)
        memset(&as->clients[i], 0, sizeof as->clients[i]);
    as->nclients = kept;
    strmap_free(with_tokens);
}

void as_register(struct authserver *as, struct hreq *r, const char *ip)
{
    size_t len;
    const char *body = hreq_body(r, &len);
    if (len > AUTHSERVER_REGISTER_BODY_MAX) {
        as_oauth_error(r, 413, OAUTH_INVALID_CLIENT_METADATA, "the registration is too large");
        return;
    }
    json_t *doc = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, NULL);
    enum oauth_err code = OAUTH_INVALID_CLIENT_METADATA;
    enum clientmeta_auth auth = CLIENTMETA_AUTH_NONE;
    const char *why = clientmeta_check_registration(doc, as->schemes, &code, &auth);
    json_t *uris = json_object_get(doc, "redirect_uris");
    json_t *name = json_object_get(doc, "client_name");
    size_t i;
    json_t *u;
    if (why == NULL && as->pg && as->nclients >= AUTHSERVER_CLIENTS_MAX)
        as_client_forget(as, NULL); /* a cache of the store's, which counts them itself */
    if (why == NULL && as->nclients >= AUTHSERVER_CLIENTS_MAX && as->tokens)
        drop_unused_clients(as);
    if (why == NULL && as->nclients >= AUTHSERVER_CLIENTS_MAX) {
        why = "the server holds as many clients as it takes";
        code = OAUTH_TEMPORARILY_UNAVAILABLE;
    }
    if (why) {
        json_decref(doc);
        as_oauth_error(r, 400, code, why);
        return;
    }
    struct client *c = &as->clients[as->nclients];
    char secret[65] = "";
    c->auth = auth;
    if (!crypto_random_hex(c->id, 16) ||
        (c->auth != CLIENTMETA_AUTH_NONE && !crypto_random_hex(secret, 32))) {
        memset(c, 0, sizeof *c);
        json_decref(doc);
        as_oauth_error(r, 500, OAUTH_SERVER_ERROR, "the random generator failed");
        return;
    }
    if (c->auth != CLIENTMETA_AUTH_NONE)
        tokenstore_hash(secret, c->secret_hash); /* the secret itself is shown once, below */
    as->nclients++;
    c->created = time(NULL);
    c->name = xstrdup(name ? json_string_value(name) : "unnamed client");
    json_array_foreach(uris, i, u) c->redirects[c->nredirects++] = xstrdup(json_string_value(u));
    char err[400];
    if (as->pg) {
        json_t *out = json_pack("{s:s, s:I, s:O, s:s, s:[ss], s:[s], s:s}", "client_id", c->id,
                                "client_id_issued_at", (json_int_t)c->created, "redirect_uris",
                                uris, "token_endpoint_auth_method", clientmeta_auth_name(c->auth),
                                "grant_types", "authorization_code", "refresh_token",
                                "response_types", "code", "client_name", c->name);
        if (out && c->auth != CLIENTMETA_AUTH_NONE) {
            json_object_set_new(out, "client_secret", json_string(secret));
            json_object_set_new(out, "client_secret_expires_at", json_integer(0));
        }
        explicit_bzero(secret, sizeof secret);
        json_decref(doc);
        as_pg_register(as, r, ip, out);
        return;
    }
    if (as->clients_path && !as_save_clients(as, err, sizeof err)) {
        /* Not durable, not registered: the client would be lost at the next restart. */
        log_error("oauth: %s", err);
        free(c->name);
        for (size_t j = 0; j < c->nredirects; j++)
            free(c->redirects[j]);
        memset(c, 0, sizeof *c);
        as->nclients--;
        explicit_bzero(secret, sizeof secret);
        json_decref(doc);
        as_oauth_error(r, 503, OAUTH_TEMPORARILY_UNAVAILABLE, "the client cannot be stored");
        return;
    }
    json_t *out = json_pack("{s:s, s:I, s:O, s:s, s:[ss], s:[s], s:s}", "client_id", c->id,
                            "client_id_issued_at", (json_int_t)time(NULL), "redirect_uris", uris,
                            "token_endpoint_auth_method", clientmeta_auth_name(c->auth),
                            "grant_types", "authorization_code", "refresh_token", "response_types",
                            "code", "client_name", c->name);
    if (out && c->auth != CLIENTMETA_AUTH_NONE) { /* RFC 7591 3.2.1; it never expires */
        /* Its copies in out and in the answer's text (as_reply_json) are freed unwiped, as the
         * tokens issue_pair sends are: jansson and the HTTP layer own those buffers. Only
         * secret[] is ours to wipe, below. */
        json_object_set_new(out, "client_secret", json_string(secret));
        json_object_set_new(out, "client_secret_expires_at", json_integer(0));
    }
    explicit_bzero(secret, sizeof secret);
    json_decref(doc);
    log_info("oauth: registered client %s", c->id); /* not its name: the client's text */
    as_reply_json(r, 201, out);
}
