/* doctor_agents.c — doctor's checks of the agents: the registry (AGENTS_FILE), the agent env
 * file (HERMES_ENV_PATH), each agent's key, and its /health and /v1/models probes. */
#include "doctor_internal.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentfile.h"
#include "buf.h"
#include "config.h"
#include "httpc.h"
#include "mem.h"
#include "utf8.h"

#define PROBE_BODY_MAX (256 * 1024)

/* ---------- the agents registry and the agent env file ---------- */

static json_t *check_registry(struct doctor *d, const struct config *cfg, const char *path)
{
    struct stat st;
    char err[400];

    if (stat(path, &st) < 0) {
        if (errno == ENOENT && cfg->agents_file == NULL)
            doctor_check(d, OK,
                         "no agents registry (%s does not exist): serve uses one default agent "
                         "from HERMES_ENV_PATH",
                         path);
        else if (errno == ENOENT)
            doctor_check(d, WARN,
                         "agents registry %s (AGENTS_FILE) does not exist: serve uses one default "
                         "agent from HERMES_ENV_PATH until it does",
                         path);
        else
            doctor_check(d, FAIL, "agents registry %s: %s: fix AGENTS_FILE in %s", path,
                         strerror(errno), d->env_path);
        return NULL;
    }
    if (S_ISREG(st.st_mode) && (st.st_mode & 077)) {
        doctor_check(d, FAIL,
                     "agents registry %s is mode %03o and serve refuses it: run chmod 600 %s", path,
                     (unsigned)(st.st_mode & 0777), path);
        return NULL;
    }
    json_t *reg = agentcfg_registry_read(path, err, sizeof err);
    if (reg == NULL) {
        doctor_check(d, FAIL,
                     "agents registry %s: %s; serve refuses it and uses the default agent: fix "
                     "the file",
                     path, err);
        return NULL;
    }
    size_t n = json_array_size(json_object_get(reg, "agents"));
    doctor_check(d, OK, "agents registry %s: %zu agent%s, default %s", path, n, n == 1 ? "" : "s",
                 doctor_get(reg, "default"));
    return reg;
}

static void check_agent_env(struct doctor *d, const struct config *cfg, bool registry)
{
    const char *path = cfg->hermes_env_path;
    char err[PATH_MAX + 200];
    struct stat st;

    if (path == NULL) {
        if (registry)
            doctor_check(d, OK, "HERMES_ENV_PATH is not set (the agents come from the registry)");
        else
            doctor_check(d, WARN,
                         "HERMES_ENV_PATH is not set: the default agent is http://127.0.0.1:8642 "
                         "with no key; set HERMES_ENV_PATH in %s to the Hermes Agent's .env",
                         d->env_path);
        return;
    }
    json_t *env = agentcfg_dotenv_read(path, err, sizeof err);
    if (env == NULL) {
        doctor_check(d, FAIL, "agent env file (HERMES_ENV_PATH): %s: fix HERMES_ENV_PATH in %s",
                     err, d->env_path);
        return;
    }
    const char *key = doctor_get(env, "API_SERVER_KEY");
    doctor_secret(d, key);
    if (registry)
        doctor_check(d, OK, "agent env file %s (not used while the registry is)", path);
    else if (key == NULL || !*key)
        doctor_check(d, WARN,
                     "agent env file %s has no API_SERVER_KEY: the default agent has no key", path);
    else if (stat(path, &st) == 0 && (st.st_mode & 077))
        doctor_check(d, WARN,
                     "agent env file %s is mode %03o and holds API_SERVER_KEY: run chmod 600 %s",
                     path, (unsigned)(st.st_mode & 0777), path);
    else
        doctor_check(d, OK, "agent env file %s (API_SERVER_KEY set)", path);
    json_decref(env);
}

/* ---------- probes ---------- */

static bool sink(struct httpc_req *req, const char *p, size_t n, void *arg)
{
    (void)req;
    buf_append(arg, p, n); /* past the cap the rest is dropped */
    return true;
}

