/* bridge.c — the Hermes bridge tools over the agent client and the task directory.
 *
 * A job is one task this process is working on: a sync call streaming a chat completion, an
 * async call submitting a run, or a run being followed to its end (also after a restart: runs
 * with run.json but no result.json are followed again at start-up). Jobs of one session run one
 * at a time through a bounded queue. What is on disk is the truth; memory is an index of it. */
#include "bridge.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "agentcfg.h"
#include "buf.h"
#include "chatchunk.h"
#include "config.h"
#include "contract.h"
#include "crypto.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "readfile.h"
#include "metrics.h"
#include "sse.h"
#include "strmap.h"
#include "utf8.h"
#include "taskpath.h"
#include "tasks.h"
#include "toolargs.h"
#include "toolerr.h"

#define TASK_MAX 65536
#define CONTEXT_MAX 65536
#define DELIVERABLE_MAX 8192
#define CONSTRAINTS_MAX 20
#define CONSTRAINT_MAX 2000
#define RESPONSE_MAX (1024 * 1024) /* agent responses, and one SSE event */
#define ANSWER_MAX (1024 * 1024)   /* the accumulated answer of a sync task */
#define CONTRACT_MAX CONTRACT_FILE_MAX
#define SESSION_QUEUE_MAX 8
#define CONNECT_TIMEOUT_MS 5000
#define DEFAULT_AGENT AGENTCFG_DEFAULT_NAME
/* An agent's health is probed when it is needed and the last probe is older than this: an idle
 * server makes no requests and no wake-ups at all. */
#define PROBE_MAX_AGE_MS 30000

enum probe_state { PROBE_UNKNOWN, PROBE_OK, PROBE_DOWN };

struct agentdef {
    char *name, *description, *kind, *profile, *base_url;
    json_t *capabilities;
    char *key; /* the secret; NULL when it could not be resolved */
    enum probe_state health;
    struct agent_req *probe;
    uint64_t probed_at;  /* loop time the last probe started; 0: never */
    uint64_t checked_at; /* ... and the last one answered (or failed) */
    struct loop *loop;
};

enum job_kind { JOB_SYNC, JOB_SUBMIT, JOB_FOLLOW };

struct sessq;

struct job {
    struct bridge *b;
    enum job_kind kind;
    char id[129];
    char agent[65];
    /* The agent's address when the job started: a reload may drop or change the agent while
     * the job runs, and what the job reports must still be what it used. */
    char *base_url;
    char session_id[200]; /* what the agent sees */
    char run_id[128];
    struct mcp_call *call; /* the waiting MCP call, if any */
    struct agent_req *req;
    struct loop_timer *timer;
    char *prompt;
    struct sse_decoder sse;
    struct buf answer;
    bool done_stream;
    char *stream_error;
    int progress;
    struct sessq *q;
    struct job *qnext;
};

struct sessq {
    char key[160];
    struct job *active;
    struct job *head, *tail;
    unsigned waiting;
};

struct bridge {
    struct mcp_server *mcp;
    struct loop *loop;
    struct config *cfg;
    struct tasks *tasks;
    struct agent_client *http;
    struct agentdef *agents;
    size_t nagents;
    char *default_agent;
    struct strmap *jobs;   /* task id → job */
    struct strmap *runs;   /* run id → task id (heap string) */
    struct strmap *queues; /* agent/session → sessq */
    char *contract;
    struct timespec contract_mtime;
    off_t contract_size;
    char *registry_path;     /* AGENTS_FILE (or its default) */
    bool registry_loaded;    /* the agents come from the registry (not synthetic) */
    char *registry_error;    /* why the file on disk is not in use, or NULL */
    struct timespec registry_mtime;
    off_t registry_size;
    ino_t registry_ino;
    struct buf chunk; /* scratch for chatchunk_scan */
    unsigned contract_gen;       /* bumped on every contract reload */
    char *contract_json;         /* the contract as a JSON string, for request bodies */
    const char *contract_json_of; /* ... of this text, */
    unsigned contract_json_gen;   /* ... at this generation */
};

static void job_free(struct job *j);
static void index_task(const char *id, void *arg);
static void job_start(struct job *j);
static void follow_poll(struct loop *l, void *arg);

/* ---------- small helpers ---------- */

static json_t *iso_now(void)
{
    char s[40];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(s);
}

static json_t *tool_error_va(enum toolerr code, unsigned retry_after, const char *fmt,
                             va_list ap) __attribute__((format(printf, 3, 0)));

/* A tool error result: {error, message[, retry_after]} with isError true. */
static json_t *tool_error_va(enum toolerr code, unsigned retry_after, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    utf8_clean(msg);
    json_t *sc = json_pack("{s:s, s:s}", "error", toolerr_name(code), "message", msg);
    if (retry_after)
        json_object_set_new(sc, "retry_after", json_integer(retry_after));
    char *text = json_dumps(sc, JSON_COMPACT);
    json_t *r = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
                          "structuredContent", sc, "isError", 1);
    free(text);
    return r;
}

static json_t *tool_error_json(enum toolerr code, unsigned retry_after, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static json_t *tool_error_json(enum toolerr code, unsigned retry_after, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *r = tool_error_va(code, retry_after, fmt, ap);
    va_end(ap);
    return r;
}

static void tool_error(struct mcp_call *c, enum toolerr code, unsigned retry_after,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void tool_error(struct mcp_call *c, enum toolerr code, unsigned retry_after,
                       const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcp_call_result_take(c, tool_error_va(code, retry_after, fmt, ap));
    va_end(ap);
}

/* ---------- answers that wait for the task directory ---------- */

/* A call's answer held back until the task directory operation queued before it is durable:
 * a client that got an answer can rely on what is on disk. */
struct held {
    struct mcp_call *call; /* NULL once the call went away */
    json_t *result;        /* the tools/call result to send */
};

static void held_cancelled(struct mcp_call *c, void *arg)
{
    struct held *h = arg;
    (void)c;
    h->call = NULL;
}

static void held_stored(enum tasks_rc rc, void *arg)
{
    struct held *h = arg;
    json_t *res = h->result;
    if (h->call == NULL) {
        json_decref(res);
        free(h);
        return;
    }
    mcp_call_on_cancel(h->call, NULL, NULL);
    if (rc != TASKS_OK && !json_is_true(json_object_get(res, "isError"))) {
        json_decref(res); /* the outcome is not durable: do not report it as one */
        res = tool_error_json(TE_UPSTREAM_ERROR, 0,
                              "the result could not be stored in the task directory");
    }
    mcp_call_result_take(h->call, res);
    free(h);
}

/* Takes result; NULL when there is no call to answer. */
static struct held *hold(struct mcp_call *c, json_t *result)
{
    if (c == NULL) {
        json_decref(result);
        return NULL;
    }
    struct held *h = xcalloc(1, sizeof *h);
    h->call = c;
    h->result = result;
    mcp_call_on_cancel(c, held_cancelled, h);
    return h;
}

/* Queues json as the task's file name; c (if any) gets result once that is durable. */
static void store_then_answer(struct bridge *b, const char *id, const char *name, json_t *json,
                              struct mcp_call *c, json_t *result)
{
    struct held *h = hold(c, result);
    if (tasks_write(b->tasks, id, name, json, h ? held_stored : NULL, h) != TASKS_OK && h)
        held_stored(TASKS_INVALID, h);
}

/* Queues removing the task's file name; c (if any) gets result once it is gone. */
static void remove_then_answer(struct bridge *b, const char *id, const char *name,
                               struct mcp_call *c, json_t *result)
{
    struct held *h = hold(c, result);
    if (tasks_remove(b->tasks, id, name, h ? held_stored : NULL, h) != TASKS_OK && h)
        held_stored(TASKS_INVALID, h);
}

static struct agentdef *find_agent(struct bridge *b, const char *name)
{
    for (size_t i = 0; i < b->nagents; i++)
        if (strcmp(b->agents[i].name, name) == 0)
            return &b->agents[i];
    return NULL;
}

static char *agent_url(const struct agentdef *a, const char *path)
{
    return agentcfg_url(a->base_url, path);
}

/* Maps an agent answer that is not a success to a tool error (never echoing its body). */
static json_t *upstream_error(const char *agent, const struct agent_result *res,
                              const char *what)
{
    if (res->timed_out)
        return tool_error_json(TE_UPSTREAM_TIMEOUT, 0, "the agent did not answer in time (%s)",
                               what);
    if (res->too_big)
        return tool_error_json(TE_UPSTREAM_ERROR, 0,
                               "the agent's answer was larger than the cap (%s)", what);
    if (res->failed || res->status == 0) {
        log_warn("agent %s unreachable (%s): %s", agent, what, res->error ? res->error : "?");
        return tool_error_json(TE_UPSTREAM_ERROR, 0, "the agent '%s' could not be reached",
                               agent);
    }
    log_debug("agent %s answered %ld to %s: %.300s", agent, res->status, what, res->body);
    if (res->status == 401) {
        log_error("agent %s rejected our API key (401); check its key (API_SERVER_KEY in "
                  "HERMES_ENV_PATH, or key_env/key_file in the registry)",
                  agent);
        return tool_error_json(TE_UPSTREAM_AUTH, 0,
                               "the agent '%s' rejected the bridge's credentials", agent);
    }
    if (res->status == 429 || res->status == 503)
        return tool_error_json(TE_BUSY, res->retry_after ? res->retry_after : 1,
                               "the agent '%s' is busy; retry later", agent);
    if (res->status == 404 && strstr(res->body, "run_not_found"))
        return tool_error_json(TE_NOT_FOUND, 0, "the agent does not know this run");
    return tool_error_json(TE_UPSTREAM_ERROR, 0, "the agent '%s' answered with HTTP %ld", agent,
                           res->status);
}

static void upstream_fail(struct mcp_call *c, const char *agent, const struct agent_result *res,
                          const char *what)
{
    mcp_call_result_take(c, upstream_error(agent, res, what));
}

/* ---------- agents (the synthetic default from HERMES_ENV_PATH) ---------- */

static void agents_clear(struct bridge *b)
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
        if (a->key) {
            memset(a->key, 0, strlen(a->key));
            free(a->key);
        }
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
    const char *path = b->cfg->hermes_env_path;
    return path ? agentcfg_dotenv_read(path, why, whylen) : NULL;
}

/* The synthetic default agent: HERMES_ENV_PATH's API_SERVER_{HOST,PORT,KEY}. */
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
            a->key = agentcfg_key_env(key_env, b->cfg->env_file, &env, NULL);
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

static void probe_all(struct bridge *b);

/* (Re)loads the registry; an invalid file keeps what was there. */
static void agents_load(struct bridge *b)
{
    struct stat st;
    char err[300], why[PATH_MAX + 200];

    if (stat(b->registry_path, &st) < 0) {
        const char *path = b->cfg->hermes_env_path;
        json_t *env = agent_env_read(b, why, sizeof why);
        if (path && env == NULL) {
            /* A reload must not trade a working key for none: keep what is in use. */
            if (b->nagents > 0 && !b->registry_loaded) {
                log_warn("HERMES_ENV_PATH %s cannot be used (%s); keeping the agent settings "
                         "in use",
                         path, why);
                return;
            }
            log_warn("HERMES_ENV_PATH %s cannot be used (%s); the agent has no key", path, why);
        }
        agents_clear(b);
        agents_synthetic(b, env);
        json_decref(env);
        probe_all(b);
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
        probe_all(b);
        return;
    }
    set_registry_error(b, err);
    if (b->nagents == 0) {
        /* An invalid registry at start-up: the synthetic agent until the file is fixed. */
        json_t *env = agent_env_read(b, why, sizeof why);
        if (b->cfg->hermes_env_path && env == NULL)
            log_warn("HERMES_ENV_PATH %s cannot be used (%s); the agent has no key",
                     b->cfg->hermes_env_path, why);
        agents_synthetic(b, env);
        json_decref(env);
    }
}

static void probe_stale(struct bridge *b, uint64_t max_age_ms);

/* Hot reload: called before agents are used; a stat per call is cheap. */
static void registry_refresh(struct bridge *b)
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
static void agents_refresh(struct bridge *b)
{
    registry_refresh(b);
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
        struct agent_opts o = {.method = "GET", .url = url, .connect_timeout_ms = 2000,
                               .deadline_ms = 5000, .max_response = 64 * 1024,
                               .on_done = probe_done, .arg = a, .label = a->name,
                               .endpoint = "health"};
        a->probe = agent_request(b->http, &o);
        free(url);
    }
}

