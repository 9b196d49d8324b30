/* bridge_internal.h — what the bridge's modules share, and nothing above the bridge includes:
 * the bridge state, the agents, the jobs and their session queues, and the functions one module
 * offers the others (agentset.c, contractfile.c, jobs.c, syncjob.c, runjob.c, runindex.c,
 * mcptask.c, results.c, reply.c, runctx.c, toolspec.c and one tool_*.c per tool). Loop thread
 * only. */
#ifndef HM_BRIDGE_INTERNAL_H
#define HM_BRIDGE_INTERNAL_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "agentclient.h"
#include "agentfile.h"
#include "bridge.h"
#include "buf.h"
#include "contract.h"
#include "mcp.h"
#include "sse.h"
#include "tasks.h"
#include "toolerr.h"

#define RESPONSE_MAX (1024 * 1024) /* agent responses, and one SSE event */
#define ANSWER_MAX (1024 * 1024)   /* the accumulated answer of a sync task */
#define CONTRACT_MAX CONTRACT_FILE_MAX
#define SESSION_QUEUE_MAX 8
#define CONNECT_TIMEOUT_MS 5000
#define DEFAULT_AGENT AGENTCFG_DEFAULT_NAME
/* An agent's health is probed when it is needed and the last probe is older than this: an idle
 * server makes no requests and no wake-ups at all. */
#define PROBE_MAX_AGE_MS 30000

struct loop;
struct mcp_call;
struct mcp_server;
struct strmap;
struct taskfilespg;
struct toolarg;

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

struct job;
struct sessq;

/* What a kind of job does, supplied by the module that runs it (syncjob.c, runjob.c,
 * mcptask.c): the queue (jobs.c) starts a job when its turn comes without knowing who runs it. */
struct job_ops {
    enum job_kind kind;
    void (*start)(struct job *j); /* its turn came; NULL: it schedules itself (a follow) */
    mcp_cancel_cb *cancelled;     /* the MCP call waiting for it went away */
    /* A submit's answer once run.json is durable (new reference); NULL: "accepted". */
    json_t *(*accepted)(struct job *j);
};

struct job {
    struct bridge *b;
    const struct job_ops *ops;
    char id[129];
    char agent[65];
    /* The agent's address when the job started: a reload may drop or change the agent while
     * the job runs, and what the job reports must still be what it used. */
    char *base_url;
    /* ... and its key: a followed run is finished at the agent it started on even when a
     * reload removed that agent (else it would be polled for ever). Wiped when freed. */
    char *key;
    unsigned follow_misses; /* polls skipped for want of an agent: they back off */
    char session_id[200];   /* what the agent sees (and the session queue's key) */
    char idem_key[160];     /* an async run's Idempotency-Key: taskowner_tag and the task id */
    char run_id[128];
    struct mcp_call *call;  /* the waiting MCP call, if any */
    struct otel_span *span; /* tracing: the agent run's CLIENT span while the call waits */
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
    json_t *task_created; /* an MCP task (mcptask.c): its createdAt; else NULL */
    char *owner;          /* the task's owner (hermes_task; a submit hands it to its follow
                             job); NULL for a run followed again after a restart */
    bool stop_pending;    /* tasks/cancel came while the run was being submitted: a submit
                             job's run is stopped once its id is known (the follow job's first
                             request is the stop) */
    /* A followed run waiting for approval at the agent (runapproval.c): its entry in the
     * operator's queue ("" when none), the decision being sent, and the polls that may still
     * show the wait that decision answered (poll_seq counts the polls sent). */
    char approval_id[33];
    unsigned char approval_fp[32]; /* SHA-256 of the approval field that entry was queued for */
    char approval_choice[8];       /* the decision being checked and sent (once|deny) */
    bool approval_full_said;       /* the queue was full for it: logged once */
    struct agent_req *approval_req;
    unsigned long poll_seq, approval_fence;
};

struct sessq {
    char key[200]; /* the agent session (a job's session_id): one conversation, one at a time */
    struct job *active;
    struct job *head, *tail;
    unsigned waiting;
};

