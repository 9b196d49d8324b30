/* oauthcli.c — `hermes-mcp oauth clients [revoke ID]` and `hermes-mcp oauth tokens [revoke ...]`.
 *
 * It opens the same files serve uses (the token store and the clients file beside it, found from
 * the env file) through the same modules, so the format has one reader and one writer. A change
 * is made under the file's lock and written atomically (storefile.h); a running server notices
 * the replaced file at its next request, so a revoked token is refused from then on without a
 * restart or a signal. Nothing secret is printed: a token or its hash never, only who holds it,
 * its kind, scope, family and times. "Last used" of a client is when it last got a token (an
 * authorization or a refresh): calls made with an access token are not written down. */
#include "oauthcli.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "authserver.h"
#include "clientmeta.h"
#include "config.h"
#include "exitcode.h"
#include "mem.h"
#include "oauthpgcli.h"
#include "oauthtokens.h"
#include "principal.h"
#include "storeschema.h"
#include "timefmt.h"

#define ARG_MAX_LEN 512

const char oauthcli_usage[] =
    "usage: hermes-mcp oauth clients [--env-file FILE] [--json]\n"
    "       hermes-mcp oauth clients revoke ID [--env-file FILE]\n"
    "       hermes-mcp oauth tokens [--env-file FILE] [--json]\n"
    "       hermes-mcp oauth tokens revoke [--client ID] [--family F] [--env-file FILE]\n"
    "\n"
    "clients         the OAuth clients: client id, when it registered, when it last got a token,\n"
    "                its live tokens, the hosts its redirect URIs name, and its name (the static\n"
    "                client of OAUTH_CLIENT_ID is listed too, marked static)\n"
    "clients revoke  forgets the client and revokes every token it holds; it must register and\n"
    "                be allowed by the owner again. The static client's tokens are revoked, but "
    "it\n"
    "                stays while OAUTH_CLIENT_ID is in FILE.\n"
    "tokens          the tokens stored: principal (oauth:CLIENT), kind (access or refresh), state\n"
    "                (live, expired, rotated), expiry, family (one authorization and its\n"
    "                refreshes) and scope; never the token or its hash\n"
    "tokens revoke   revokes the tokens of a client (--client), of a family (--family), or of\n"
    "                both at once\n"
    "\n"
    "  --env-file FILE   the env file serve reads (default ./.env; needs OAUTH_ISSUER_URL)\n"
    "  --json            one JSON array instead of the table\n"
    "\n"
    "A running server sees a revocation at its next request: no restart, no signal.\n"
    "Exit codes: 0 done, 1 no such client or token, or a file could not be read or written,\n"
    "2 usage or configuration error.\n";

struct opts {
    const char *what; /* "clients" or "tokens" */
    bool revoke, json;
    const char *env_file, *id, *client, *family;
};

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "hermes-mcp oauth: %s%s%s\n%s", what, arg ? arg : "", arg ? "'" : "",
            oauthcli_usage);
    return EXIT_USAGE;
}

static bool arg_ok(const char *a)
{
    return a && *a && strlen(a) <= ARG_MAX_LEN && a[0] != '-';
}

/* Returns -1 when parsed, else the exit code (help printed, or a usage error). */
static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.what = argv[0], .env_file = ".env"};
    bool clients = strcmp(o->what, "clients") == 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(oauthcli_usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--env-file") && next)
            o->env_file = argv[++i];
        else if (!strcmp(a, "--json") && !o->revoke)
            o->json = true;
        else if (!strcmp(a, "revoke") && i == 1 && !o->json)
            o->revoke = true;
        else if (clients && o->revoke && !o->id && arg_ok(a))
            o->id = a;
        else if (!clients && o->revoke && !strcmp(a, "--client") && arg_ok(next))
            o->client = argv[++i];
        else if (!clients && o->revoke && !strcmp(a, "--family") && arg_ok(next))
            o->family = argv[++i];
        else
            return usage_error("unexpected argument '", a);
    }
    if (clients && o->revoke && !o->id)
        return usage_error("say which client: oauth clients revoke ID", NULL);
    if (!clients && o->revoke && !o->client && !o->family)
        return usage_error("say which tokens: --client ID, --family F or both", NULL);
    return -1;
}