static void probe_all(struct bridge *b)
{
    probe_stale(b, 0);
}

/* What list_agents, /health and /metrics report: a key, and the last probe did not fail. */
static bool agent_available(const struct agentdef *a)
{
    return a->key != NULL && a->health != PROBE_DOWN;
}

/* Whether a task may be sent: as reported, except that a failure older than PROBE_MAX_AGE_MS
 * no longer refuses it (the agent may be back; the probe this use started will tell, and so
 * will the request itself). */
static bool agent_worth_trying(const struct bridge *b, const struct agentdef *a)
{
    return agent_available(a) ||
           (a->key != NULL && loop_now(b->loop) - a->checked_at >= PROBE_MAX_AGE_MS);
}

/* ---------- contract ---------- */

static const char *contract_text(struct bridge *b)
{
    struct stat st;
    const char *path = b->cfg->contract_path;

    if (path == NULL)
        return contract_default;
    if (stat(path, &st) < 0) {
        log_warn("HERMES_CONTRACT_PATH %s: %s; using the %s contract", path, strerror(errno),
                 b->contract ? "previous" : "built-in");
        return b->contract ? b->contract : contract_default;
    }
    if (!S_ISREG(st.st_mode)) {
        /* A FIFO or a device would block the event loop in fopen() or fread(). */
        log_warn("HERMES_CONTRACT_PATH %s is not a regular file; using the %s contract", path,
                 b->contract ? "previous" : "built-in");
        return b->contract ? b->contract : contract_default;
    }
    if (b->contract && st.st_mtim.tv_sec == b->contract_mtime.tv_sec &&
        st.st_mtim.tv_nsec == b->contract_mtime.tv_nsec && st.st_size == b->contract_size)
        return b->contract;
    if (st.st_size > CONTRACT_MAX) {
        log_warn("HERMES_CONTRACT_PATH %s is larger than 256 KiB; using the %s contract", path,
                 b->contract ? "previous" : "built-in");
        return b->contract ? b->contract : contract_default;
    }
    /* Read through the capped reader: the file may have been swapped for a FIFO since stat. */
    char err[300];
    size_t n;
    char *text = readfile_capped(path, "HERMES_CONTRACT_PATH", CONTRACT_MAX, &st, &n, err,
                                 sizeof err);
    if (text == NULL) {
        log_warn("%s; using the %s contract", err, b->contract ? "previous" : "built-in");
        return b->contract ? b->contract : contract_default;
    }
    char why[100];
    if (!contract_text_ok(text, n, why, sizeof why)) {
        /* Invalid UTF-8 cannot go into the JSON request at all. */
        log_warn("HERMES_CONTRACT_PATH %s: %s; %s", path, why,
                 b->contract ? "keeping the previous one" : "using the built-in contract");
        free(text);
        return b->contract ? b->contract : contract_default;
    }
    free(b->contract);
    b->contract = text;
    b->contract_gen++;
    b->contract_mtime = st.st_mtim;
    b->contract_size = st.st_size;
    log_info("contract loaded from %s", path);
    return b->contract;
}

/* ---------- jobs and session queues ---------- */

static struct job *job_new(struct bridge *b, enum job_kind kind, const char *id,
                           const char *agent)
{
    struct job *j = xcalloc(1, sizeof *j);
    j->b = b;
    j->kind = kind;
    snprintf(j->id, sizeof j->id, "%s", id);
    snprintf(j->agent, sizeof j->agent, "%s", agent);
    buf_init(&j->answer, ANSWER_MAX);
    sse_init(&j->sse, RESPONSE_MAX);
    strmap_put(b->jobs, j->id, j);
    return j;
}

static void queue_next(struct bridge *b, struct sessq *q)
{
    q->active = NULL;
    if (q->head) {
        struct job *n = q->head;
        q->head = n->qnext;
        if (q->head == NULL)
            q->tail = NULL;
        q->waiting--;
        n->qnext = NULL;
        q->active = n;
        job_start(n);
        return;
    }
    strmap_del(b->queues, q->key);
    free(q);
}

static void job_free(struct job *j)
{
    struct bridge *b = j->b;
    struct sessq *q = j->q;

    agent_cancel(j->req);
    loop_timer_cancel(j->timer);
    if (strmap_get(b->jobs, j->id) == j)
        strmap_del(b->jobs, j->id);
    sse_cleanup(&j->sse);
    buf_cleanup(&j->answer);
    free(j->stream_error);
    free(j->prompt);
    free(j->base_url);
    if (q) {
        if (q->active == j) {
            free(j);
            queue_next(b, q);
            return;
        }
        /* still waiting: unlink */
        for (struct job **pp = &q->head; *pp; pp = &(*pp)->qnext)
            if (*pp == j) {
                *pp = j->qnext;
                if (q->tail == j) {
                    q->tail = NULL;
                    for (struct job *t = q->head; t; t = t->qnext)
                        q->tail = t;
                }
                q->waiting--;
                break;
            }
    }
    free(j);
}

/* Joins the session's queue; returns false when it is full. Starts the job if it is first. */
static bool job_enqueue(struct job *j, const char *session)
{
    struct bridge *b = j->b;
    char key[160];

    if (session == NULL) {
        job_start(j);
        return true;
    }
    snprintf(key, sizeof key, "%s/%s", j->agent, session);
    struct sessq *q = strmap_get(b->queues, key);
    if (q == NULL) {
        q = xcalloc(1, sizeof *q);
        snprintf(q->key, sizeof q->key, "%s", key);
        strmap_put(b->queues, q->key, q);
    }
    if (q->active && q->waiting >= SESSION_QUEUE_MAX)
        return false;
    j->q = q;
    if (q->active == NULL) {
        q->active = j;
        job_start(j);
    } else {
        if (q->tail)
            q->tail->qnext = j;
        else
            q->head = j;
        q->tail = j;
        q->waiting++;
    }
    return true;
}

/* ---------- results ---------- */

static json_t *result_public(json_t *r)
{
    /* What hermes_task and hermes_result return: the contract fields plus id. */
    json_t *o = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}", "id", json_object_get(r, "id"),
                          "status", json_object_get(r, "status"), "summary",
                          json_object_get(r, "summary"), "artifacts",
                          json_object_get(r, "artifacts"), "next_steps",
                          json_object_get(r, "next_steps"));
    json_t *details = json_object_get(r, "details");
    if (details)
        json_object_set(o, "details", details);
    json_t *run = json_object_get(r, "run_id");
    if (run)
        json_object_set(o, "run_id", run);
    return o;
}