struct bridge {
    struct mcp_server *mcp;
    bridge_keep_fn *keep; /* which tools to register (GATEWAY_FILE bridge_tools), NULL: all */
    void *keep_arg;
    char **tool_names; /* the tools registered */
    size_t ntools;
    const struct bridge_tool_spec **tools; /* ... as declared, one per tool_names entry */
    char **offered; /* every tool it has, registered or not (a reload of bridge_tools
                     * judges them all again) */
    size_t noffered;
    struct loop *loop;
    struct bridge_opts opts; /* a copy, its strings in opts_strings */
    char *opts_strings[5];
    struct tasks *tasks;
    struct taskfilespg *files_pg; /* STORE_URL: the files agents left, for every replica */
    struct retention *retention;  /* prunes finished tasks (TASKS_RETENTION_DAYS, TASKS_MAX) */
    struct agent_client *http;
    struct agentdef *agents;
    size_t nagents;
    char *default_agent;
    struct strmap *jobs;   /* task id → job */
    struct strmap *runs;   /* run id → task id (heap string) */
    struct strmap *queues; /* agent session (a job's session_id) → sessq */
    struct strmap *owners; /* task id → pending_owner while its request.json is being written */
    char *contract;
    struct timespec contract_mtime;
    off_t contract_size;
    char *registry_path;  /* AGENTS_FILE (or its default) */
    bool registry_loaded; /* the agents come from the registry (not synthetic) */
    char *registry_error; /* why the file on disk is not in use, or NULL */
    struct timespec registry_mtime;
    off_t registry_size;
    ino_t registry_ino;
    struct buf chunk;             /* scratch for chatchunk_scan */
    unsigned contract_gen;        /* bumped on every contract reload */
    char *contract_json;          /* the contract as a JSON string, for request bodies */
    const char *contract_json_of; /* ... of this text, */
    unsigned contract_json_gen;   /* ... at this generation */
    struct reset *reset;          /* the hermes_reset walking the task directory, if any */
    struct approvals *approvals;  /* the operator's queue (bridge_set_approvals), or NULL */
    struct taskload **loads;      /* with a database: each tool's and the tasks/ requests' loader */
    size_t nloads;
    /* Run once a result.json is durable for a task an MCP client watches (mcptask.c sets it). */
    void (*task_ended)(struct bridge *b, const char *id);
    struct taskwatch *watch; /* with a database: ends announced by any replica (taskwatch.c) */
    struct strmap *unsaved;  /* task id -> a result waiting for the database (unsaved.c) */
    size_t unsaved_bytes;
};

/* reply.c: answers */
json_t *bridge_iso_now(void);
/* Answers c with a tool error. */
void bridge_tool_error(struct mcp_call *c, enum toolerr code, unsigned retry_after, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));
/* Queues json as the task's file name; c (if any) gets result (taken) once that is durable. */
void bridge_store_then_answer(struct bridge *b, const char *id, const char *name, json_t *json,
                              struct mcp_call *c, json_t *result);
/* The same, and then after (may be NULL) runs, once the file is durable. */
void bridge_store_then(struct bridge *b, const char *id, const char *name, json_t *json,
                       struct mcp_call *c, json_t *result,
                       void (*after)(struct bridge *b, const char *id));
/* Queues removing the task's file name; c (if any) gets result (taken) once it is gone. */
void bridge_remove_then_answer(struct bridge *b, const char *id, const char *name,
                               struct mcp_call *c, json_t *result);
/* A tool error for an agent answer that is not a success (never echoing its body). */
json_t *bridge_upstream_error(const char *agent, const struct agent_result *res, const char *what);
void bridge_upstream_fail(struct mcp_call *c, const char *agent, const struct agent_result *res,
                          const char *what);