void doctor_probe_get(const char *url, const char *key, long timeout_ms, struct doctor_resp *r)
{
    const char *h[2];
    size_t nh = 0;
    char *auth = key ? xasprintf("Authorization: Bearer %s", key) : NULL;

    *r = (struct doctor_resp){0};
    buf_init(&r->body, PROBE_BODY_MAX);
    if (auth)
        h[nh++] = auth;
    h[nh++] = "Accept: application/json";
    struct httpc_session *s = httpc_session_new();
    if (s == NULL) {
        snprintf(r->reason, sizeof r->reason, "%s", httpc_setup_error());
    } else {
        struct httpc_opts o = {.method = "GET",
                               .url = url,
                               .headers = h,
                               .nheaders = nh,
                               .connect_timeout_ms = (unsigned)timeout_ms,
                               .deadline_ms = (unsigned)timeout_ms,
                               .on_data = sink,
                               .arg = &r->body};
        struct httpc_result res;
        httpc_fetch(s, &o, &res);
        r->answered = !res.failed && !res.timed_out;
        r->status = r->answered ? res.status : 0;
        r->timed_out = res.timed_out;
        r->no_host = res.no_host;
        r->os_errno = res.os_errno;
        snprintf(r->reason, sizeof r->reason, "%s", res.reason ? res.reason : "");
        httpc_session_free(s);
    }
    wipe_free(auth);
}

/* Why a request got no HTTP answer, in a few words. */
void doctor_net_reason(const struct doctor_resp *r, long timeout_ms, char *out, size_t outlen)
{
    if (r->timed_out)
        snprintf(out, outlen, "no answer within %ld s", timeout_ms / 1000);
    else if (r->no_host)
        snprintf(out, outlen, "its host name does not resolve");
    else if (r->os_errno == ECONNREFUSED)
        snprintf(out, outlen, "connection refused");
    else if (r->os_errno)
        snprintf(out, outlen, "%s", strerror(r->os_errno));
    else
        snprintf(out, outlen, "%s", r->reason);
}

static void probe_agent(struct doctor *d, const struct agent_check *a)
{
    struct doctor_resp r;
    char why[200];

    char *url = agentcfg_url(a->url, "/health");
    doctor_probe_get(url, NULL, d->timeout_ms, &r);
    free(url);
    buf_cleanup(&r.body);
    if (!r.answered) {
        doctor_net_reason(&r, d->timeout_ms, why, sizeof why);
        doctor_check(d, FAIL, "agent %s at %s: %s: %s", a->name, a->url, why, a->net_fix);
        return;
    }
    if (r.status != 200) {
        doctor_check(d, FAIL,
                     "agent %s at %s: /health answered HTTP %ld: is this the Hermes Agent's API "
                     "server (API_SERVER_PORT)?",
                     a->name, a->url, r.status);
        return;
    }
    if (a->key == NULL) {
        doctor_check(d, WARN, "agent %s at %s: /health ok; /v1/models not tried without a key",
                     a->name, a->url);
        return;
    }
    url = agentcfg_url(a->url, "/v1/models");
    doctor_probe_get(url, a->key, d->timeout_ms, &r);
    free(url);
    if (!r.answered) {
        doctor_net_reason(&r, d->timeout_ms, why, sizeof why);
        doctor_check(d, FAIL, "agent %s at %s: /v1/models: %s: %s", a->name, a->url, why,
                     a->net_fix);
    } else if (r.status == 401 || r.status == 403) {
        doctor_check(d, FAIL, "agent %s at %s rejected the key (HTTP %ld on /v1/models): %s",
                     a->name, a->url, r.status, a->key_fix);
    } else if (r.status != 200) {
        doctor_check(d, FAIL,
                     "agent %s at %s: /v1/models answered HTTP %ld: is this the Hermes Agent's API "
                     "server?",
                     a->name, a->url, r.status);
    } else {
        json_t *models = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, NULL);
        size_t n = json_array_size(json_object_get(models, "data"));
        json_decref(models);
        doctor_check(d, OK, "agent %s at %s: /health ok, /v1/models ok with its key (%zu model%s)",
                     a->name, a->url, n, n == 1 ? "" : "s");
    }
    buf_cleanup(&r.body);
}

/* ---------- the agents and their keys ---------- */