/* Queues result.json; c (if any) gets answer once it is durable. */
/* The record result.json holds (new reference). */
static json_t *result_record(const char *id, const char *agent, json_t *parsed,
                             const char *run_id)
{
    json_t *r = json_pack("{s:s, s:O, s:O, s:O, s:O, s:s, s:o}", "id", id, "status",
                          json_object_get(parsed, "status"), "summary",
                          json_object_get(parsed, "summary"), "artifacts",
                          json_object_get(parsed, "artifacts"), "next_steps",
                          json_object_get(parsed, "next_steps"), "agent", agent,
                          "completed_at", iso_now());
    if (json_object_get(parsed, "details"))
        json_object_set(r, "details", json_object_get(parsed, "details"));
    if (json_object_get(parsed, "error"))
        json_object_set(r, "error", json_object_get(parsed, "error"));
    if (run_id && *run_id)
        json_object_set_new(r, "run_id", json_string(run_id));
    return r;
}

/* Writes result.json; c (if any) gets answer once it is durable. answer NULL: c gets the
 * record's public projection, the same one a retry and hermes_result give. */
static void write_result(struct bridge *b, const char *id, const char *agent, json_t *parsed,
                         const char *run_id, struct mcp_call *c, json_t *answer)
{
    json_t *r = result_record(id, agent, parsed, run_id);
    if (answer == NULL && c)
        answer = mcp_tool_result(result_public(r));
    store_then_answer(b, id, "result.json", r, c, answer);
    json_decref(r);
}

static void write_status_result(struct bridge *b, const char *id, const char *agent,
                                const char *status, const char *summary, const char *run_id,
                                struct mcp_call *c, json_t *answer)
{
    json_t *p = json_pack("{s:s, s:s, s:[], s:[]}", "status", status, "summary", summary,
                          "artifacts", "next_steps");
    write_result(b, id, agent, p, run_id, c, answer);
    json_decref(p);
}

/* ---------- sync: POST /v1/chat/completions, stream: true ---------- */

static void sync_event(const char *event, const char *data, size_t len, const char *id,
                       void *arg)
{
    struct job *j = arg;
    (void)id;
    if (strcmp(event, "hermes.tool.progress") == 0) {
        json_t *p = json_loadb(data, len, 0, NULL);
        const char *label = json_string_value(json_object_get(p, "label"));
        const char *tool = json_string_value(json_object_get(p, "tool"));
        const char *status = json_string_value(json_object_get(p, "status"));
        char msg[200];
        snprintf(msg, sizeof msg, "%s%s%s", tool ? tool : "tool", status ? ": " : "",
                 status ? status : "");
        if (j->call)
            mcp_call_progress(j->call, ++j->progress, 0, label ? label : msg);
        json_decref(p);
        return;
    }
    if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        j->done_stream = true;
        return;
    }
    struct chatchunk cc;
    if (chatchunk_scan(data, len, &j->b->chunk, &cc)) { /* the common case, without jansson */
        if (cc.has_content && !buf_append(&j->answer, j->b->chunk.data, j->b->chunk.len)) {
            free(j->stream_error);
            j->stream_error = xstrdup("the answer was larger than the cap");
        }
        if (cc.finish_error) {
            free(j->stream_error);
            j->stream_error = xstrdup("the agent reported an error");
        }
        return;
    }
    json_t *chunk = json_loadb(data, len, 0, NULL);
    json_t *choice = json_array_get(json_object_get(chunk, "choices"), 0);
    const char *delta = json_string_value(
        json_object_get(json_object_get(choice, "delta"), "content"));
    if (delta && !buf_appends(&j->answer, delta)) {
        free(j->stream_error);
        j->stream_error = xstrdup("the answer was larger than the cap");
    }
    const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
    json_t *err = json_object_get(chunk, "error");
    if ((finish && strcmp(finish, "error") == 0) || err) {
        const char *m = json_string_value(json_object_get(err, "message"));
        if (m == NULL)
            m = json_string_value(err);
        free(j->stream_error);
        j->stream_error = xstrdup(m ? m : "the agent reported an error");
    }
    json_decref(chunk);
}

static bool sync_data(struct agent_req *r, const char *data, size_t len, void *arg)
{
    struct job *j = arg;
    (void)r;
    return sse_feed(&j->sse, data, len, sync_event, j);
}

static void sync_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct job *j = arg;
    struct bridge *b = j->b;
    struct mcp_call *c = j->call;
    (void)r;

    j->req = NULL;
    j->call = NULL;
    /* Every answer below goes out once what it reports is on disk. */
    if (res->timed_out && res->status == 200) {
        /* The agent took longer than HERMES_TIMEOUT_S; closing the stream interrupted it. */
        write_status_result(b, j->id, j->agent, "failed", "the agent did not finish in time",
                            NULL, c,
                            tool_error_json(TE_UPSTREAM_TIMEOUT, 0,
                                            "the agent did not finish in time"));
        job_free(j);
        return;
    }
    if (res->status != 200) {
        /* Nothing was done: a retry is free. */
        remove_then_answer(b, j->id, "request.json", c,
                           upstream_error(j->agent, res, "chat completion"));
        job_free(j);
        return;
    }
    if (!j->done_stream && j->stream_error == NULL) {
        write_status_result(b, j->id, j->agent, "failed",
                            "the agent's stream ended before it finished", NULL, c,
                            tool_error_json(TE_UPSTREAM_ERROR, 0,
                                            "the agent's stream ended before it finished"));
        job_free(j);
        return;
    }
    json_t *parsed;
    if (j->stream_error) {
        parsed = json_pack("{s:s, s:s, s:[], s:[], s:s}", "status", "failed", "summary",
                           j->answer.len ? j->answer.data : "", "artifacts", "next_steps",
                           "error", j->stream_error);
    } else {
        parsed = contract_parse_answer(j->answer.data ? j->answer.data : "", j->answer.len);
    }
    write_result(b, j->id, j->agent, parsed, NULL, c, NULL); /* answers result_public */
    json_decref(parsed);
    job_free(j);
}

/* The MCP call went away (notifications/cancelled, hang-up, deadline, shutdown). */
static void sync_cancelled(struct mcp_call *c, void *arg)
{
    struct job *j = arg;
    (void)c;
    j->call = NULL;
    bool started = j->req != NULL;
    agent_cancel(j->req); /* closing the stream interrupts the agent */
    j->req = NULL;
    if (started)
        write_status_result(j->b, j->id, j->agent, "cancelled",
                            "cancelled by the client before the agent finished", NULL, NULL,
                            NULL);
    else
        tasks_remove(j->b->tasks, j->id, "request.json", NULL, NULL);
    log_info("task %s cancelled", j->id);
    job_free(j);
}

/* The contract as a JSON string: escaping it for every request cost more than the rest of the
 * body; it only changes when the file does. */