/* agentset.c */
struct agentdef *bridge_find_agent(struct bridge *b, const char *name);
char *agent_url(const struct agentdef *a, const char *path);
void agents_clear(struct bridge *b);
/* (Re)loads the registry, or the synthetic agent; an invalid file keeps what was there. */
void agents_load(struct bridge *b);
/* Before agents are used: the registry as on disk, and probes of agents not probed lately. */
void agents_refresh(struct bridge *b);
/* The registry as on disk (a stat; reloaded when it changed), without probing anyone. */
void agents_registry_refresh(struct bridge *b);
/* What list_agents, /health and /metrics report: a key, and the last probe did not fail. */
bool agent_available(const struct agentdef *a);
/* Whether a task may be sent (a failure older than PROBE_MAX_AGE_MS no longer refuses it). */
bool agent_worth_trying(const struct bridge *b, const struct agentdef *a);
/* Whether the caller of c may delegate to the agent called name (its principal's agents: list,
 * asked of the engine's agent filter). */
bool agent_allowed_for(const struct mcp_call *c, const char *name);

/* contractfile.c */
const char *contract_text(struct bridge *b);
const char *contract_json(struct bridge *b);

/* jobs.c */
struct job *bridge_job_new(struct bridge *b, const struct job_ops *ops, const char *id,
                           const char *agent);
void bridge_job_free(struct job *j);
/* The agent answered the job's request (its agent_done_cb): the request is over, and the
 * waiting MCP call (returned, may be NULL) is the caller's to answer. */
struct mcp_call *bridge_job_answered(struct job *j);
/* The run's span (if any) says how it ended, from what the call is answered with or the result
 * recorded: a tool error (error.type: its code) or a status of failed or interrupted. */
void bridge_job_trace_outcome(struct job *j, const json_t *r);
/* Sends the job's request to the agent (j->req); when it cannot start, the waiting call (if
 * any) gets upstream_error and the job ends (is freed). */
void bridge_job_send(struct job *j, const struct agent_opts *o);
/* The job's call went away before the agent had its task: request.json goes (a retry is free)
 * and the job ends. */
void bridge_job_withdraw(struct job *j);
/* Whether the queue of the agent session session_id (a job's session_id) has no room for
 * another job. */
bool bridge_job_queue_full(struct bridge *b, const char *session_id);
/* Joins the queue of its agent session (in_session) or starts at once; false when the queue is
 * full. Starts the job if it is first. */
bool bridge_job_enqueue(struct job *j, bool in_session);
/* The job's agent as configured now, or NULL: then the job failed and was freed. */
struct agentdef *bridge_job_agent(struct job *j);
/* The job keeps copies of a's address and key (what it uses if a reload drops a). */
void bridge_job_use_agent(struct job *j, const struct agentdef *a);

/* syncjob.c: a sync task (hermes_task mode "sync"). */
extern const struct job_ops syncjob_ops;

/* runjob.c: an async task's submission, and the follow of its run. */
extern const struct job_ops runjob_submit_ops;
void runjob_start(struct job *j);
void runjob_cancelled(struct mcp_call *c, void *arg);
/* Follows run_id of task id until it is terminal. NULL if the task already has a job. */
struct job *runjob_follow(struct bridge *b, const char *id, const char *agent, const char *run_id);
/* Indexes task id's run (arg: the bridge), and follows it when it has no result yet (start-up,
 * hermes_reset): a tasks_each callback. */
void runjob_index_task(const char *id, void *arg);
/* The store found a run whose follower is gone (tasks_takeover_cb): it is followed from here. */
void runjob_take_over(const char *id, const char *run, void *arg);

/* runapproval.c: a followed run's approvals in the operator's queue. */
/* A non-terminal run object a poll of job j returned: queues its approval when it waits for
 * one, withdraws the queued one when it no longer does. */
void runapproval_seen(struct job *j, json_t *run);
/* The job ends: its queued approval is withdrawn, a decision in flight dropped. */
void runapproval_drop(struct job *j);
/* The approval id of task id's run while it waits for the operator, else NULL. */
const char *runapproval_pending(struct bridge *b, const char *task_id);

/* results.c */
/* What hermes_task and hermes_result return: the contract fields plus id (new reference). */
json_t *results_public(json_t *r);
/* Writes result.json; c (if any) gets answer once it is durable (answer NULL: the record's
 * public projection, the same one a retry and hermes_result give). */