static void check_registry_agent(struct doctor *d, json_t *o, const char *reg_path,
                                 json_t **env_cache)
{
    struct agent_check a = {.name = doctor_get(o, "name"), .url = doctor_get(o, "base_url")};
    const char *key_env = doctor_get(o, "key_env"), *key_file = doctor_get(o, "key_file");
    char why[200];

    snprintf(a.net_fix, sizeof a.net_fix, "start the agent or fix its base_url in %s", reg_path);
    if (key_env) {
        bool from_process = false;
        a.key = agentcfg_key_env(key_env, d->env_path, env_cache, &from_process);
        snprintf(a.key_fix, sizeof a.key_fix, "check %s against the agent's API_SERVER_KEY",
                 key_env);
        if (a.key == NULL)
            doctor_check(d, FAIL,
                         "agent %s: key_env %s is not set, neither in this environment nor in %s: "
                         "add %s=<the agent's API_SERVER_KEY> to %s",
                         a.name, key_env, d->env_path, key_env, d->env_path);
        else if (from_process)
            doctor_check(d, OK,
                         "agent %s: key from $%s in this shell's environment (serve needs it in "
                         "its own, or in %s)",
                         a.name, key_env, d->env_path);
        else
            doctor_check(d, OK, "agent %s: key from %s in %s", a.name, key_env, d->env_path);
    } else if (key_file) {
        a.key = agentcfg_key_file(key_file, why, sizeof why);
        snprintf(a.key_fix, sizeof a.key_fix,
                 "check key_file %s against the agent's "
                 "API_SERVER_KEY",
                 key_file);
        if (a.key == NULL)
            doctor_check(d, FAIL, "agent %s: key_file %s %s%s%s", a.name, key_file, why,
                         strchr(why, ';') ? "" : ": fix key_file in ",
                         strchr(why, ';') ? "" : reg_path);
        else
            doctor_check(d, OK, "agent %s: key from key_file %s", a.name, key_file);
    } else {
        doctor_check(d, FAIL, "agent %s has no key: add key_file or key_env to its entry in %s",
                     a.name, reg_path);
    }
    doctor_secret(d, a.key);
    if (d->probe)
        probe_agent(d, &a);
    wipe_free(a.key);
}

static void check_default_agent(struct doctor *d, const struct config *cfg)
{
    struct agent_check a = {.name = AGENTCFG_DEFAULT_NAME};
    char *url = NULL, err[PATH_MAX + 200];
    const char *path = cfg->hermes_env_path;

    json_t *env = path ? agentcfg_dotenv_read(path, err, sizeof err) : NULL;
    bool readable = path == NULL || env != NULL;
    agentcfg_default_agent(env, &url, &a.key);
    json_decref(env);
    char *seed_key = agentcfg_hermes_api_key(cfg->env_file); /* as the server takes it */
    if (seed_key) {
        wipe_free(a.key);
        a.key = seed_key;
    }
    a.url = url;
    if (path) {
        snprintf(a.key_fix, sizeof a.key_fix,
                 "check API_SERVER_KEY in %s (the agent reads it when it starts)", path);
        snprintf(a.net_fix, sizeof a.net_fix,
                 "start the Hermes Agent's API server or fix API_SERVER_HOST/API_SERVER_PORT "
                 "in %s",
                 path);
    } else {
        snprintf(a.key_fix, sizeof a.key_fix, "set HERMES_ENV_PATH in %s", d->env_path);
        snprintf(a.net_fix, sizeof a.net_fix,
                 "start the Hermes Agent's API server, or set HERMES_ENV_PATH in %s", d->env_path);
    }
    if (seed_key)
        snprintf(a.key_fix, sizeof a.key_fix,
                 "check HERMES_API_KEY in %s against the agent's API_SERVER_KEY", d->env_path);
    if (seed_key)
        doctor_check(d, OK, "agent %s (default): key from HERMES_API_KEY in %s", a.name,
                     d->env_path);
    else if (a.key)
        doctor_check(d, OK, "agent %s (default): key from API_SERVER_KEY in %s", a.name, path);
    else if (path == NULL)
        doctor_check(d, FAIL,
                     "agent %s (default): no key: set HERMES_ENV_PATH in %s to the Hermes Agent's "
                     ".env (it holds API_SERVER_KEY)",
                     a.name, d->env_path);
    else if (!readable)
        doctor_check(d, FAIL,
                     "agent %s (default): no key, the agent env file cannot be read: fix "
                     "HERMES_ENV_PATH in %s",
                     a.name, d->env_path);
    else
        doctor_check(d, FAIL,
                     "agent %s (default): no API_SERVER_KEY in %s: add the agent's API key", a.name,
                     path);
    doctor_secret(d, a.key);
    if (d->probe)
        probe_agent(d, &a);
    wipe_free(a.key);
    free(url);
}

void doctor_check_agents(struct doctor *d, const struct config *cfg)
{
    char *reg_path = agentcfg_registry_path(cfg->agents_file);
    json_t *reg = check_registry(d, cfg, reg_path);
    check_agent_env(d, cfg, reg != NULL);
    if (reg) {
        json_t *env_cache = NULL, *o;
        size_t i;
        json_array_foreach(json_object_get(reg, "agents"), i, o)
            check_registry_agent(d, o, reg_path, &env_cache);
        json_decref(env_cache);
    } else {
        check_default_agent(d, cfg);
    }
    json_decref(reg);
    free(reg_path);
}
