/* bridge.c — the Hermes bridge as the rest of the server sees it: it opens the task directory,
 * loads the agents, registers the tools (one table of the specs the tool_*.c files declare) and
 * follows the runs a previous process left in flight; and it answers /health, /metrics, reload
 * and shutdown.
 *
 * A job is one task this process is working on: a sync call streaming a chat completion
 * (syncjob.c), an async call submitting a run, or a run being followed to its end (runjob.c,
 * also after a restart: runs with run.json but no result.json are followed again at start-up).
 * Jobs of one session run one at a time through a bounded queue (jobs.c). What is on disk is
 * the truth; memory is an index of it. */
#include "bridge.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentclient.h"
#include "agentfile.h"
#include "bridge_internal.h"
#include "buf.h"
#include "log.h"
#include "mcp.h"
#include "mem.h"
#include "metrics.h"
#include "retention.h"
#include "strmap.h"
#include "taskfilespg.h"
#include "tasks.h"
#include "toolargs.h"

/* Retention never prunes a task in flight, and a pruned task leaves the run index. */
static bool task_in_flight(const char *id, void *arg)
{
    struct bridge *b = arg;
    return strmap_get(b->jobs, id) || tasks_pending(b->tasks, id);
}

static void task_pruned(const char *id, const char *run_id, void *arg)
{
    struct bridge *b = arg;
    const char *indexed = *run_id ? strmap_get(b->runs, run_id) : NULL;
    if (indexed && !strcmp(indexed, id) && !task_in_flight(id, b))
        free(strmap_del(b->runs, run_id));
}

/* Appends a copy of name to *list of *n (our own tools: a handful, fixed in the code). */
static void name_add(char ***list, size_t *n, const char *name)
{
    *list = xrealloc(*list, (*n + 1) * sizeof **list);
    (*list)[(*n)++] = xstrdup(name);
}

/* The bridge's tools, in the order tools/list shows them; the aliases after the tools they
 * name. */
static const struct bridge_tool_spec *const tools[] = {
    &tool_task_spec,   &tool_status_spec, &tool_result_spec, &tool_files_spec, &tool_agents_spec,
    &tool_cancel_spec, &tool_reset_spec,  &tool_whoami_spec, &tool_ask_spec,   &tool_check_spec,
};
#define NTOOLS (sizeof tools / sizeof *tools)

const char *bridge_tool_judged_as(const char *name)
{
    for (size_t i = 0; i < NTOOLS; i++)
        if (tools[i]->alias_of && strcmp(name, tools[i]->name) == 0)
            return tools[i]->alias_of;
    return name;
}

struct taskload *bridge_keep_load(struct bridge *b, struct taskload *l)
{
    b->loads = xrealloc(b->loads, (b->nloads + 1) * sizeof *b->loads);
    return b->loads[b->nloads++] = l;
}

/* Registers a tool on b->mcp unless bridge_tools leaves it out. */
static void add_tool(struct bridge *b, const struct bridge_tool_spec *t)
{
    name_add(&b->offered, &b->noffered, t->name);
    if (b->keep && !b->keep(bridge_tool_judged_as(t->name), b->keep_arg)) {
        log_info("bridge tool %s is not exposed (bridge_tools in the gateway file)", t->name);
        return;
    }
    struct mcp_tool_def d = {
        .name = t->name,
        .title = t->title,
        .description = t->description,
        .input_schema = toolargs_schema(t->args),
        .output_schema = toolerr_output_schema(toolspec_output_schema(t->output)),
        .annotations = toolspec_annotations(t->hints.read_only, t->hints.destructive,
                                            t->hints.idempotent, t->hints.open_world),
        .handler = t->handler,
        .arg = b,
        .scope = t->scope,
    };
    if (tasks_remote(b->tasks)) { /* the task is loaded from the database first */
        d.handler = taskload_tool;
        d.arg = bridge_keep_load(b, taskload_for_tool(b, t));
    }
    b->tools = xrealloc(b->tools, (b->ntools + 1) * sizeof *b->tools);
    b->tools[b->ntools] = t;
    name_add(&b->tool_names, &b->ntools, t->name);
    mcp_add_tool(b->mcp, &d);
    if (t->alias_of && !b->opts.tool_aliases)
        mcp_set_tool_hidden(b->mcp, t->name, true);
}

const char *const *bridge_offered_names(const struct bridge *b, size_t *n)
{
    *n = b ? b->noffered : 0;
    return b ? (const char *const *)b->offered : NULL;
}

const char *const *bridge_tool_names(const struct bridge *b, size_t *n)
{
    *n = b->ntools;
    return (const char *const *)b->tool_names;
}

struct bridge *bridge_new(struct mcp_server *mcp, struct loop *l, const struct bridge_opts *o)
{
    return bridge_new_kept(mcp, l, o, NULL, NULL);
}

/* A copy of one of the settings' strings, kept in b->opts_strings (freed with the bridge). */
static const char *opts_copy(struct bridge *b, size_t i, const char *s)
{
    return b->opts_strings[i] = s ? xstrdup(s) : NULL;
}