void results_write(struct bridge *b, const char *id, const char *agent, json_t *parsed,
                   const char *run_id, struct mcp_call *c, json_t *answer);
void results_write_status(struct bridge *b, const char *id, const char *agent, const char *status,
                          const char *summary, const char *run_id, struct mcp_call *c,
                          json_t *answer);
bool results_is_terminal(const char *status);
/* Writes result.json from a terminal run object; c (if any) gets answer once it is durable. */
void results_from_run(struct bridge *b, const char *id, const char *agent, json_t *run,
                      struct mcp_call *c, json_t *answer);
/* What a terminal run object says, as results_write takes it (new reference). */
json_t *results_run_outcome(json_t *run);
/* The record result.json holds for an outcome (new reference). */
json_t *results_record(const char *id, const char *agent, json_t *parsed, const char *run_id);
/* Writes the record r as task id's result.json for a caller that has no MCP call and must know
 * whether it was stored (a follower keeps it when the store was away): done(rc, arg) runs once
 * it is durable or failed, never before this returns (an MCP task being watched is told, as
 * results_write). */
void results_write_record_then(struct bridge *b, const char *id, json_t *r, tasks_done_cb *done,
                               void *arg);

/* taskwatch.c: with a database, the end of a task stored by any replica reaches the streams
 * watching it here (task_ended); NULL with task files. stop before the store stops, free
 * after it. */
struct taskwatch *taskwatch_start(struct bridge *b);
void taskwatch_stop(struct taskwatch *w);
void taskwatch_free(struct taskwatch *w);

/* unsaved.c: a followed run's result the store's database could not take yet, kept and
 * written again until it is stored. */
/* Keeps record (its text) and tries the write again later; false (nothing kept) beyond the
 * bound: the caller follows the run again instead. */
bool unsaved_keep(struct bridge *b, const char *id, json_t *record);
/* The store's database is back: every result waiting is written now. */
void unsaved_kick(struct bridge *b);
/* Whether task id's result waits here for the database. */
bool unsaved_has(struct bridge *b, const char *id);
/* The bridge stops: what waits is dropped (its runs are followed again elsewhere or later). */
void unsaved_stop(struct bridge *b);

/* runctx.c: one request to the agent about a run, for a waiting MCP call (status, stop). */
struct run_ctx {
    struct bridge *b;
    struct mcp_call *call;
    struct agent_req *req;
    char run_id[128], task_id[129], agent[65];
    bool rpc_errors; /* the call is no tools/call: a failure is a JSON-RPC error */
};
/* A run_ctx for call c about task id's run, from its run.json (taken: released here): the
 * run id, and its agent (the default agent when it names none) in *a, NULL when that agent is
 * unknown or has no key (then the caller answers c and frees the context). */
struct run_ctx *runctx_for_run(struct bridge *b, struct mcp_call *c, const char *id,
                               json_t *run_take, struct agentdef **a);
/* Sends method <base_url>/v1/runs/<run_id><suffix>; on failure answers the call and frees s. */
void runctx_send(struct run_ctx *s, struct agentdef *a, const char *method, const char *suffix,
                 agent_done_cb *done);

/* toolspec.c: the argument tables' shared entries, checks, schemas and annotations. */
bool toolspec_id_syntax(const char *s, size_t n);
bool toolspec_session_syntax(const char *s, size_t n);
bool toolspec_run_id_syntax(const char *s, size_t n);
#define ID_PATTERN "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
#define ARG_ID(req)                                                                                \
    {                                                                                              \
        .name = "id", .type = TOOLARG_STRING, .required = (req), .nonempty = (req),                \
        .max_len = 128, .pattern = ID_PATTERN, .syntax = toolspec_id_syntax,                       \
        .syntax_hint = "must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}"                               \
    }
/* The Python server's name for a task's id (hermes_check, hermes_cancel). */
#define ARG_JOB_ID(req, desc)                                                                      \
    {                                                                                              \
        .name = "job_id", .type = TOOLARG_STRING, .required = (req), .nonempty = (req),            \
        .max_len = 128, .pattern = ID_PATTERN, .syntax = toolspec_id_syntax,                       \
        .syntax_hint = "must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}", .description = (desc)        \
    }