static void iso_time(time_t t, char out[TIMEFMT_SIZE])
{
    if (t <= 0 || timefmt_iso(t, out)[0] == '\0')
        snprintf(out, TIMEFMT_SIZE, "-");
}

static json_t *json_time(time_t t)
{
    char s[TIMEFMT_SIZE];
    iso_time(t, s);
    return t > 0 ? json_string(s) : json_null();
}

/* ---- what the files hold ---- */

struct admin {
    struct config cfg;
    PGconn *pg; /* with STORE_URL: the store, else NULL (the files) */
    struct tokenstore *tokens;
    struct authserver *as;
    char *resource;
};

static int admin_open(struct admin *ad, const char *env_file)
{
    char err[800];
    memset(ad, 0, sizeof *ad);
    if (!config_load(&ad->cfg, env_file, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return EXIT_USAGE;
    }
    if (ad->cfg.oauth_issuer == NULL) {
        fprintf(stderr,
                "hermes-mcp: OAuth is off in %s (no OAUTH_ISSUER_URL): there are no "
                "OAuth clients or tokens\n",
                env_file);
        return EXIT_USAGE;
    }
    if (ad->cfg.store_url) {
        ad->pg = storeschema_connect(ad->cfg.store_url, ad->cfg.store_password, err, sizeof err);
        if (ad->pg == NULL) {
            fprintf(stderr, "hermes-mcp: %s\n", err);
            return EXIT_FAIL;
        }
    }
    ad->tokens = tokenstore_open(ad->pg ? NULL : ad->cfg.oauth_store, err, sizeof err);
    if (ad->tokens == NULL) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return EXIT_FAIL;
    }
    ad->resource = xasprintf("%s/mcp", ad->cfg.oauth_issuer);
    char *clients = authserver_clients_path_beside(ad->cfg.oauth_store);
    struct authserver_opts ao = {.issuer = ad->cfg.oauth_issuer,
                                 .resource = ad->resource,
                                 .passphrase_path = "",
                                 .tokens = ad->tokens,
                                 .clients_path = ad->pg ? NULL : clients,
                                 .redirect_schemes = ad->cfg.oauth_redirect_schemes,
                                 .static_client_id = ad->cfg.oauth_client_id,
                                 .static_secret_hash = ad->cfg.oauth_client_secret_hash};
    ad->as = authserver_new(&ao, err, sizeof err);
    free(clients);
    if (ad->as == NULL ||
        (ad->pg && !oauthpgcli_load(ad->pg, ad->tokens, ad->as, err, sizeof err))) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return EXIT_FAIL;
    }
    return -1;
}

static void admin_close(struct admin *ad)
{
    authserver_free(ad->as);
    tokenstore_free(ad->tokens);
    if (ad->pg)
        PQfinish(ad->pg);
    free(ad->resource);
    config_cleanup(&ad->cfg);
}

/* The name of a client id, for the tokens list ("" when it is gone). */
static const char *client_name(struct admin *ad, const char *id)
{
    struct authserver_client_info c;
    if (ad->cfg.oauth_client_id && strcmp(ad->cfg.oauth_client_id, id) == 0)
        return "(static client)";
    for (size_t i = 0; authserver_client_at(ad->as, i, &c); i++)
        if (strcmp(c.id, id) == 0)
            return c.name;
    return "";
}

struct usage { /* of one client, from the token store */
    const char *client_id;
    time_t now, last;
    size_t live;
};

static void count_usage(const struct token_grant *g, void *arg)
{
    struct usage *u = arg;
    if (strcmp(g->client_id, u->client_id) != 0)
        return;
    if (g->issued > u->last)
        u->last = g->issued;
    u->live += g->expires > u->now && !g->used;
}

static struct usage usage_of(struct admin *ad, const char *id)
{
    struct usage u = {.client_id = id, .now = time(NULL)};
    tokenstore_each(ad->tokens, count_usage, &u);
    return u;
}

/* ---- oauth clients ---- */