struct bridge *bridge_new_kept(struct mcp_server *mcp, struct loop *l, const struct bridge_opts *o,
                               bridge_keep_fn *keep, void *keep_arg)
{
    char err[512];
    struct bridge *b = xcalloc(1, sizeof *b);
    b->mcp = mcp;
    b->keep = keep;
    b->keep_arg = keep_arg;
    b->loop = l;
    b->opts = *o;
    b->opts.env_file = opts_copy(b, 0, o->env_file);
    b->opts.hermes_env_path = opts_copy(b, 1, o->hermes_env_path);
    b->opts.agents_file = opts_copy(b, 2, o->agents_file);
    b->opts.tasks_dir = opts_copy(b, 3, o->tasks_dir);
    b->opts.contract_path = opts_copy(b, 4, o->contract_path);
    b->http = agent_client_new(l);
    b->jobs = strmap_new();
    b->runs = strmap_new();
    b->queues = strmap_new();
    b->owners = strmap_new();
    b->unsaved = strmap_new();
    buf_init(&b->chunk, ANSWER_MAX);
    b->registry_path = agentcfg_registry_path(o->agents_file);
    b->tasks = tasks_open(o->tasks_dir ? o->tasks_dir : "tasks", l, err, sizeof err);
    if (b->tasks == NULL) {
        log_error("%s", err);
        bridge_free(b);
        return NULL;
    }
    if (!o->store_url && !tasks_journal_start(b->tasks, err, sizeof err)) {
        log_error("%s", err);
        bridge_free(b);
        return NULL;
    }
    if (o->store_url && !tasks_use_store(b->tasks, o->store_url, o->store_password,
                                         o->replica_id ? o->replica_id : "", runjob_take_over, b)) {
        log_error("the task store cannot be used (STORE_URL)");
        bridge_free(b);
        return NULL;
    }
    if (o->store_url) {
        struct taskfilespg_opts fo = {.loop = l,
                                      .url = o->store_url,
                                      .password = o->store_password,
                                      .tasks_dir = tasks_dir(b->tasks)};
        b->files_pg = taskfilespg_open(&fo);
        if (b->files_pg == NULL) {
            bridge_free(b);
            return NULL;
        }
    }
    agents_load(b);
    tasks_each(b->tasks, runjob_index_task, b); /* files only: a database's runs are taken over */
    for (size_t i = 0; i < NTOOLS; i++)
        add_tool(b, tools[i]);
    mcptask_register(b);
    b->watch = taskwatch_start(b);
    b->retention = retention_new(b->tasks, l, o->tasks_retention_days, o->tasks_max, task_in_flight,
                                 task_pruned, b);
    retention_prune(b->retention);
    return b;
}

void bridge_set_approvals(struct bridge *b, struct approvals *q)
{
    if (b)
        b->approvals = q;
}

void bridge_reload(struct bridge *b, const struct bridge_opts *o)
{
    b->opts.tasks_retention_days = o->tasks_retention_days;
    b->opts.tasks_max = o->tasks_max;
    retention_set_limits(b->retention, o->tasks_retention_days, o->tasks_max);
    agents_load(b);
    log_event(EV_AGENTS_RELOADED, NULL, "agent settings reloaded");
    retention_prune(b->retention);
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
    metric_render_value(out, "hermes_mcp_run_index_entries",
                        "Run ids this replica maps to their tasks (with a database: the runs it "
                        "follows)",
                        METRIC_GAUGE, (double)strmap_count(b->runs));
    metric_render_value(out, "hermes_mcp_results_unsaved",
                        "Results of ended runs waiting for the task store's database", METRIC_GAUGE,
                        b->unsaved ? (double)strmap_count(b->unsaved) : 0);
    metric_render_value(out, "hermes_mcp_registry_ok",
                        "1 when the agents registry on disk is in use (0: last good state kept)",
                        METRIC_GAUGE, b->registry_error ? 0 : 1);
    agent_client_metrics(b->http, out);
}

void bridge_free(struct bridge *b)
{
    if (b == NULL)
        return;
    tasks_quiesce(b->tasks); /* no takeover nor load reaches what is freed below */
    taskwatch_stop(b->watch);
    struct taskfilespg *files_pg = b->files_pg;
    b->files_pg = NULL; /* reads in flight are answered unavailable: they find no store */
    taskfilespg_free(files_pg);
    tool_reset_abort(b);
    if (b->jobs) {
        size_t n;
        void **v = strmap_values(b->jobs, &n);
        for (size_t i = 0; i < n; i++) {
            struct job *j = v[i];
            j->q = NULL; /* no successor starts while we tear down */
            bridge_job_free(j);
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
    b->jobs = NULL; /* the last write callbacks (tasks_free) see that the bridge stops */
    strmap_free(b->runs);
    strmap_free(b->queues);
    retention_stop(b->retention); /* no report reaches the freed index */
    unsaved_stop(b);              /* before tasks_free: a retry in flight is called back */
    tasks_free(b->tasks);         /* its last callbacks empty b->owners */
    taskwatch_free(b->watch);
    strmap_free(b->owners);
    retention_free(b->retention);
    buf_cleanup(&b->chunk);
    for (size_t i = 0; i < b->nloads; i++)
        free(b->loads[i]);
    free(b->loads);
    free(b->contract);
    free(b->contract_json);
    for (size_t i = 0; i < sizeof b->opts_strings / sizeof *b->opts_strings; i++)
        free(b->opts_strings[i]);
    free(b->registry_path);
    free(b->registry_error);
    for (size_t i = 0; i < b->ntools; i++)
        free(b->tool_names[i]);
    free(b->tool_names);
    free(b->tools);
    for (size_t i = 0; i < b->noffered; i++)
        free(b->offered[i]);
    free(b->offered);
    free(b);
}