static const char *contract_json(struct bridge *b)
{
    const char *text = contract_text(b);
    if (b->contract_json == NULL || b->contract_json_of != text ||
        b->contract_json_gen != b->contract_gen) {
        json_t *s = json_string(text);
        free(b->contract_json);
        b->contract_json = s ? json_dumps(s, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        if (b->contract_json == NULL)
            b->contract_json = xstrdup("\"\"");
        json_decref(s);
        b->contract_json_of = text;
        b->contract_json_gen = b->contract_gen;
    }
    return b->contract_json;
}

/* A job waiting in a session queue starts when its turn comes, maybe after a reload dropped its
 * agent or its key: it then fails as agent_unavailable (and frees itself) instead of going on
 * with an agent that is no longer configured. Returns the agent, or NULL when it failed. */
static struct agentdef *job_agent(struct job *j)
{
    struct bridge *b = j->b;
    struct agentdef *a = find_agent(b, j->agent);
    if (a && a->key) {
        free(j->base_url);
        j->base_url = xstrdup(a->base_url);
        return a;
    }
    struct mcp_call *c = j->call;
    j->call = NULL;
    if (c)
        mcp_call_on_cancel(c, NULL, NULL);
    log_warn("task %s: agent %s %s before the task could start", j->id, j->agent,
             a ? "lost its key" : "was removed from the registry");
    remove_then_answer(b, j->id, "request.json", c,
                       tool_error_json(TE_AGENT_UNAVAILABLE, 0,
                                       "the agent '%s' is no longer available (%s)", j->agent,
                                       a ? "missing_credentials" : "removed from the registry"));
    job_free(j);
    return NULL;
}

static void sync_start(struct job *j)
{
    struct bridge *b = j->b;
    struct agentdef *a = job_agent(j);
    if (a == NULL)
        return;
    /* What json_pack + json_dumps(JSON_COMPACT) gave, byte for byte, with the contract cached. */
    json_t *prompt = json_string(j->prompt);
    char *user = prompt ? json_dumps(prompt, JSON_ENCODE_ANY | JSON_COMPACT) : xstrdup("\"\"");
    json_decref(prompt);
    char *text = xasprintf("{\"model\":\"hermes-agent\",\"stream\":true,\"messages\":[{\"role\":"
                           "\"system\",\"content\":%s},{\"role\":\"user\",\"content\":%s}]}",
                           contract_json(b), user);
    free(user);
    char *url = agent_url(a, "/v1/chat/completions");
    unsigned deadline = b->cfg->agent_timeout_ms;
    struct agent_opts o = {.method = "POST", .url = url, .key = a->key,
                           .session_header = j->session_id, .body = text,
                           .body_len = strlen(text), .accept_sse = true,
                           .connect_timeout_ms = CONNECT_TIMEOUT_MS, .deadline_ms = deadline,
                           .max_response = RESPONSE_MAX, .on_data = sync_data,
                           .on_done = sync_done, .arg = j, .label = a->name,
                           .endpoint = "chat"};
    j->req = agent_request(b->http, &o);
    free(url);
    free(text);
    if (j->req == NULL) {
        struct mcp_call *c = j->call;
        j->call = NULL;
        tool_error(c, TE_UPSTREAM_ERROR, 0, "could not start the request to the agent");
        job_free(j);
    }
}

/* ---------- async: POST /v1/runs, then follow ---------- */

static void follow_schedule(struct job *j)
{
    j->timer = loop_timer_add(j->b->loop, j->b->cfg->poll_ms, follow_poll, j);
}

static const char *const terminal[] = {"completed", "failed", "cancelled", "interrupted"};

static bool is_terminal(const char *s)
{
    for (size_t i = 0; s && i < 4; i++)
        if (strcmp(s, terminal[i]) == 0)
            return true;
    return false;
}

/* Writes result.json from a terminal run object; c (if any) gets answer once it is durable. */
static void result_from_run(struct bridge *b, const char *id, const char *agent, json_t *run,
                            struct mcp_call *c, json_t *answer)
{
    const char *status = json_string_value(json_object_get(run, "status"));
    const char *run_id = json_string_value(json_object_get(run, "run_id"));
    json_t *output = json_object_get(run, "output");
    json_t *parsed;
    if (strcmp(status, "completed") == 0 && json_is_string(output)) {
        parsed = contract_parse_answer(json_string_value(output), json_string_length(output));
    } else {
        json_t *err = json_object_get(run, "error");
        const char *msg = json_is_string(err) ? json_string_value(err)
                          : json_string_value(json_object_get(err, "message"));
        parsed = json_pack("{s:s, s:s, s:[], s:[]}", "status", status, "summary",
                           msg ? msg : "", "artifacts", "next_steps");
        if (msg)
            json_object_set_new(parsed, "error", json_string(msg));
    }
    write_result(b, id, agent, parsed, run_id, c, answer);
    json_decref(parsed);
}

static void follow_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct job *j = arg;
    struct bridge *b = j->b;
    (void)r;
    j->req = NULL;
    if (res->status == 200) {
        json_t *run = json_loadb(res->body, res->body_len, 0, NULL);
        const char *st = json_string_value(json_object_get(run, "status"));
        if (is_terminal(st)) {
            result_from_run(b, j->id, j->agent, run, NULL, NULL);
            log_info("task %s: run %s ended %s", j->id, j->run_id, st);
            json_decref(run);
            job_free(j);
            return;
        }
        json_decref(run);
    } else if (res->status == 404) {
        write_status_result(b, j->id, j->agent, "interrupted",
                            "the agent no longer knows this run (restarted or expired)",
                            j->run_id, NULL, NULL);
        job_free(j);
        return;
    } else if (res->status == 401) {
        log_error("agent %s rejected our API key while following run %s", j->agent, j->run_id);
    }
    follow_schedule(j); /* busy, unreachable, or still running: try again later */
}

static void follow_poll(struct loop *l, void *arg)
{
    struct job *j = arg;
    struct agentdef *a = find_agent(j->b, j->agent);
    (void)l;
    j->timer = NULL;
    if (a == NULL || a->key == NULL) {
        follow_schedule(j);
        return;
    }
    char path[200];
    snprintf(path, sizeof path, "/v1/runs/%s", j->run_id);
    char *url = agent_url(a, path);
    struct agent_opts o = {.method = "GET", .url = url, .key = a->key,
                           .connect_timeout_ms = CONNECT_TIMEOUT_MS, .deadline_ms = 30000,
                           .max_response = RESPONSE_MAX, .on_done = follow_done, .arg = j,
                           .label = a->name, .endpoint = "run"};
    j->req = agent_request(j->b->http, &o);
    free(url);
    if (j->req == NULL)
        follow_schedule(j);
}

static void follow(struct bridge *b, const char *id, const char *agent, const char *run_id)
{
    if (strmap_get(b->jobs, id))
        return;
    struct job *j = job_new(b, JOB_FOLLOW, id, agent);
    snprintf(j->run_id, sizeof j->run_id, "%s", run_id);
    j->timer = loop_timer_add(b->loop, 0, follow_poll, j);
}

static void submit_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct job *j = arg;
    struct bridge *b = j->b;
    struct mcp_call *c = j->call;
    (void)r;

    j->req = NULL;
    j->call = NULL;
    json_t *body = res->status == 202 ? json_loadb(res->body, res->body_len, 0, NULL) : NULL;
    const char *run_id = json_string_value(json_object_get(body, "run_id"));
    if (run_id == NULL || strlen(run_id) >= sizeof j->run_id) {
        json_t *err = res->status == 202
                          ? tool_error_json(TE_UPSTREAM_ERROR, 0,
                                            "the agent accepted the run without a run id")
                          : upstream_error(j->agent, res, "run submission");
        remove_then_answer(b, j->id, "request.json", c, err);
        json_decref(body);
        job_free(j);
        return;
    }
    snprintf(j->run_id, sizeof j->run_id, "%s", run_id);
    json_t *run = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "run_id", run_id, "session_id",
                            j->session_id, "task_id", j->id, "agent", j->agent,
                            "agent_base_url", j->base_url, "created_at", iso_now());
    /* The answer waits for run.json: after a restart the run is followed from it. */
    store_then_answer(b, j->id, "run.json", run, c,
                      mcp_tool_result(json_pack("{s:s, s:s, s:s, s:s, s:[], s:[]}", "id", j->id,
                                                "status", "accepted", "run_id", j->run_id,
                                                "summary",
                                                "accepted; follow it with hermes_status or read "
                                                "it with hermes_result when done",
                                                "artifacts", "next_steps")));
    json_decref(run);
    free(strmap_put(b->runs, run_id, xstrdup(j->id)));
    json_decref(body);
    /* The run is followed by the bridge itself from here, and the session is free again. */
    char agent[65], id[129], rid[128];
    snprintf(agent, sizeof agent, "%s", j->agent);
    snprintf(id, sizeof id, "%s", j->id);
    snprintf(rid, sizeof rid, "%s", j->run_id);
    job_free(j);
    follow(b, id, agent, rid);
}

static void submit_cancelled(struct mcp_call *c, void *arg)
{
    struct job *j = arg;
    (void)c;
    j->call = NULL;
    tasks_remove(j->b->tasks, j->id, "request.json", NULL, NULL);
    job_free(j);
}

static void submit_start(struct job *j)
{
    struct bridge *b = j->b;
    struct agentdef *a = job_agent(j);
    if (a == NULL)
        return;
    json_t *body = json_pack("{s:s, s:s, s:s}", "input", j->prompt, "instructions",
                             contract_text(b), "session_id", j->session_id);
    char *text = json_dumps(body, JSON_COMPACT);
    char *url = agent_url(a, "/v1/runs");
    struct agent_opts o = {.method = "POST", .url = url, .key = a->key,
                           .idempotency_key = j->id, .body = text, .body_len = strlen(text),
                           .connect_timeout_ms = CONNECT_TIMEOUT_MS, .deadline_ms = 60000,
                           .max_response = RESPONSE_MAX, .on_done = submit_done, .arg = j,
                           .label = a->name, .endpoint = "runs"};
    j->req = agent_request(b->http, &o);
    free(url);
    free(text);
    json_decref(body);
    if (j->req == NULL) {
        struct mcp_call *c = j->call;
        j->call = NULL;
        tool_error(c, TE_UPSTREAM_ERROR, 0, "could not start the request to the agent");
        job_free(j);
    }
}

static void job_start(struct job *j)
{
    if (j->kind == JOB_SYNC)
        sync_start(j);
    else if (j->kind == JOB_SUBMIT)
        submit_start(j);
}

/* ---------- argument tables: checks and inputSchema from one place ---------- */

static bool id_syntax(const char *s, size_t n)
{
    return taskpath_id_ok(s, n);
}

static bool session_syntax(const char *s, size_t n)
{
    return taskpath_session_ok(s, n);
}

static bool run_id_syntax(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

#define ID_PATTERN "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
#define ARG_ID(req)                                                                              \
    {.name = "id", .type = TOOLARG_STRING, .required = (req), .nonempty = (req), .max_len = 128, \
     .pattern = ID_PATTERN, .syntax = id_syntax,                                                 \
     .syntax_hint = "must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}"}
#define ARG_RUN_ID(req)                                                                          \
    {.name = "run_id", .type = TOOLARG_STRING, .required = (req), .nonempty = (req),             \
     .max_len = 127, .pattern = "^[A-Za-z0-9_-]+$", .syntax = run_id_syntax,                     \
     .syntax_hint = "has characters a run id never has"}
#define ARG_AGENT {.name = "agent", .type = TOOLARG_STRING, .max_len = 64,                       \
                   .description = "An agent name from list_agents (default: the default agent)"}