static void add_client(struct admin *ad, json_t *list, const char *id, const char *name,
                       const char *const *redirects, size_t n, time_t created, bool is_static)
{
    struct usage u = usage_of(ad, id);
    json_t *hosts = json_array();
    for (size_t i = 0; i < n; i++) {
        char h[CLIENTMETA_URI_MAX + 1];
        clientmeta_redirect_host(redirects[i], h, sizeof h);
        json_array_append_new(hosts, json_string(h));
    }
    json_array_append_new(list, json_pack("{s:s, s:s, s:o, s:o, s:o, s:I, s:b}", "client_id", id,
                                          "client_name", name, "redirect_hosts", hosts, "created",
                                          json_time(created), "last_used", json_time(u.last),
                                          "live_tokens", (json_int_t)u.live, "static", is_static));
}

static void print_clients(json_t *list)
{
    size_t i;
    json_t *c;
    printf("%-32s  %-20s  %-20s  %6s  %-24s  %s\n", "CLIENT ID", "CREATED", "LAST USED", "TOKENS",
           "REDIRECT HOSTS", "NAME");
    json_array_foreach(list, i, c)
    {
        char hosts[256] = "";
        size_t j, used = 0;
        json_t *h;
        json_array_foreach(json_object_get(c, "redirect_hosts"), j, h) used +=
            (size_t)snprintf(hosts + used, used < sizeof hosts ? sizeof hosts - used : 0, "%s%s",
                             j ? "," : "", json_string_value(h));
        if (!*hosts)
            snprintf(hosts, sizeof hosts, "%s",
                     json_is_true(json_object_get(c, "static")) ? "(any allowed)" : "-");
        const char *created = json_string_value(json_object_get(c, "created"));
        const char *last = json_string_value(json_object_get(c, "last_used"));
        printf("%-32s  %-20s  %-20s  %6lld  %-24s  %s%s\n",
               json_string_value(json_object_get(c, "client_id")), created ? created : "-",
               last ? last : "never",
               (long long)json_integer_value(json_object_get(c, "live_tokens")), hosts,
               json_string_value(json_object_get(c, "client_name")),
               json_is_true(json_object_get(c, "static")) ? " [static]" : "");
    }
}

static int list_clients(struct admin *ad, bool as_json)
{
    json_t *list = json_array();
    struct authserver_client_info c;
    if (ad->cfg.oauth_client_id)
        add_client(ad, list, ad->cfg.oauth_client_id, "(static client, OAUTH_CLIENT_ID)", NULL, 0,
                   0, true);
    for (size_t i = 0; authserver_client_at(ad->as, i, &c); i++)
        add_client(ad, list, c.id, c.name, c.redirects, c.nredirects, c.created, false);
    if (as_json) {
        char *text = json_dumps(list, JSON_INDENT(2));
        puts(text ? text : "[]");
        free(text);
    } else {
        print_clients(list);
    }
    json_decref(list);
    return 0;
}

static int revoke_client(struct admin *ad, const char *id)
{
    char err[800];
    size_t gone = 0;
    bool found = false;
    bool is_static = ad->cfg.oauth_client_id && strcmp(ad->cfg.oauth_client_id, id) == 0;
    /* Files: the tokens first, from the moment they are gone a running server refuses them.
     * The store: the client, its tokens, codes and consents in one transaction. */
    bool ok =
        ad->pg ? oauthpgcli_remove_client(ad->pg, id, is_static, &gone, &found, err, sizeof err)
               : tokenstore_revoke_matching(ad->tokens, id, NULL, &gone, err, sizeof err) &&
                     (is_static || authserver_client_remove(ad->as, id, &found, err, sizeof err));
    if (!ok) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return EXIT_FAIL;
    }
    if (!found && !is_static && gone == 0) {
        fprintf(stderr, "hermes-mcp: no OAuth client %s (see: hermes-mcp oauth clients)\n", id);
        return EXIT_FAIL;
    }
    printf("revoked %s%s and its %zu token%s\n", found || is_static ? "client " : "the tokens of ",
           id, gone, gone == 1 ? "" : "s");
    if (is_static)
        printf("the static client stays while OAUTH_CLIENT_ID is set in %s; remove it (and "
               "OAUTH_CLIENT_SECRET) and restart the server to stop it for good\n",
               ad->cfg.env_file ? ad->cfg.env_file : "the env file");
    return 0;
}