#define ARG_RUN_ID(req)                                                                            \
    {                                                                                              \
        .name = "run_id", .type = TOOLARG_STRING, .required = (req), .nonempty = true,             \
        .max_len = 127, .pattern = "^[A-Za-z0-9_-]+$", .syntax = toolspec_run_id_syntax,           \
        .syntax_hint = "has characters a run id never has"                                         \
    }
#define ARG_AGENT                                                                                  \
    {                                                                                              \
        .name = "agent", .type = TOOLARG_STRING, .max_len = 64,                                    \
        .description = "An agent name from list_agents (default: the default agent)"               \
    }
#define ARGS_MAX 8 /* the most entries of any tool's table */
/* Checks args against spec; on failure answers invalid_arguments and returns false. */
bool toolspec_check_args(struct mcp_call *c, const struct toolarg *spec, json_t *args,
                         json_t **out);
/* The MCP tool annotations (new reference). */
json_t *toolspec_annotations(bool read_only, bool destructive, bool idempotent, bool open_world);
/* A tool's output on success, described once as a table (the error shape is toolerr's): its
 * outputSchema is made from it, and the tests check answers against that schema. */
enum toolout_type {
    TOOLOUT_STRING = 1,
    TOOLOUT_BOOL,
    TOOLOUT_INT,
    TOOLOUT_OBJECT,
    TOOLOUT_ARRAY,
    TOOLOUT_STRINGS, /* an array of strings */
    TOOLOUT_STRING_OR_NULL
};
struct toolout {
    const char *name;
    enum toolout_type type;
    bool required;
    const char *const *one_of; /* strings: the values it takes (an enum), NULL-terminated */
};
#define TOOLOUT_END                                                                                \
    {                                                                                              \
        .name = NULL                                                                               \
    }
/* {type: object, properties, required} of the table (new reference). */
json_t *toolspec_output_schema(const struct toolout *out);
/* What hermes_task, hermes_result and their aliases answer: the contract fields plus id. */
extern const struct toolout toolspec_result_output[];

/* One bridge tool, declared in its tool_*.c: bridge.c registers each of its table in order
 * (unless bridge_tools leaves it out), with the schemas and annotations made from this. */
struct bridge_tool_spec {
    const char *name, *title, *description;
    const struct toolarg *args;   /* its inputSchema, and what its handler checks */
    const struct toolout *output; /* its outputSchema on success */
    struct {
        bool read_only, destructive, idempotent, open_world;
    } hints;              /* the MCP tool annotations */
    const char *scope;    /* what a caller needs (mcp_tool_def.scope) */
    mcp_handler *handler; /* its arg is the struct bridge */
    const char *alias_of; /* the Python server's name for that tool (tool_alias.c):
                             listed only with MCP_TOOL_ALIASES=1, and bridge_tools
                             keeps or drops it with that tool */
};
/* The registered tool called name, or NULL when bridge_tools left it out. */
const struct bridge_tool_spec *toolspec_registered(const struct bridge *b, const char *name);

/* mcptask.c: hermes_task as an MCP task (the tasks extension). */
void mcptask_register(struct bridge *b);

/* taskload.c: with the task records in a database, a call about a task loads it first. */
struct taskload;
struct taskload *taskload_for_tool(struct bridge *b, const struct bridge_tool_spec *t);
struct taskload *taskload_for_tasks(struct bridge *b, const struct mcp_task_ops *ops);
void taskload_tool(struct mcp_call *c, json_t *args, void *arg); /* arg: taskload_for_tool's */
/* Keeps l (freed with the bridge) and returns it. */
struct taskload *bridge_keep_load(struct bridge *b, struct taskload *l);
extern const struct mcp_task_ops taskload_task_ops; /* arg: taskload_for_tasks's */
/* An MCP task's submission: a run answered with its CreateTaskResult. */
extern const struct job_ops mcptask_submit_ops;
/* The CreateTaskResult for a retry of an existing MCP task (its request.json req): as it is
 * now (new reference). */