static const char *const task_modes[] = {"sync", "async", NULL};
enum { TA_TASK, TA_MODE, TA_CONTEXT, TA_DELIVERABLE, TA_CONSTRAINTS, TA_ID, TA_SESSION, TA_AGENT };
static const struct toolarg task_args[] = {
    {.name = "task", .type = TOOLARG_STRING, .required = true, .nonempty = true,
     .max_len = TASK_MAX, .description = "What the agent should do"},
    {.name = "mode", .type = TOOLARG_STRING, .required = true, .one_of = task_modes},
    {.name = "context", .type = TOOLARG_STRING, .max_len = CONTEXT_MAX},
    {.name = "deliverable", .type = TOOLARG_STRING, .max_len = DELIVERABLE_MAX},
    {.name = "constraints", .type = TOOLARG_STRINGS, .max_items = CONSTRAINTS_MAX,
     .max_len = CONSTRAINT_MAX},
    ARG_ID(false),
    {.name = "session", .type = TOOLARG_STRING, .max_len = 64,
     .pattern = "^[a-z0-9][a-z0-9._-]{0,63}$", .syntax = session_syntax,
     .syntax_hint = "must match ^[a-z0-9][a-z0-9._-]{0,63}$"},
    ARG_AGENT,
    TOOLARG_END,
};
static const struct toolarg result_args[] = {ARG_ID(true), TOOLARG_END};
enum { FA_ID, FA_PATH };
static const struct toolarg files_args[] = {
    ARG_ID(true),
    {.name = "path", .type = TOOLARG_STRING, .max_len = 4096,
     .description = "A path relative to the task; omit it for a listing"},
    TOOLARG_END,
};
static const struct toolarg no_args[] = {TOOLARG_END};
enum { SA_RUN_ID, SA_AGENT };
static const struct toolarg status_args[] = {ARG_RUN_ID(true), ARG_AGENT, TOOLARG_END};
enum { CA_RUN_ID, CA_ID };
static const struct toolarg cancel_args[] = {ARG_RUN_ID(false), ARG_ID(false), TOOLARG_END};
static const struct toolarg reset_args[] = {
    {.name = "confirmed", .type = TOOLARG_BOOL}, TOOLARG_END};

#define ARGS_MAX 8 /* the most entries of any table above */

/* Checks args against spec; on failure answers invalid_arguments and returns false. */
static bool check_args(struct mcp_call *c, const struct toolarg *spec, json_t *args,
                       json_t **out)
{
    char err[200];
    if (toolargs_check(spec, args, out, ARGS_MAX, err, sizeof err))
        return true;
    tool_error(c, TE_INVALID_ARGUMENTS, 0, "%s", err);
    return false;
}

/* ---------- tools ---------- */

static void fingerprint(json_t *args, const char *agent, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    json_t *canon = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:s}", "task",
                              json_object_get(args, "task"), "mode",
                              json_object_get(args, "mode"), "context",
                              json_object_get(args, "context"), "deliverable",
                              json_object_get(args, "deliverable"), "constraints",
                              json_object_get(args, "constraints"), "session",
                              json_object_get(args, "session"), "agent", agent);
    char *text = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
    unsigned char d[32];
    crypto_sha256(text, strlen(text), d);
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[64] = '\0';
    free(text);
    json_decref(canon);
}

static void hermes_task(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX];
    char idbuf[129], fp[65];

    if (!check_args(c, task_args, args, v))
        return;
    const char *task = toolargs_str(v, TA_TASK), *mode = toolargs_str(v, TA_MODE);
    const char *context = toolargs_str(v, TA_CONTEXT);
    const char *deliverable = toolargs_str(v, TA_DELIVERABLE);
    const char *id = toolargs_str(v, TA_ID), *session = toolargs_str(v, TA_SESSION);
    const char *agent_name = toolargs_str(v, TA_AGENT);
    json_t *constraints = v[TA_CONSTRAINTS];
    agents_refresh(b);
    if (agent_name == NULL)
        agent_name = b->default_agent;
    struct agentdef *a = find_agent(b, agent_name);
    if (a == NULL) {
        tool_error(c, TE_UNKNOWN_AGENT, 0, "no agent named '%.64s'; see list_agents", agent_name);
        return;
    }
    if (!agent_worth_trying(b, a)) {
        tool_error(c, TE_AGENT_UNAVAILABLE, 0, "the agent '%s' is unavailable (%s)", a->name,
                   a->key == NULL ? "missing_credentials" : "unreachable");
        return;
    }
    if (id == NULL) {
        char rnd[17];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        if (!crypto_random_hex(rnd, 4)) { /* never name a task with uninitialised bytes */
            tool_error(c, TE_UPSTREAM_ERROR, 0, "no random bytes for a task id; pass an 'id'");
            return;
        }
        strftime(idbuf, sizeof idbuf, "t-%Y%m%d-%H%M%S-", &tm);
        strncat(idbuf, rnd, sizeof idbuf - strlen(idbuf) - 1);
        id = idbuf;
    }
    fingerprint(args, a->name, fp);
    if (tasks_pending(b->tasks, id)) { /* its files are still being written */
        tool_error(c, TE_BUSY, 1, "task '%s' is still in progress", id);
        return;
    }

    /* A task id names one unit of work: the same request again is a retry. */
    json_t *prev = NULL;
    enum tasks_rc prc = tasks_read(b->tasks, id, "request.json", 64 * 1024, &prev);
    if (prc != TASKS_OK && prc != TASKS_NOT_FOUND) {
        /* Not a task directory (a plain file, say), or a request.json we cannot read. */
        tool_error(c, TE_INVALID_ARGUMENTS, 0, "task id '%s' cannot be used: its entry in the "
                   "task directory is not a readable task", id);
        return;
    }
    if (prc == TASKS_OK) {
        const char *pa = json_string_value(json_object_get(prev, "agent"));
        const char *pf = json_string_value(json_object_get(prev, "fingerprint"));
        if (pa && strcmp(pa, a->name) != 0) {
            tool_error(c, TE_DUPLICATE_ID, 0, "task id '%s' belongs to agent '%s'", id, pa);
            json_decref(prev);
            return;
        }
        if (pf == NULL || strcmp(pf, fp) != 0) {
            tool_error(c, TE_DUPLICATE_ID, 0, "task id '%s' was used for a different request", id);
            json_decref(prev);
            return;
        }
        json_decref(prev);
        json_t *res = NULL, *run = NULL;
        if (tasks_read(b->tasks, id, "result.json", TASKS_FILE_MAX, &res) == TASKS_OK) {
            mcp_call_tool_result_take(c, result_public(res));
            json_decref(res);
            return;
        }
        if (tasks_read(b->tasks, id, "run.json", 64 * 1024, &run) == TASKS_OK) {
            mcp_call_tool_result_take(
                c, json_pack("{s:s, s:s, s:O, s:s, s:[], s:[]}", "id", id, "status", "accepted",
                             "run_id", json_object_get(run, "run_id"), "summary",
                             "already accepted; this is the same run", "artifacts",
                             "next_steps"));
            json_decref(run);
            return;
        }
        if (strmap_get(b->jobs, id)) {
            tool_error(c, TE_BUSY, 1, "task '%s' is still in progress", id);
            return;
        }
        /* Accepted earlier but nothing came of it (crash before the agent answered): redo. */
    } else if (strmap_get(b->jobs, id)) {
        tool_error(c, TE_BUSY, 1, "task '%s' is still in progress", id);
        return;
    }
    json_t *req = json_pack("{s:s, s:s, s:s, s:s?, s:s, s:o}", "id", id, "agent", a->name, "mode",
                            mode, "session", session, "fingerprint", fp, "created_at", iso_now());
    /* Not waited for: the agent starts at once. The writer keeps the order, so request.json is
     * durable before any later file of this task (the answer waits for those). */
    enum tasks_rc wrc = tasks_write(b->tasks, id, "request.json", req, NULL, NULL);
    json_decref(req);
    if (wrc != TASKS_OK) {
        tool_error(c, TE_UPSTREAM_ERROR, 0, "the task directory could not be written");
        return;
    }
    struct job *j = job_new(b, strcmp(mode, "sync") == 0 ? JOB_SYNC : JOB_SUBMIT, id, a->name);
    j->call = c;
    j->prompt = contract_prompt(task, context, deliverable, constraints);
    if (session)
        snprintf(j->session_id, sizeof j->session_id, "gb-sess-%s-%s", a->name, session);
    else
        snprintf(j->session_id, sizeof j->session_id, "gb-task-%s", id);
    mcp_call_on_cancel(c, j->kind == JOB_SYNC ? sync_cancelled : submit_cancelled, j);
    /* A long sync call may outlive the client's timeout: the first progress notification
     * names the id, so the result can still be fetched. Sent before the job is queued, which
     * may already answer the call. */
    if (j->kind == JOB_SYNC && mcp_call_progress_token(c)) {
        char note[512]; /* two ids of at most 128 bytes and an agent name of 64 */
        snprintf(note, sizeof note,
                 "task %s accepted for agent %s; if this call times out, hermes_result with "
                 "id \"%s\" returns the result",
                 id, a->name, id);
        mcp_call_progress(c, 0, 0, note);
    }
    if (!job_enqueue(j, session)) {
        j->call = NULL;
        mcp_call_on_cancel(c, NULL, NULL);
        remove_then_answer(b, id, "request.json", c,
                           tool_error_json(TE_BUSY, 5, "session '%s' already has %d calls waiting",
                                           session, SESSION_QUEUE_MAX));
        job_free(j);
    }
}