/* ---- oauth tokens ---- */

struct token_list {
    struct admin *ad;
    json_t *list;
    time_t now;
};

static void add_token(const struct token_grant *g, void *arg)
{
    struct token_list *tl = arg;
    char principal[PRINCIPAL_NAME_MAX + 1]; /* as /metrics and the audit log name it */
    principal_oauth_name(g->client_id, principal);
    const char *state = g->expires <= tl->now ? "expired" : g->used ? "rotated" : "live";
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:s}", "principal", principal, "client_id",
                  g->client_id, "kind", g->kind == TOKEN_ACCESS ? "access" : "refresh", "state",
                  state, "scope", g->scope, "issued", json_time(g->issued), "expires",
                  json_time(g->expires), "resource", g->resource);
    json_object_set_new(o, "family", g->family ? json_string(g->family) : json_null());
    json_array_append_new(tl->list, o);
}

static int by_expiry(const void *a, const void *b)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, "expires"));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, "expires"));
    return strcmp(x ? x : "", y ? y : "");
}

static int list_tokens(struct admin *ad, bool as_json)
{
    struct token_list tl = {.ad = ad, .list = json_array(), .now = time(NULL)};
    tokenstore_each(ad->tokens, add_token, &tl);
    /* The store's order is its hash map's: sort by expiry so the listing is stable. */
    size_t n = json_array_size(tl.list);
    json_t **items = xcalloc(n ? n : 1, sizeof *items);
    for (size_t i = 0; i < n; i++)
        items[i] = json_incref(json_array_get(tl.list, i));
    qsort(items, n, sizeof *items, by_expiry);
    json_array_clear(tl.list);
    for (size_t i = 0; i < n; i++) {
        json_t *o = items[i];
        json_object_set_new(
            o, "client_name",
            json_string(client_name(ad, json_string_value(json_object_get(o, "client_id")))));
        json_array_append_new(tl.list, o);
    }
    free(items);
    if (as_json) {
        char *text = json_dumps(tl.list, JSON_INDENT(2));
        puts(text ? text : "[]");
        free(text);
    } else {
        size_t i;
        json_t *o;
        printf("%-38s  %-7s  %-7s  %-20s  %-32s  %s\n", "PRINCIPAL", "KIND", "STATE", "EXPIRES",
               "FAMILY", "SCOPE");
        json_array_foreach(tl.list, i, o)
        {
            const char *family = json_string_value(json_object_get(o, "family"));
            printf("%-38s  %-7s  %-7s  %-20s  %-32s  %s\n",
                   json_string_value(json_object_get(o, "principal")),
                   json_string_value(json_object_get(o, "kind")),
                   json_string_value(json_object_get(o, "state")),
                   json_string_value(json_object_get(o, "expires")), family ? family : "-",
                   json_string_value(json_object_get(o, "scope")));
        }
    }
    json_decref(tl.list);
    return 0;
}

static int revoke_tokens(struct admin *ad, const char *client, const char *family)
{
    char err[800];
    size_t gone = 0;
    if (ad->pg ? !oauthpgcli_revoke_tokens(ad->pg, client, family, &gone, err, sizeof err)
               : !tokenstore_revoke_matching(ad->tokens, client, family, &gone, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return EXIT_FAIL;
    }
    if (gone == 0) {
        fprintf(stderr, "hermes-mcp: no stored token matched (see: hermes-mcp oauth tokens)\n");
        return EXIT_FAIL;
    }
    printf("revoked %zu token%s\n", gone, gone == 1 ? "" : "s");
    return 0;
}

int oauthcli_main(int argc, char **argv)
{
    struct opts o;
    struct admin ad;
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    rc = admin_open(&ad, o.env_file);
    if (rc < 0) {
        bool clients = strcmp(o.what, "clients") == 0;
        if (clients)
            rc = o.revoke ? revoke_client(&ad, o.id) : list_clients(&ad, o.json);
        else
            rc = o.revoke ? revoke_tokens(&ad, o.client, o.family) : list_tokens(&ad, o.json);
    }
    admin_close(&ad);
    return rc;
}