json_t *mcptask_again(struct bridge *b, const char *id, json_t *req);

/* taskowner.c: whose a task is, one rule for the hermes_* tools and MCP tasks. A task belongs
 * to the caller that created it (request.json "owner", mcp_call_caller); the owner token and
 * hermes:admin reach every task, and only they reach a task with no recorded owner. */
enum task_reach {
    TASK_ABSENT,   /* no such task (the caller answers its own "not found") */
    TASK_YOURS,    /* the caller's own, or the caller sees every task (mcp_call_sees_all) */
    TASK_NOT_YOURS /* another caller's, nobody's, or of an agent the caller may not use: it
                      must look like TASK_ABSENT */
};
/* How far c's caller reaches task id; with req_out, the task's request.json as read for that
 * (new reference) when TASK_YOURS and readable, else NULL: callers need not read it again. */
enum task_reach taskowner_access(struct bridge *b, const struct mcp_call *c, const char *id,
                                 json_t **req_out);
/* Queues a new task's request.json (tasks_write) and keeps whose it is in memory until that is
 * durable: the jobs of the task may end (a sync job freed, a submit handed to its follow job)
 * before a write queued behind others lands, and the owner must still reach her task then. */
enum tasks_rc taskowner_write_request(struct bridge *b, const char *id, json_t *req,
                                      const char *owner);
struct pending_owner {
    struct bridge *b;
    char *owner;
    char id[129];
};
/* What keeps one owner's names at the agent (session header, session queue, Idempotency-Key)
 * apart from another's: the first 16 hex digits of sha256(owner) and '-', or "" for the owner
 * token and an unauthenticated caller (their names as before owners were recorded). */
#define OWNER_TAG_SIZE 18
void taskowner_tag(const char *owner, char out[OWNER_TAG_SIZE]);
/* Whether c's caller may see task id: taskowner_access is not TASK_NOT_YOURS (true for an id that
 * does not exist). */
bool taskowner_visible(struct bridge *b, const struct mcp_call *c, const char *id);
/* The one answer for a task id or run id the caller may not see, or that does not exist. */
void taskowner_task_not_found(struct mcp_call *c, const char *id);
void taskowner_run_not_found(struct mcp_call *c, const char *run_id);

/* tool_reset.c: stops a hermes_reset in progress without answering (shutdown). */
void tool_reset_abort(struct bridge *b);

/* One per tool (tool_*.c), in bridge.c's table. */
extern const struct bridge_tool_spec tool_task_spec, tool_status_spec, tool_result_spec,
    tool_files_spec, tool_agents_spec, tool_cancel_spec, tool_reset_spec;
/* tool_whoami.c: whoami, the caller's principal (every principal may call it). */
extern const struct bridge_tool_spec tool_whoami_spec;
/* tool_alias.c: the Python server's names (hermes_ask, hermes_check) for hermes_task and
 * hermes_result; listed only with MCP_TOOL_ALIASES=1, callable always. */
extern const struct bridge_tool_spec tool_ask_spec, tool_check_spec;
/* tool_result.c: where task id stands as hermes_result sees it (the caller checks it may see
 * it): ended (*result, when not NULL, gets its stored result.json), still running (no result
 * yet, but a job, a write in flight or its directory), unknown, or its result unreadable
 * (*rc says how). */
enum task_state { TASK_ENDED, TASK_RUNNING, TASK_UNKNOWN, TASK_UNREADABLE };
enum task_state tool_result_task_state(struct bridge *b, const char *id, json_t **result, int *rc);

/* runindex.c: indexes run_id -> task_id (b->runs) for hermes_status and hermes_cancel by run id. A
 * run id already indexed for another task that still exists keeps that task, with a warning:
 * silently taking it over would answer that task's owner not_found by run id. */
void bridge_run_index(struct bridge *b, const char *run_id, const char *task_id);
/* With a database: takes run_id's entry out when it names task_id and no job of that task runs
 * here (the database answers the next lookup); with files, does nothing. */
void bridge_run_forget(struct bridge *b, const char *run_id, const char *task_id);

#endif