static void hermes_result(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX], *res = NULL;

    if (!check_args(c, result_args, args, v))
        return;
    const char *id = toolargs_str(v, 0);
    switch (tasks_read(b->tasks, id, "result.json", TASKS_FILE_MAX, &res)) {
    case TASKS_OK:
        mcp_call_tool_result_take(c, result_public(res));
        json_decref(res);
        return;
    case TASKS_NOT_FOUND:
        if (strmap_get(b->jobs, id) || tasks_pending(b->tasks, id) || tasks_exists(b->tasks, id))
            tool_error(c, TE_NOT_FOUND, 0, "task '%s' has no result yet; it is still running", id);
        else
            tool_error(c, TE_NOT_FOUND, 0, "no task with id '%s'", id);
        return;
    case TASKS_TOO_BIG:
        tool_error(c, TE_UPSTREAM_ERROR, 0, "result.json is larger than %d KiB",
                   TASKS_FILE_MAX / 1024);
        return;
    default:
        tool_error(c, TE_UPSTREAM_ERROR, 0, "result.json of task '%s' is unreadable", id);
        return;
    }
}

static void hermes_files(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    char norm[1100], why[200];
    const char *reason;
    json_t *v[ARGS_MAX], *out = NULL;

    if (!check_args(c, files_args, args, v))
        return;
    const char *id = toolargs_str(v, FA_ID), *path = toolargs_str(v, FA_PATH);
    json_t *pv = json_object_get(args, "path");
    size_t plen = path ? json_string_length(pv) : 0;
    if (!taskpath_rel_ok(path ? path : "", plen, norm, sizeof norm, &reason)) {
        tool_error(c, TE_INVALID_ARGUMENTS, 0, "'path': %s", reason);
        return;
    }
    enum tasks_rc rc = tasks_files(b->tasks, id, norm, &out, why, sizeof why);
    if (rc == TASKS_OK) {
        mcp_call_tool_result_take(c, out);
        return;
    }
    tool_error(c, rc == TASKS_NOT_FOUND ? TE_NOT_FOUND : TE_INVALID_ARGUMENTS, 0, "%s", why);
}

static void list_agents(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX];
    if (!check_args(c, no_args, args, v))
        return;
    agents_refresh(b);
    json_t *list = json_array();
    size_t avail = 0;
    for (size_t i = 0; i < b->nagents; i++) {
        struct agentdef *a = &b->agents[i];
        json_t *o = json_pack("{s:s, s:s, s:O, s:s, s:b, s:b}", "name", a->name, "description",
                              a->description ? a->description : "", "capabilities",
                              a->capabilities, "kind", a->kind ? a->kind : "local", "available",
                              agent_available(a), "default",
                              strcmp(a->name, b->default_agent) == 0);
        if (a->key == NULL)
            json_object_set_new(o, "unavailable_reason", json_string("missing_credentials"));
        else if (!agent_available(a))
            json_object_set_new(o, "unavailable_reason", json_string("unreachable"));
        else
            avail++;
        if (a->profile)
            json_object_set_new(o, "local_profile", json_string(a->profile));
        json_array_append_new(list, o);
    }
    json_t *out = json_pack("{s:o, s:s, s:I}", "agents", list, "default", b->default_agent,
                            "count", (json_int_t)b->nagents);
    if (!b->registry_loaded)
        json_object_set_new(out, "degraded", json_string("no_registry"));
    if (b->registry_error)
        json_object_set_new(out, "registry_error", json_string(b->registry_error));
    (void)avail;
    mcp_call_tool_result_take(c, out);
}

/* One request to the agent about a run, on behalf of a waiting MCP call (status, stop). */
struct run_ctx {
    struct bridge *b;
    struct mcp_call *call;
    struct agent_req *req;
    char run_id[128], task_id[129], agent[65];
};

static void run_ctx_cancelled(struct mcp_call *c, void *arg)
{
    struct run_ctx *s = arg;
    (void)c;
    agent_cancel(s->req);
    free(s);
}

/* Sends method <base_url>/v1/runs/<run_id><suffix>; on failure answers the call and frees s. */
static void run_ctx_send(struct run_ctx *s, struct agentdef *a, const char *method,
                         const char *suffix, agent_done_cb *done)
{
    char path[200];
    snprintf(path, sizeof path, "/v1/runs/%s%s", s->run_id, suffix);
    char *url = agent_url(a, path);
    bool post = strcmp(method, "POST") == 0;
    struct agent_opts o = {.method = method, .url = url, .key = a->key,
                           .body = post ? "{}" : NULL, .body_len = post ? 2 : 0,
                           .connect_timeout_ms = CONNECT_TIMEOUT_MS, .deadline_ms = 30000,
                           .max_response = RESPONSE_MAX, .on_done = done, .arg = s,
                           .label = a->name, .endpoint = post ? "stop" : "run"};
    s->req = agent_request(s->b->http, &o);
    free(url);
    if (s->req == NULL) {
        tool_error(s->call, TE_UPSTREAM_ERROR, 0, "could not start the request to the agent");
        free(s);
        return;
    }
    mcp_call_on_cancel(s->call, run_ctx_cancelled, s);
}

/* hermes_status: the run as the agent sees it, else what is on disk. */
static void status_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct run_ctx *s = arg;
    struct bridge *b = s->b;
    struct mcp_call *c = s->call;
    json_t *stored = NULL;
    (void)r;

    mcp_call_on_cancel(c, NULL, NULL);
    bool have_result = s->task_id[0] &&
                       tasks_read(b->tasks, s->task_id, "result.json", TASKS_FILE_MAX, &stored) ==
                           TASKS_OK;
    if (res->status == 200) {
        json_t *run = json_loadb(res->body, res->body_len, 0, NULL);
        const char *st = json_string_value(json_object_get(run, "status"));
        bool store = is_terminal(st) && !have_result && s->task_id[0];
        json_t *out = json_pack("{s:s, s:s?, s:O?, s:O?, s:O?, s:O?, s:s, s:s?, s:b}", "run_id",
                                s->run_id, "status", st, "output", json_object_get(run, "output"),
                                "error", json_object_get(run, "error"), "created_at",
                                json_object_get(run, "created_at"), "updated_at",
                                json_object_get(run, "updated_at"), "agent", s->agent,
                                "task_id", s->task_id[0] ? s->task_id : NULL, "result_updated",
                                have_result || store);
        if (store) /* answered once the result it reports as updated is durable */
            result_from_run(b, s->task_id, s->agent, run, c, mcp_tool_result(out));
        else
            mcp_call_tool_result_take(c, out);
        json_decref(run);
    } else if (res->status == 404 && have_result) {
        json_t *out = json_pack("{s:s, s:O, s:O?, s:O?, s:s, s:s, s:b, s:s}", "run_id",
                                s->run_id, "status", json_object_get(stored, "status"), "output",
                                json_object_get(stored, "summary"), "error",
                                json_object_get(stored, "error"), "agent", s->agent, "task_id",
                                s->task_id, "result_updated", 1, "source", "result.json");
        mcp_call_tool_result_take(c, out);
    } else {
        upstream_fail(c, s->agent, res, "run status");
    }
    json_decref(stored);
    free(s);
}

static void hermes_status(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX];

    if (!check_args(c, status_args, args, v))
        return;
    const char *run_id = toolargs_str(v, SA_RUN_ID), *agent_name = toolargs_str(v, SA_AGENT);
    struct run_ctx *s = xcalloc(1, sizeof *s);
    s->b = b;
    s->call = c;
    snprintf(s->run_id, sizeof s->run_id, "%s", run_id);
    const char *task = strmap_get(b->runs, run_id);
    if (task) {
        json_t *run = NULL;
        snprintf(s->task_id, sizeof s->task_id, "%s", task);
        if (tasks_read(b->tasks, task, "run.json", 64 * 1024, &run) == TASKS_OK) {
            const char *ag = json_string_value(json_object_get(run, "agent"));
            snprintf(s->agent, sizeof s->agent, "%s", ag ? ag : b->default_agent);
        }
        json_decref(run);
    }
    if (s->agent[0] == '\0')
        snprintf(s->agent, sizeof s->agent, "%s", agent_name ? agent_name : b->default_agent);
    struct agentdef *a = find_agent(b, s->agent);
    if (a == NULL || a->key == NULL) {
        tool_error(c, a ? TE_AGENT_UNAVAILABLE : TE_UNKNOWN_AGENT, 0, "agent '%s' %s", s->agent,
                   a ? "has no usable credentials" : "is not registered");
        free(s);
        return;
    }
    run_ctx_send(s, a, "GET", "", status_done);
}

