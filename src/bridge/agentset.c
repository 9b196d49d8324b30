/* agentset.c — the agents the bridge delegates to: the registry file (hot-reloaded when it
 * changes on disk, an invalid file keeps the last good state), or the synthetic default agent
 * from HERMES_ENV_PATH; and their health, probed when they are used (GET /health, cached), so an
 * idle server makes no requests and no wake-ups. Loading the agents probes none: the first use
 * (a call, list_agents, /health, /metrics) does, so a server no one calls never sets up its
 * HTTP client (libcurl and OpenSSL, about 2.5 MiB of touched pages). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agentclient.h"
#include "agentfile.h"
#include "bridge_internal.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "tasks.h"

struct agentdef *bridge_find_agent(struct bridge *b, const char *name)
{
    for (size_t i = 0; i < b->nagents; i++)
        if (strcmp(b->agents[i].name, name) == 0)
            return &b->agents[i];
    return NULL;
}

char *agent_url(const struct agentdef *a, const char *path)
{
    return agentcfg_url(a->base_url, path);
}

/* ---------- agents (the synthetic default from HERMES_ENV_PATH) ---------- */

void agents_clear(struct bridge *b)
{
    for (size_t i = 0; i < b->nagents; i++) {
        struct agentdef *a = &b->agents[i];
        free(a->name);
        free(a->description);
        free(a->kind);
        free(a->profile);
        free(a->base_url);
        json_decref(a->capabilities);
        agent_cancel(a->probe);
        wipe_free(a->key);
    }
    free(b->agents);
    b->agents = NULL;
    b->nagents = 0;
    free(b->default_agent);
    b->default_agent = NULL;
}

/* The parsed HERMES_ENV_PATH file, or NULL (unset, or unusable: the reason is in why). */
static json_t *agent_env_read(struct bridge *b, char *why, size_t whylen)
{
    const char *path = b->opts.hermes_env_path;
    return path ? agentcfg_dotenv_read(path, why, whylen) : NULL;
}

/* The synthetic default agent: HERMES_ENV_PATH's API_SERVER_{HOST,PORT,KEY}; HERMES_API_KEY
 * (the Python server's key) is its key when set. */
static void agents_synthetic(struct bridge *b, json_t *env)
{
    b->agents = xcalloc(1, sizeof *b->agents);
    b->nagents = 1;
    struct agentdef *a = &b->agents[0];
    a->name = xstrdup(DEFAULT_AGENT);
    a->description = xstrdup("Local Hermes Agent");
    a->kind = xstrdup("local");
    a->capabilities = json_array();
    agentcfg_default_agent(env, &a->base_url, &a->key);
    char *seed_key = agentcfg_hermes_api_key(b->opts.env_file);
    if (seed_key) {
        wipe_free(a->key);
        a->key = seed_key;
    }
    b->default_agent = xstrdup(DEFAULT_AGENT);
}

/* key_file: mode 600, the key alone on the first line. */
static char *read_key_file(const char *path, const char *agent)
{
    char why[200];
    char *k = agentcfg_key_file(path, why, sizeof why);
    if (k == NULL)
        log_warn("agent %s: key_file %s %s", agent, path, why);
    return k;
}

/* Builds the agents from a parsed registry. */
static void agents_from_registry(struct bridge *b, json_t *reg)
{
    json_t *env = NULL;
    json_t *list = json_object_get(reg, "agents");
    b->nagents = json_array_size(list);
    b->agents = xcalloc(b->nagents, sizeof *b->agents);
    for (size_t i = 0; i < b->nagents; i++) {
        json_t *o = json_array_get(list, i);
        struct agentdef *a = &b->agents[i];
        const char *profile = json_string_value(json_object_get(o, "profile"));
        const char *key_env = json_string_value(json_object_get(o, "key_env"));
        const char *key_file = json_string_value(json_object_get(o, "key_file"));
        a->name = xstrdup(json_string_value(json_object_get(o, "name")));
        a->description = xstrdup(json_string_value(json_object_get(o, "description")));
        a->kind = xstrdup(json_string_value(json_object_get(o, "kind")));
        a->base_url = xstrdup(json_string_value(json_object_get(o, "base_url")));
        a->profile = profile ? xstrdup(profile) : NULL;
        a->capabilities = json_incref(json_object_get(o, "capabilities"));
        if (key_env) {
            a->key = agentcfg_key_env(key_env, b->opts.env_file, &env, NULL);
        } else if (key_file) {
            a->key = read_key_file(key_file, a->name);
        }
    }
    b->default_agent = xstrdup(json_string_value(json_object_get(reg, "default")));
    json_decref(env);
}

static void set_registry_error(struct bridge *b, const char *msg)
{
    free(b->registry_error);
    b->registry_error = msg ? xstrdup(msg) : NULL;
    if (msg)
        log_warn("agents registry %s: %s; keeping the last good state", b->registry_path, msg);
}

