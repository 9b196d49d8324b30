/* gwpins.c — `hermes-mcp gateway pins` and `hermes-mcp gateway accept [NAME]`: the operator's
 * side of the rug-pull guard (src/gateway/gwguard.c). pins prints the pinned table and, from
 * the status file the server writes beside the pins, each withheld tool with its pinned and
 * current hash and the fields that differ. accept rewrites the pins from the definitions the
 * server serves (all, or one exposed name); the running server applies it on SIGHUP. Both
 * work offline on the two files, so they need no token and never start an upstream. With
 * STORE_URL the pins are the store's (gwstore.h): pins lists those, accept writes them there
 * and every replica applies it within a second, no SIGHUP, and unpin removes one (room for a
 * tool refused for the store's caps); the status file is still this replica's (the env file's
 * GATEWAY_FILE). */
#include "gwpins.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "dotenvfile.h"
#include "gwpin.h"
#include "gwstore.h"
#include "storeschema.h"

/* What the env file says of where the pins are. */
struct where {
    char *gateway_file;
    char *store_url, *store_password; /* NULL: the pins file */
};

static void where_free(struct where *w)
{
    free(w->gateway_file);
    free(w->store_url);
    if (w->store_password)
        explicit_bzero(w->store_password, strlen(w->store_password));
    free(w->store_password);
}

/* GATEWAY_FILE and STORE_URL from the env file (w's new strings); false after printing why. */
static bool where_of(const char *env_file, struct where *w)
{
    struct config cfg;
    char err[1024];
    unsigned mode;
    char *path = NULL;
    if (access(env_file, F_OK) != 0) {
        fprintf(stderr, "hermes-mcp: env file %s not found\n", env_file);
        return false;
    }
    json_t *env = dotenvfile_read(env_file, &mode, err, sizeof err);
    if (env == NULL || !config_from_env(&cfg, env, env_file, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        json_decref(env);
        return false;
    }
    if (cfg.gateway_file == NULL)
        fprintf(stderr, "hermes-mcp: no GATEWAY_FILE in %s: the gateway is off\n", env_file);
    else
        path = strdup(cfg.gateway_file);
    *w = (struct where){.gateway_file = path,
                        .store_url = cfg.store_url ? strdup(cfg.store_url) : NULL,
                        .store_password = cfg.store_password ? strdup(cfg.store_password) : NULL};
    config_cleanup(&cfg);
    json_decref(env);
    if (path == NULL)
        where_free(w);
    return path != NULL;
}

/* Blocking, with STORE_URL: its connection, or NULL after printing why. */
static PGconn *store_connect(const struct where *w)
{
    char err[600];
    PGconn *pg = storeschema_connect(w->store_url, w->store_password, err, sizeof err);
    if (pg == NULL)
        fprintf(stderr, "hermes-mcp: %s; the pins are the store's: nothing done\n", err);
    return pg;
}

/* The pins in force: the store's with STORE_URL, else the file's (exists: the file does). */
static json_t *pins_in_force(const struct where *w, const char *pins_path, bool *exists)
{
    char err[600];
    if (w->store_url == NULL) {
        json_t *pins = gw_pins_read(pins_path, exists, err, sizeof err);
        if (pins == NULL)
            fprintf(stderr, "hermes-mcp: %s\n", err);
        return pins;
    }
    PGconn *pg = store_connect(w);
    json_t *pins = pg ? gw_store_pins_read(pg, err, sizeof err) : NULL;
    if (pg && pins == NULL)
        fprintf(stderr, "hermes-mcp: %s\n", err);
    if (pg)
        PQfinish(pg);
    *exists = true;
    return pins;
}

static const char *text(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "?";
}

/* What clients are served (the definition registered at the server's start): accept pins only
 * that, never a later listing they were not shown. A status file from before "served" existed
 * has only "seen". */
static const char *served_hash(json_t *t)
{
    return json_object_get(t, "served") ? text(t, "served") : text(t, "seen");
}

static json_t *served_definition(json_t *t)
{
    json_t *d = json_object_get(t, "served_definition");
    return d ? d : json_object_get(t, "definition");
}

/* store: the store's pins ({"pins": ...}) with STORE_URL, else NULL. */
static void print_withheld(json_t *status, json_t *store)
{
    bool shared = store != NULL;
    const char *name;
    json_t *t;
    size_t n = 0;
    json_object_foreach(json_object_get(status, "tools"), name, t)
    {
        if (!json_is_true(json_object_get(t, "withheld")))
            continue;
        if (n++ == 0)
            printf("withheld (the definition differs from its pin)%s:\n",
                   shared ? "; pinned: the pin this replica last read, store: the store's now"
                          : "");
        printf("  %s (upstream %s, tool %s)\n    pinned %s\n    now    %s\n    differs in:", name,
               text(t, "upstream"), text(t, "tool"), text(t, "pinned"), text(t, "seen"));
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(t, "fields"), i, f) printf(" %s", json_string_value(f));
        printf("\n");
        if (shared) {
            json_t *p = json_object_get(json_object_get(store, "pins"), name);
            printf("    store  %s\n", p ? text(p, "sha256") : "(none)");
        }
    }
    if (n && shared)
        printf("accept with: hermes-mcp gateway accept [NAME] (every replica applies it); "
               "NAME --expect SHA256 accepts only over that store pin\n");
    else if (n)
        printf("accept with: hermes-mcp gateway accept [NAME], then SIGHUP the server\n");
    else
        printf("nothing withheld\n");
}