/* hermes_cancel: stop a sync task in flight, or a run (POST /v1/runs/{id}/stop). */
static void cancel_done(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct run_ctx *s = arg;
    struct mcp_call *c = s->call;
    (void)r;
    mcp_call_on_cancel(c, NULL, NULL);
    if (res->status == 200) {
        json_t *body = json_loadb(res->body, res->body_len, 0, NULL);
        const char *st = json_string_value(json_object_get(body, "status"));
        bool already = is_terminal(st);
        mcp_call_tool_result_take(
            c, json_pack("{s:s, s:s?, s:s, s:b, s:s}", "run_id", s->run_id, "task_id",
                         s->task_id[0] ? s->task_id : NULL, "status", st ? st : "stopping",
                         "already_finished", already, "message",
                         already ? "the run had already finished"
                                 : "stop requested; the bridge follows the run to its end"));
        json_decref(body);
        if (!already && s->task_id[0])
            follow(s->b, s->task_id, s->agent, s->run_id);
    } else if (res->status == 409) {
        json_t *stored = NULL;
        if (s->task_id[0] &&
            tasks_read(s->b->tasks, s->task_id, "result.json", TASKS_FILE_MAX, &stored) ==
                TASKS_OK)
            mcp_call_tool_result_take(
                c, json_pack("{s:s, s:s, s:O, s:b, s:s}", "run_id", s->run_id, "task_id",
                             s->task_id, "status", json_object_get(stored, "status"),
                             "already_finished", 1, "message", "the run had already finished"));
        else
            tool_error(c, TE_NOT_FOUND, 0, "the agent has no live run '%s' to stop", s->run_id);
        json_decref(stored);
    } else {
        upstream_fail(c, s->agent, res, "run stop");
    }
    free(s);
}

static void hermes_cancel(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *v[ARGS_MAX], *stored = NULL, *run = NULL;

    if (!check_args(c, cancel_args, args, v))
        return;
    const char *run_id = toolargs_str(v, CA_RUN_ID), *id = toolargs_str(v, CA_ID);
    if ((run_id == NULL) == (id == NULL)) {
        tool_error(c, TE_INVALID_ARGUMENTS, 0, "give exactly one of 'run_id' or 'id'");
        return;
    }
    if (run_id) {
        const char *t = strmap_get(b->runs, run_id);
        if (t == NULL) {
            tool_error(c, TE_NOT_FOUND, 0, "no task of this bridge has run '%.100s'", run_id);
            return;
        }
        id = t;
    }
    struct job *j = strmap_get(b->jobs, id);
    if (j && j->kind == JOB_SYNC) {
        struct mcp_call *waiting = j->call;
        j->call = NULL;
        if (waiting) {
            mcp_call_on_cancel(waiting, NULL, NULL);
            tool_error(waiting, TE_CANCELLED, 0, "task '%s' was cancelled by hermes_cancel", id);
        }
        bool started = j->req != NULL;
        agent_cancel(j->req);
        j->req = NULL;
        json_t *out = json_pack("{s:s, s:s, s:b, s:s}", "id", id, "status", "cancelled",
                                "already_finished", 0, "message",
                                started ? "the agent's stream was closed, which interrupts it"
                                        : "the task had not started yet");
        write_status_result(b, id, j->agent, "cancelled", "cancelled with hermes_cancel", NULL, c,
                            mcp_tool_result(out));
        job_free(j);
        return;
    }
    if (tasks_read(b->tasks, id, "run.json", 64 * 1024, &run) != TASKS_OK) {
        if (tasks_read(b->tasks, id, "result.json", TASKS_FILE_MAX, &stored) == TASKS_OK)
            mcp_call_tool_result_take(c, json_pack("{s:s, s:O, s:b, s:s}", "id", id, "status",
                                                   json_object_get(stored, "status"),
                                                   "already_finished", 1, "message",
                                                   "the task had already finished"));
        else
            tool_error(c, TE_NOT_FOUND, 0, "no task with id '%s'", id);
        json_decref(stored);
        return;
    }
    struct run_ctx *s = xcalloc(1, sizeof *s);
    s->b = b;
    s->call = c;
    snprintf(s->task_id, sizeof s->task_id, "%s", id);
    snprintf(s->run_id, sizeof s->run_id, "%s", json_string_value(json_object_get(run, "run_id")));
    const char *ag = json_string_value(json_object_get(run, "agent"));
    snprintf(s->agent, sizeof s->agent, "%s", ag ? ag : b->default_agent);
    json_decref(run);
    struct agentdef *a = find_agent(b, s->agent);
    if (a == NULL || a->key == NULL) {
        tool_error(c, TE_AGENT_UNAVAILABLE, 0, "agent '%s' cannot be reached", s->agent);
        free(s);
        return;
    }
    run_ctx_send(s, a, "POST", "/stop", cancel_done);
}

static void count_status(json_t *by, const char *status)
{
    json_t *n = json_object_get(by, status);
    json_object_set_new(by, status, json_integer(n ? json_integer_value(n) + 1 : 1));
}

/* Run-index entries whose task is gone from disk and from memory (removed by hand, say). */
struct stale {
    struct bridge *b;
    char **keys;
    size_t n;
};

static void collect_stale_run(const char *run_id, void *task_id, void *arg)
{
    struct stale *st = arg;
    const char *id = task_id;
    if (strmap_get(st->b->jobs, id) || tasks_pending(st->b->tasks, id) ||
        tasks_exists(st->b->tasks, id))
        return;
    st->keys = xrealloc(st->keys, (st->n + 1) * sizeof *st->keys);
    st->keys[st->n++] = xstrdup(run_id);
}

static void hermes_reset(struct mcp_call *c, json_t *args, void *arg)
{
    struct bridge *b = arg;
    json_t *a[ARGS_MAX];
    if (!check_args(c, reset_args, args, a))
        return;
    if (!json_is_true(a[0])) {
        tool_error(c, TE_CONFIRMATION_REQUIRED, 0,
                   "hermes_reset rebuilds the job bookkeeping of every caller; call it again "
                   "with confirmed: true");
        return;
    }
    /* Nothing in flight is dropped: a followed run still gets its result.json when it ends,
     * a waiting call still gets its answer (dropping them lost results until a restart). What
     * is reset is the run index, rebuilt from the task directory: entries whose task is gone
     * are cleared, runs on disk without a result are followed (again, if they were not). */
    json_t *by = json_object();
    size_t n;
    void **v = strmap_values(b->jobs, &n);
    for (size_t i = 0; i < n; i++)
        count_status(by, ((struct job *)v[i])->kind == JOB_FOLLOW ? "following" : "in_flight");
    free(v);
    /* Merged, not replaced: an entry whose run.json or result.json is still being written is
     * not on disk yet, and dropping it would lose the run until a restart. */
    struct stale stale = {.b = b};
    strmap_each(b->runs, collect_stale_run, &stale);
    for (size_t i = 0; i < stale.n; i++) {
        free(strmap_del(b->runs, stale.keys[i]));
        free(stale.keys[i]);
    }
    free(stale.keys);
    json_int_t cleared = (json_int_t)stale.n;
    tasks_each(b->tasks, index_task, b);
    size_t after = strmap_count(b->runs);
    json_object_set_new(by, "indexed_runs", json_integer((json_int_t)after));
    log_warn("hermes_reset: run index rebuilt from the task directory (%zu runs, %lld stale "
             "entries cleared); nothing in flight was dropped",
             after, (long long)cleared);
    mcp_call_tool_result_take(c, json_pack("{s:I, s:o}", "cleared", cleared, "by_status", by));
}

/* ---------- start-up: index runs, follow what was in flight ---------- */

static void index_task(const char *id, void *arg)
{
    struct bridge *b = arg;
    /* A write in flight (hermes_reset while a run settles): its job already did the work. */
    if (tasks_pending(b->tasks, id))
        return;
    json_t *run = NULL;
    if (tasks_read(b->tasks, id, "run.json", 64 * 1024, &run) != TASKS_OK)
        return;
    const char *run_id = json_string_value(json_object_get(run, "run_id"));
    const char *agent = json_string_value(json_object_get(run, "agent"));
    if (run_id && strlen(run_id) < 128) {
        free(strmap_put(b->runs, run_id, xstrdup(id)));
        char path[300];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s/result.json", tasks_dir(b->tasks), id);
        if (stat(path, &st) < 0) {
            log_info("task %s: following run %s again after the restart", id, run_id);
            follow(b, id, agent ? agent : b->default_agent, run_id);
        }
    }
    json_decref(run);
}

/* ---------- registration ---------- */

static json_t *schema_obj(const char *json)
{
    json_t *s = json_loads(json, 0, NULL);
    if (s == NULL) {
        log_error("BUG: a built-in schema does not parse");
        abort();
    }
    return s;
}

#define RESULT_SCHEMA                                                                           \
    "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"status\":{\"type\":"   \
    "\"string\"},\"summary\":{\"type\":\"string\"},\"artifacts\":{\"type\":\"array\",\"items\":" \
    "{\"type\":\"string\"}},\"next_steps\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}," \
    "\"run_id\":{\"type\":\"string\"},\"details\":{\"type\":\"object\"}},\"required\":[\"id\","  \
    "\"status\"]}"

struct bridge *bridge_new(struct mcp_server *mcp, struct loop *l, struct config *cfg)
{
    char err[512];
    struct bridge *b = xcalloc(1, sizeof *b);
    b->mcp = mcp;
    b->loop = l;
    b->cfg = cfg;
    b->http = agent_client_new(l);
    b->jobs = strmap_new();
    b->runs = strmap_new();
    b->queues = strmap_new();
    buf_init(&b->chunk, ANSWER_MAX);
    b->registry_path = agentcfg_registry_path(cfg->agents_file);
    b->tasks = tasks_open(cfg->tasks_dir ? cfg->tasks_dir : "tasks", l, err, sizeof err);
    if (b->tasks == NULL) {
        log_error("%s", err);
        bridge_free(b);
        return NULL;
    }
    agents_load(b);
    tasks_each(b->tasks, index_task, b);

