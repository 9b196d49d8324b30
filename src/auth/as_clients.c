/* as_clients.c — the registered OAuth clients: the table, its file (atomic, mode 600, read again
 * when `hermes-mcp oauth clients revoke` replaced it) and the calls that CLI makes. */
#include "as_internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomicfile.h"
#include "clientmeta.h"
#include "log.h"
#include "mem.h"
#include "readfile.h"
#include "storefile.h"

char *authserver_clients_path_beside(const char *file)
{
    const char *slash = strrchr(file, '/');
    return xasprintf("%.*soauth-clients.json", slash ? (int)(slash - file + 1) : 0, file);
}

size_t authserver_client_count(const struct authserver *as)
{
    return as->nclients;
}

void as_client_clear(struct client *c)
{
    free(c->name);
    for (size_t j = 0; j < c->nredirects; j++)
        free(c->redirects[j]);
}

void as_free_clients(struct client *clients, size_t n)
{
    for (size_t i = 0; i < n; i++)
        as_client_clear(&clients[i]);
    free(clients);
}

struct client *as_find_client(struct authserver *as, const char *id)
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
json_t *as_client_json(const struct client *c)
{
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
    }
    return o;
}

bool as_save_clients(struct authserver *as, char *err, size_t errlen)
{
    json_t *list = json_array();
    bool confidential = false;
    for (size_t i = 0; i < as->nclients; i++) {
        confidential = confidential || as->clients[i].auth != CLIENTMETA_AUTH_NONE;
        json_array_append_new(list, as_client_json(&as->clients[i]));
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
        json_array_size(uris) > REDIRECTS_MAX || as_find_client(as, id) ||
        as->nclients >= AUTHSERVER_CLIENTS_MAX)
        return false;
    json_array_foreach(uris, i, u) if (!json_is_string(u)) return false;
    /* Checked with the configured schemes; one no longer allowed (the owner changed
     * OAUTH_ALLOWED_REDIRECT_SCHEMES) costs that client only, not the whole file. */
    json_array_foreach(uris, i, u)
    {
        if (!authserver_redirect_ok_in(json_string_value(u), as->schemes)) {
            log_warn("oauth: skipping OAuth client %s: its redirect URI scheme is not allowed "
                     "(OAUTH_ALLOWED_REDIRECT_SCHEMES)",
                     id);
            return true;
        }
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

bool as_client_add_json(struct authserver *as, json_t *o)
{
    const char *why = NULL;
    return load_client(as, o, 2, &why) &&
           as_find_client(as, json_string_value(json_object_get(o, "client_id"))) != NULL;
}

void as_client_forget(struct authserver *as, const char *id)
{
    for (size_t i = 0; i < as->nclients; i++) {
        if (id && strcmp(as->clients[i].id, id) != 0)
            continue;
        as_client_clear(&as->clients[i]);
        memmove(&as->clients[i], &as->clients[i + 1], (as->nclients - i - 1) * sizeof *as->clients);
        as->nclients--;
        memset(&as->clients[as->nclients], 0, sizeof *as->clients);
        i--;
    }
}

bool as_load_clients(struct authserver *as, char *err, size_t errlen)
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
        snprintf(err, errlen,
                 "OAuth clients file %s is readable or writable by others; run: "
                 "chmod 600 %s",
                 path, path);
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
    json_array_foreach(list, i, o) if (ok && !load_client(as, o, version, &why_client))
    {
        ok = false;
        bad_id = json_string_value(json_object_get(o, "client_id"));
    }
    if (!ok && why_client)
        snprintf(err, errlen,
                 "OAuth clients file %s is not one this server wrote: client %.64s: "
                 "%s",
                 path, bad_id ? bad_id : "(no id)", why_client);
    else if (!ok)
        snprintf(err, errlen,
                 "OAuth clients file %s is not one this server wrote (version 1 "
                 "or 2)",
                 path);
    json_decref(doc);
    return ok;
}

/* Reads the clients file again when another process (oauth clients revoke) replaced it; one
 * that cannot be used now is logged and the clients known so far kept. */
void as_clients_sync(struct authserver *as)
{
    char err[400];
    if (as->clients_path == NULL || !storefile_changed(as->clients_path, &as->clients_seen))
        return;
    struct client *old = as->clients;
    size_t nold = as->nclients;
    as->clients = xcalloc(AUTHSERVER_CLIENTS_MAX, sizeof *as->clients);
    as->nclients = 0;
    if (as_load_clients(as, err, sizeof err)) {
        as_free_clients(old, nold);
        return;
    }
    log_event(EV_CLIENTS_FILE_REJECTED, NULL, "oauth: %s; keeping the clients read before", err);
    as_free_clients(as->clients, as->nclients);
    as->clients = old;
    as->nclients = nold;
    storefile_note(as->clients_path, &as->clients_seen); /* said once */
}

/* ---- for `hermes-mcp oauth clients` ---- */

bool authserver_client_at(struct authserver *as, size_t i, struct authserver_client_info *out)
{
    if (i == 0)
        as_clients_sync(as);
    if (i >= as->nclients)
        return false;
    const struct client *c = &as->clients[i];
    *out = (struct authserver_client_info){.id = c->id,
                                           .name = c->name,
                                           .redirects = (const char *const *)c->redirects,
                                           .nredirects = c->nredirects,
                                           .created = c->created};
    return true;
}

bool authserver_client_remove(struct authserver *as, const char *id, bool *found, char *err,
                              size_t errlen)
{
    *found = false;
    if (as->clients_path == NULL)
        return true;
    int lock = storefile_lock(as->clients_path);
    as_clients_sync(as);
    bool ok = true;
    for (size_t i = 0; i < as->nclients; i++) {
        if (strcmp(as->clients[i].id, id) != 0)
            continue;
        struct client gone = as->clients[i];
        memmove(&as->clients[i], &as->clients[i + 1], (as->nclients - i - 1) * sizeof *as->clients);
        as->nclients--;
        memset(&as->clients[as->nclients], 0, sizeof *as->clients);
        *found = true;
        ok = as_save_clients(as, err, errlen);
        free(gone.name);
        for (size_t j = 0; j < gone.nredirects; j++)
            free(gone.redirects[j]);
        break;
    }
    storefile_unlock(lock);
    return ok;
}