static int show(const struct where *w, const char *pins_path, const char *status_path)
{
    char err[300];
    bool exists, status_exists;
    json_t *pins = pins_in_force(w, pins_path, &exists);
    if (pins == NULL)
        return 1;
    json_t *all = json_object_get(pins, "pins");
    if (w->store_url)
        printf("pins in the store (STORE_URL): %zu tool%s\n", json_object_size(all),
               json_object_size(all) == 1 ? "" : "s");
    else
        printf("pins file %s: %s%zu tool%s\n", pins_path, exists ? "" : "(none yet) ",
               json_object_size(all), json_object_size(all) == 1 ? "" : "s");
    const char *name;
    json_t *p;
    json_object_foreach(all, name, p)
        printf("  %-40s upstream %s, tool %s, sha256 %s\n", name, text(p, "upstream"),
               text(p, "tool"), text(p, "sha256"));
    json_t *status = gw_pins_read_status(status_path, &status_exists, err, sizeof err);
    if (status == NULL)
        fprintf(stderr, "hermes-mcp: %s\n", err);
    else if (!status_exists)
        printf("no status yet (%s): the server has not started with these pins\n", status_path);
    else
        print_withheld(status, w->store_url ? pins : NULL);
    json_decref(status);
    json_decref(pins);
    return status ? 0 : 1;
}

/* With STORE_URL: the chosen pins written in one transaction, each only where the store's pin
 * is still the expected one (expect: exposed -> sha256, or null for none): the one given with
 * --expect, else the one this replica last read (its status file's "pinned", what `gateway
 * pins` printed as pinned); every replica hears of them at its commit. A pin that moved
 * meanwhile (another operator's accept) leaves everything as it was. */
static bool store_accept(const struct where *w, json_t *chosen, json_t *expect)
{
    char err[600] = "", now[65];
    const char *name;
    json_t *pin;
    PGconn *pg = store_connect(w);
    if (pg == NULL)
        return false;
    PGresult *r = PQexec(pg, "BEGIN");
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    json_object_foreach(chosen, name, pin)
    {
        if (!ok)
            break;
        const char *want = json_string_value(json_object_get(expect, name));
        int rc = gw_store_pin_accept(pg, name, pin, want, now, sizeof now, err, sizeof err);
        ok = rc == 1;
        if (rc < 0)
            fprintf(stderr, "hermes-mcp: %s; nothing accepted\n", err);
        else if (rc == 0 && now[0] == '\0')
            fprintf(stderr,
                    "hermes-mcp: the pin of %s changed since this replica last showed it: the "
                    "store holds none now (unpinned?), expected sha256 %s: look again with "
                    "`hermes-mcp gateway pins`; nothing accepted\n",
                    name, want ? want : "(none)");
        else if (rc == 0)
            fprintf(stderr,
                    "hermes-mcp: the pin of %s changed since this replica last showed it "
                    "(another accept?): look again with `hermes-mcp gateway pins`; nothing "
                    "accepted (expected sha256 %s, the store's %s)\n",
                    name, want ? want : "(none)", now);
        if (rc == 0)
            err[0] = '-'; /* said */
    }
    if (ok) {
        r = PQexec(pg, "COMMIT");
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
    }
    if (!ok && err[0] == '\0') /* not a pin's own failure, already said */
        fprintf(stderr, "hermes-mcp: the store refused the accept: %.*s\n",
                (int)strcspn(PQerrorMessage(pg), "\n"), PQerrorMessage(pg));
    PQfinish(pg); /* a transaction left open rolls back */
    return ok;
}

/* Without STORE_URL, --expect: the pins file's pin of name must be want. */
static bool file_expected(json_t *pins, const char *name, const char *want)
{
    json_t *p = json_object_get(json_object_get(pins, "pins"), name);
    const char *have = json_string_value(json_object_get(p, "sha256"));
    if (have && strcmp(have, want) == 0)
        return true;
    fprintf(stderr,
            "hermes-mcp: the pin of %s is not the one expected (expected sha256 %s, the pins "
            "file's %s): look again with `hermes-mcp gateway pins`; nothing accepted\n",
            name, want, have ? have : "(none)");
    return false;
}