/* (Re)loads the registry; an invalid file keeps what was there. */
void agents_load(struct bridge *b)
{
    struct stat st;
    char err[300], why[PATH_MAX + 200];

    if (stat(b->registry_path, &st) < 0) {
        const char *path = b->opts.hermes_env_path;
        json_t *env = agent_env_read(b, why, sizeof why);
        if (path && env == NULL) {
            /* A reload must not trade a working key for none: keep what is in use. */
            if (b->nagents > 0 && !b->registry_loaded) {
                log_event(EV_AGENT_ENV_REJECTED, LOG_FIELDS(LF_S("file", path)),
                          "HERMES_ENV_PATH %s cannot be used (%s); keeping the agent settings "
                          "in use",
                          path, why);
                return;
            }
            log_warn("HERMES_ENV_PATH %s cannot be used (%s); the agent has no key", path, why);
        }
        agents_clear(b);
        agents_synthetic(b, env);
        json_decref(env);
        b->registry_loaded = false;
        b->registry_ino = 0;
        set_registry_error(b, NULL);
        return;
    }
    b->registry_mtime = st.st_mtim;
    b->registry_size = st.st_size;
    b->registry_ino = st.st_ino;
    json_t *reg = agentcfg_registry_read(b->registry_path, err, sizeof err);
    if (reg) {
        agents_clear(b);
        agents_from_registry(b, reg);
        json_decref(reg);
        b->registry_loaded = true;
        set_registry_error(b, NULL);
        log_info("agents registry loaded: %zu agents, default %s", b->nagents, b->default_agent);
        return;
    }
    set_registry_error(b, err);
    if (b->nagents == 0) {
        /* An invalid registry at start-up: the synthetic agent until the file is fixed. */
        json_t *env = agent_env_read(b, why, sizeof why);
        if (b->opts.hermes_env_path && env == NULL)
            log_warn("HERMES_ENV_PATH %s cannot be used (%s); the agent has no key",
                     b->opts.hermes_env_path, why);
        agents_synthetic(b, env);
        json_decref(env);
    }
}

static void probe_stale(struct bridge *b, uint64_t max_age_ms);

/* Hot reload: called before agents are used; a stat per call is cheap. */
void agents_registry_refresh(struct bridge *b)
{
    struct stat st;
    bool exists = stat(b->registry_path, &st) == 0;
    if (!exists && !b->registry_ino)
        return;
    if (exists && st.st_ino == b->registry_ino && st.st_size == b->registry_size &&
        st.st_mtim.tv_sec == b->registry_mtime.tv_sec &&
        st.st_mtim.tv_nsec == b->registry_mtime.tv_nsec)
        return;
    agents_load(b);
}

/* Before agents are used: the registry as on disk, and probes of agents not probed lately. */
void agents_refresh(struct bridge *b)
{
    agents_registry_refresh(b);
    probe_stale(b, PROBE_MAX_AGE_MS);
}

/* ---------- availability probes: GET <base_url>/health, cached ---------- */

static void probe_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct agentdef *a = arg;
    (void)r;
    a->probe = NULL;
    a->checked_at = loop_now(a->loop);
    enum probe_state was = a->health;
    a->health = res->status == 200 ? PROBE_OK : PROBE_DOWN;
    if (was != a->health && a->health == PROBE_DOWN)
        log_warn("agent %s: health probe failed (%s)", a->name,
                 res->status ? "HTTP error" : (res->error ? res->error : "no answer"));
}

/* Starts a probe of every agent whose last one started max_age_ms ago or more (0: all). */
static void probe_stale(struct bridge *b, uint64_t max_age_ms)
{
    uint64_t now = loop_now(b->loop);
    for (size_t i = 0; i < b->nagents; i++) {
        struct agentdef *a = &b->agents[i];
        if (a->probe || (a->probed_at && max_age_ms && now - a->probed_at < max_age_ms))
            continue;
        a->probed_at = now ? now : 1;
        a->loop = b->loop;
        char *url = agent_url(a, "/health");
        struct agent_opts o = {.method = "GET",
                               .url = url,
                               .connect_timeout_ms = 2000,
                               .deadline_ms = 5000,
                               .max_response = 64 * 1024,
                               .on_done = probe_done,
                               .arg = a,
                               .label = a->name,
                               .endpoint = "health"};
        a->probe = agent_request(b->http, &o);
        free(url);
    }
}

/* What list_agents, /health and /metrics report: a key, and the last probe did not fail. */
bool agent_available(const struct agentdef *a)
{
    return a->key != NULL && a->health != PROBE_DOWN;
}

/* Whether a task may be sent: as reported, except that a failure older than PROBE_MAX_AGE_MS
 * no longer refuses it (the agent may be back; the probe this use started will tell, and so
 * will the request itself). */
bool agent_allowed_for(const struct mcp_call *c, const char *name)
{
    return mcp_call_may_use_agent(c, name);
}

bool agent_worth_trying(const struct bridge *b, const struct agentdef *a)
{
    return agent_available(a) ||
           (a->key != NULL && loop_now(b->loop) - a->checked_at >= PROBE_MAX_AGE_MS);
}