    mcp_add_tool(mcp, &(struct mcp_tool_def){
        .name = "hermes_task",
        .title = "Delegate a task to Hermes",
        .description =
            "Delegate a task to a Hermes agent. mode \"sync\" waits for the answer (progress is "
            "reported when you pass a progressToken) and returns {id, status, summary, "
            "artifacts, next_steps}; mode \"async\" returns at once with status \"accepted\" and "
            "a run_id: the bridge follows the run and stores the result, read it with "
            "hermes_status or hermes_result. Re-sending the same id with the same request is a "
            "safe retry. For anything that may take long, pass your own id: if the call times "
            "out, hermes_result with that id returns the result (with a progressToken, the "
            "first progress notification names the id too). Optional: context, deliverable, "
            "constraints (at most 20), id, session (continues a conversation; calls in one "
            "session run one at a time), agent (see list_agents).",
        .input_schema = toolargs_schema(task_args),
        .output_schema = toolerr_output_schema(schema_obj(RESULT_SCHEMA)),
        .annotations = json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", 0, "destructiveHint", 0,
                                 "idempotentHint", 1, "openWorldHint", 1),
        .handler = hermes_task,
        .arg = b});
    mcp_add_tool(mcp, &(struct mcp_tool_def){
        .name = "hermes_status",
        .title = "Status of a run",
        .description = "Status of an async run: status, output, error, timestamps, agent, "
                       "task_id, result_updated. Works after a bridge restart; when the agent "
                       "no longer knows the run, answers from the stored result.",
        .input_schema = toolargs_schema(status_args),
        .output_schema = toolerr_output_schema(schema_obj(
            "{\"type\":\"object\",\"properties\":{\"run_id\":{\"type\":\"string\"},\"status\":{"
            "\"type\":\"string\"},\"agent\":{\"type\":\"string\"},\"task_id\":{\"type\":"
            "\"string\"},\"result_updated\":{\"type\":\"boolean\"}},\"required\":[\"run_id\","
            "\"status\"]}")),
        .annotations = json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", 1, "destructiveHint", 0,
                                 "idempotentHint", 1, "openWorldHint", 1),
        .handler = hermes_status,
        .arg = b});
    mcp_add_tool(mcp, &(struct mcp_tool_def){
        .name = "hermes_result",
        .title = "Result of a task",
        .description = "The stored result of a task: {id, status, summary, artifacts, "
                       "next_steps, details?}. The durable source of truth once a task ended.",
        .input_schema = toolargs_schema(result_args),
        .output_schema = toolerr_output_schema(schema_obj(RESULT_SCHEMA)),
        .annotations = json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", 1, "destructiveHint", 0,
                                 "idempotentHint", 1, "openWorldHint", 0),
        .handler = hermes_result,
        .arg = b});
    mcp_add_tool(mcp, &(struct mcp_tool_def){
        .name = "hermes_files",
        .title = "Files of a task",
        .description = "List a task's files, or read one UTF-8 text file (at most 200 KiB) by "
                       "its path relative to the task. Read-only; no '..', absolute paths, "
                       "backslashes or symbolic links.",
        .input_schema = toolargs_schema(files_args),
        .output_schema = toolerr_output_schema(schema_obj(
            "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"path\":{\"type\":"
            "\"string\"},\"entries\":{\"type\":\"array\"},\"count\":{\"type\":\"integer\"},"
            "\"truncated\":{\"type\":\"boolean\"},\"size\":{\"type\":\"integer\"},\"mtime\":{"
            "\"type\":\"integer\"},\"encoding\":{\"type\":\"string\"},\"content\":{\"type\":"
            "\"string\"}},\"required\":[\"id\",\"path\"]}")),
        .annotations = json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", 1, "destructiveHint", 0,
                                 "idempotentHint", 1, "openWorldHint", 0),
        .handler = hermes_files,
        .arg = b});
    mcp_add_tool(mcp, &(struct mcp_tool_def){
        .name = "list_agents",
        .title = "List agents",
        .description = "List the Hermes agents this bridge can delegate to, with their "
                       "capabilities and availability. Read-only; never returns credentials.",
        .input_schema = toolargs_schema(no_args),
        .output_schema = toolerr_output_schema(schema_obj(
            "{\"type\":\"object\",\"properties\":{\"agents\":{\"type\":\"array\"},\"default\":{"
            "\"type\":\"string\"},\"count\":{\"type\":\"integer\"}},\"required\":[\"agents\","
            "\"default\",\"count\"]}")),
        .annotations = json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", 1, "destructiveHint", 0,
                                 "idempotentHint", 1, "openWorldHint", 0),
        .handler = list_agents,
        .arg = b});
    mcp_add_tool(mcp, &(struct mcp_tool_def){
        .name = "hermes_cancel",
        .title = "Cancel a task",
        .description = "Really stop a task: a sync task in flight is interrupted, an async run "
                       "is stopped at the agent (POST /v1/runs/{id}/stop) and followed to its "
                       "end. Give run_id or id. Says so when the task had already finished.",
        .input_schema = toolargs_schema(cancel_args),
        .output_schema = toolerr_output_schema(schema_obj(
            "{\"type\":\"object\",\"properties\":{\"status\":{\"type\":\"string\"},"
            "\"already_finished\":{\"type\":\"boolean\"},\"message\":{\"type\":\"string\"}},"
            "\"required\":[\"status\"]}")),
        .annotations = json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", 0, "destructiveHint", 1,
                                 "idempotentHint", 1, "openWorldHint", 1),
        .handler = hermes_cancel,
        .arg = b});
    mcp_add_tool(mcp, &(struct mcp_tool_def){
        .name = "hermes_reset",
        .title = "Reset the job bookkeeping",
        .description = "GLOBAL: rebuilds the bridge's job bookkeeping (the run index) from the "
                       "task directory, for every caller; result files are kept and nothing in "
                       "flight is dropped (followed runs still get their results). Ask the user "
                       "before calling it when other work may be in flight. Needs confirmed: "
                       "true.",
        .input_schema = toolargs_schema(reset_args),
        .output_schema = toolerr_output_schema(schema_obj(
            "{\"type\":\"object\",\"properties\":{\"cleared\":{\"type\":\"integer\"},"
            "\"by_status\":{\"type\":\"object\"}},\"required\":[\"cleared\",\"by_status\"]}")),
        .annotations = json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", 0, "destructiveHint", 1,
                                 "idempotentHint", 0, "openWorldHint", 0),
        .handler = hermes_reset,
        .arg = b});
    return b;
}

void bridge_reload(struct bridge *b)
{
    agents_load(b);
    log_info("agent settings reloaded");
}

void bridge_health(struct bridge *b, char *out, size_t outlen)
{
    size_t avail = 0;
    agents_refresh(b);
    for (size_t i = 0; i < b->nagents; i++)
        avail += agent_available(&b->agents[i]);
    json_t *err = b->registry_error ? json_string(b->registry_error) : NULL;
    char *err_text = err ? json_dumps(err, JSON_ENCODE_ANY) : NULL;
    snprintf(out, outlen,
             ",\"agents\":{\"default\":\"%s\",\"count\":%zu,\"available\":%zu},"
             "\"jobs\":%zu%s%s%s",
             b->default_agent, b->nagents, avail, strmap_count(b->jobs),
             b->registry_loaded ? "" : ",\"degraded\":\"no_registry\"",
             err_text ? ",\"registry_error\":" : "", err_text ? err_text : "");
    free(err_text);
    json_decref(err);
}

void bridge_metrics(struct bridge *b, struct buf *out)
{
    char labels[120];
    agents_refresh(b);
    buf_appends(out, "# HELP hermes_mcp_agent_up Whether an agent is available (key present, "
                     "health probe answering)\n# TYPE hermes_mcp_agent_up gauge\n");
    for (size_t i = 0; i < b->nagents; i++) {
        metric_labels(labels, sizeof labels, "agent", b->agents[i].name, NULL);
        buf_printf(out, "hermes_mcp_agent_up{%s} %d\n", labels,
                   agent_available(&b->agents[i]) ? 1 : 0);
    }
    metric_render_value(out, "hermes_mcp_jobs", "Tasks the bridge is running or following",
                        METRIC_GAUGE, (double)strmap_count(b->jobs));
    metric_render_value(out, "hermes_mcp_registry_ok",
                        "1 when the agents registry on disk is in use (0: last good state kept)",
                        METRIC_GAUGE, b->registry_error ? 0 : 1);
    agent_client_metrics(b->http, out);
}

void bridge_free(struct bridge *b)
{
    if (b == NULL)
        return;
    if (b->jobs) {
        size_t n;
        void **v = strmap_values(b->jobs, &n);
        for (size_t i = 0; i < n; i++) {
            struct job *j = v[i];
            j->q = NULL; /* no successor starts while we tear down */
            job_free(j);
        }
        free(v);
    }
    if (b->queues) {
        size_t n;
        void **v = strmap_values(b->queues, &n);
        for (size_t i = 0; i < n; i++)
            free(v[i]);
        free(v);
    }
    if (b->runs) {
        size_t n;
        void **v = strmap_values(b->runs, &n);
        for (size_t i = 0; i < n; i++)
            free(v[i]);
        free(v);
    }
    agents_clear(b); /* cancels probes before the client goes */
    agent_client_free(b->http);
    strmap_free(b->jobs);
    strmap_free(b->runs);
    strmap_free(b->queues);
    tasks_free(b->tasks);
    buf_cleanup(&b->chunk);
    free(b->contract);
    free(b->contract_json);
    free(b->registry_path);
    free(b->registry_error);
    free(b);
}