static int accept_pins(const struct where *w, const char *pins_path, const char *status_path,
                       const char *only, const char *want)
{
    char err[300];
    bool exists, status_exists;
    json_t *pins = w->store_url ? json_pack("{s:{}}", "pins")
                                : gw_pins_read(pins_path, &exists, err, sizeof err);
    json_t *status =
        pins ? gw_pins_read_status(status_path, &status_exists, err, sizeof err) : NULL;
    int rc = 1;
    if (status == NULL) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
    } else if (!status_exists) {
        fprintf(stderr, "hermes-mcp: no status file %s: start the server first\n", status_path);
    } else {
        /* Without the store, the pins file's pin is judged before it is replaced below. */
        bool expected = w->store_url || want == NULL || file_expected(pins, only, want);
        json_t *seen = json_object_get(status, "tools"), *t, *expect = json_object();
        const char *name;
        size_t n = 0;
        json_object_foreach(seen, name, t)
        {
            if (only && strcmp(only, name) != 0)
                continue;
            json_t *pinned = json_object_get(t, "pinned");
            json_object_set_new(expect, name,
                                want     ? json_string(want)
                                : pinned ? json_incref(pinned)
                                         : json_null());
            json_object_set_new(json_object_get(pins, "pins"), name,
                                json_pack("{s:s, s:s, s:s, s:O*}", "upstream", text(t, "upstream"),
                                          "tool", text(t, "tool"), "sha256", served_hash(t),
                                          "definition", served_definition(t)));
            n++;
        }
        err[0] = '\0';
        if (only && n == 0) {
            fprintf(stderr, "hermes-mcp: no exposed tool %s in %s\n", only, status_path);
        } else if (!expected) {
            /* said */
        } else if (w->store_url) {
            if (store_accept(w, json_object_get(pins, "pins"), expect)) {
                printf("pinned %zu tool%s as served in the store; every replica applies it "
                       "within a second\n",
                       n, n == 1 ? "" : "s");
                rc = 0;
            }
        } else if (!gw_pins_write(pins_path, pins, err, sizeof err)) {
            fprintf(stderr, "hermes-mcp: %s\n", err);
        } else {
            printf("pinned %zu tool%s as served; send SIGHUP to the server (systemctl reload "
                   "hermes-mcp) to apply\n",
                   n, n == 1 ? "" : "s");
            rc = 0;
        }
        json_decref(expect);
    }
    json_decref(status);
    json_decref(pins);
    return rc;
}

/* With STORE_URL: the pin of name removed from the store, every replica told (room for a pin
 * refused for the caps). A tool this replica still exposes is refused: the next replica to
 * read the pins would pin it again as served, which is an accept nobody asked for. */
static int unpin(const struct where *w, const char *status_path, const char *name)
{
    char err[600];
    bool status_exists;
    if (w->store_url == NULL) {
        fprintf(stderr, "hermes-mcp: gateway unpin works on the store's pins (STORE_URL); the "
                        "pins file holds only the tools served, nothing to make room for\n");
        return 2;
    }
    json_t *status = gw_pins_read_status(status_path, &status_exists, err, sizeof err);
    if (status == NULL) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return 1;
    }
    bool served = json_object_get(json_object_get(status, "tools"), name) != NULL;
    json_decref(status);
    if (served) {
        fprintf(stderr,
                "hermes-mcp: %s is still exposed by this server (%s): unpinned, it would be "
                "pinned again as served; remove it from the gateway file first\n",
                name, status_path);
        return 1;
    }
    PGconn *pg = store_connect(w);
    if (pg == NULL)
        return 1;
    int rc = gw_store_pin_remove(pg, name, err, sizeof err);
    PQfinish(pg);
    if (rc < 0)
        fprintf(stderr, "hermes-mcp: %s; nothing removed\n", err);
    else if (rc == 0)
        fprintf(stderr, "hermes-mcp: the store holds no pin of %s\n", name);
    else
        printf("unpinned %s in the store; every replica hears of it (a tool waiting for room is "
               "pinned within a second)\n",
               name);
    return rc == 1 ? 0 : 1;
}

int gwpins_main(const char *cmd, const char *env_file, const char *name, const char *expect)
{
    struct where w;
    if (!where_of(env_file, &w))
        return 2;
    char *pins_path = gw_pins_path(w.gateway_file);
    char *status_path = gw_pins_status_path(w.gateway_file);
    int rc = !strcmp(cmd, "pins")    ? show(&w, pins_path, status_path)
             : !strcmp(cmd, "unpin") ? unpin(&w, status_path, name)
                                     : accept_pins(&w, pins_path, status_path, name, expect);
    free(pins_path);
    free(status_path);
    where_free(&w);
    return rc;
}
