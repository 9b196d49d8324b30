/* mcp.h — the MCP protocol engine over Streamable HTTP (POST/GET/DELETE on one endpoint).
 *
 * The engine knows nothing of Hermes: tools, resources, resource templates, prompts and
 * completions are registered by providers. Each is served by a handler that gets a struct
 * mcp_call and finishes it now or later with exactly one of mcp_call_result_take(),
 * mcp_call_error() or mcp_call_tool_result_take() (tool errors: mcp_call_result_take() of a
 * result with isError, as the bridge's reply.c builds them). Until then it may
 * send progress, log messages and requests to the client. If the call is cancelled (the client's
 * notifications/cancelled in session mode, its hang-up, session end, shutdown) the handler's
 * cancel callback runs and the call is gone afterwards; a handler without a cancel callback
 * simply finishes as usual and its answer is dropped. Everything runs on the loop thread. */
#ifndef HM_MCP_H
#define HM_MCP_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jrpc.h"   /* enum jrpc_err: the codes of mcp_call_error */
#include "otel.h"   /* enum otel_kind: mcp_call_span */
#include "scopes.h" /* the scope names of mcp_tool_def.scope */

struct hreq;
struct loop;
struct mcp_server;
struct mcp_call;

/* args is borrowed and must not be changed (a 2026-07-28 input-required round's state is bound
 * to the request as it came); nor may anything reached from the request's params: its _meta
 * is a parse shared with later requests that send the same bytes (metacache.c). */
typedef void mcp_handler(struct mcp_call *call, json_t *args, void *arg);
typedef void mcp_cancel_cb(struct mcp_call *call, void *arg);
/* The client's answer to mcp_call_request: result, or error (a JSON-RPC error object), or
 * both NULL if the call ends before an answer came (only without a cancel callback: see
 * mcp_call_request). */
typedef void mcp_reply_cb(struct mcp_call *call, json_t *result, json_t *error, void *arg);

struct mcp_opts {
    const char *name;         /* serverInfo.name */
    const char *title;        /* serverInfo.title, may be NULL */
    const char *version;      /* serverInfo.version */
    const char *instructions; /* may be NULL */
    bool sessions;            /* issue and require Mcp-Session-Id */
    unsigned max_sessions;    /* 0: default */
    const char *public_hosts; /* comma-separated extra host names allowed in Host/Origin */
    unsigned call_timeout_ms; /* a call still running after this is cancelled and answered
                                 with -32001; 0: no limit */
    bool cache_public;        /* 2026-07-28 lists are the same for every caller: a shared
                                 cache may keep them (cacheScope "public", else "private") */
    unsigned state_ttl_ms;    /* how long a 2026-07-28 requestState we seal is accepted;
                                 0: 10 minutes */
};

struct mcp_server *mcp_new(struct loop *l, const struct mcp_opts *o);
/* Ends every call and stream, then frees. NULL-safe. */
void mcp_free(struct mcp_server *s);
/* The listener's port: Host and Origin must name it (loopback names) to be allowed. */
void mcp_set_listen(struct mcp_server *s, const char *host, unsigned port);
/* MCP_PUBLIC_HOSTS again (a reload): the Host/Origin names allowed besides our own. */
void mcp_set_public_hosts(struct mcp_server *s, const char *hosts);

/* Registration. json_t fields are new references taken by the engine (pass json_pack results
 * directly). Strings are copied. */
struct mcp_tool_def {
    const char *name, *title, *description;
    json_t *input_schema;  /* required; an object schema */
    json_t *output_schema; /* may be NULL */
    json_t *annotations;   /* may be NULL */
    mcp_handler *handler;  /* gets the arguments object (never NULL) */
    void *arg;
    const char *scope; /* what a caller needs to see and call it (mcp_set_tool_filter);
                          may be NULL */
};
struct mcp_resource_def {
    const char *uri, *name, *title, *description, *mime_type;
    mcp_handler *handler; /* gets the request params; answers {contents:[...]} */
    void *arg;
};
struct mcp_template_def {
    const char *uri_template, *name, *title, *description, *mime_type;
    mcp_handler *handler; /* gets params plus "vars": {name: value} from the template */
    void *arg;
};
struct mcp_prompt_def {
    const char *name, *title, *description;
    json_t *arguments;    /* array of {name, description, required}, may be NULL */
    mcp_handler *handler; /* gets the arguments object (never NULL) */
    void *arg;
};
void mcp_add_tool(struct mcp_server *s, const struct mcp_tool_def *d);
void mcp_add_resource(struct mcp_server *s, const struct mcp_resource_def *d);
void mcp_add_template(struct mcp_server *s, const struct mcp_template_def *d);
void mcp_add_prompt(struct mcp_server *s, const struct mcp_prompt_def *d);
/* Handler for completion/complete; gets the request params. */
void mcp_set_completion(struct mcp_server *s, mcp_handler *handler, void *arg);
size_t mcp_tool_count(const struct mcp_server *s);      /* listed ones (mcp_set_tool_hidden: not) */
size_t mcp_session_count(const struct mcp_server *s);   /* live sessions (MCP_SESSIONS=1) */
size_t mcp_calls_in_flight(const struct mcp_server *s); /* requests being handled */
/* Behind a proxy that routes a session to the replica that made it: its Mcp-Session-Id starts
 * with name and a dot ("a.<64 hex>"), which the proxy maps to that replica. name is
 * [a-z0-9-], 1 to MCP_REPLICA_NAME_MAX characters; NULL or "": ids are the 64 hex digits alone. */
#define MCP_REPLICA_NAME_MAX 12
#define MCP_SESSION_ID_MAX (MCP_REPLICA_NAME_MAX + 1 + 64 + 1)
void mcp_set_replica_name(struct mcp_server *s, const char *name);

/* HTTP entry points for the endpoint path (the caller routes by path). */
void mcp_http_headers(struct mcp_server *s, struct hreq *r);
void mcp_http_request(struct mcp_server *s, struct hreq *r);
/* The answers httpd gives on its own, as JSON-RPC errors (-32600, id null): an
 * httpd_error_body_cb for httpd_opts.error_body. */
const char *mcp_http_error_body(char *out, size_t outsz, const char *message);

/* What a request to the endpoint was about, for the caller's audit log and metrics: its
 * JSON-RPC method ("batch" for a batch, "unknown" for a method not ours), the tool it called,
 * and the error its answer carried (a JSON-RPC code, or a tool's error code). The engine calls
 * the hook as it learns each; a NULL field is left as it was. Strings are borrowed. */
typedef void mcp_audit_cb(struct hreq *r, const char *rpc_method, const char *tool,
                          const char *error, void *arg);
void mcp_set_audit(struct mcp_server *s, mcp_audit_cb *cb, void *arg);

/* The request's JSON-RPC message (a batch's first), parsed, before anything is done with it:
 * for tracing (its id, and a trace context in params._meta). msg is borrowed. */
typedef void mcp_message_cb(struct hreq *r, json_t *msg, void *arg);
void mcp_set_message_hook(struct mcp_server *s, mcp_message_cb *cb, void *arg);
/* The request's span (tracing; NULL: none), asked when a call starts: the call keeps its
 * context, so a provider's child spans (mcp_call_span) have it as their parent. */
typedef struct otel_span *mcp_span_of_cb(struct hreq *r, void *arg);
void mcp_set_span_of(struct mcp_server *s, mcp_span_of_cb *cb, void *arg);

/* Who may use which tool, per request (least privilege): the layer that authenticated the
 * request answers. Consulted for each tool in tools/list (hidden when false), in tools/call
 * before the handler runs, and by mcp_call_allowed (tool NULL). `refusing` is true in the
 * tools/call of a lone request: a false answer is then sent as HTTP 403 with a JSON-RPC error
 * (-32003), and the callback may add response headers to r for it (WWW-Authenticate); in a batch
 * the call just gets the JSON-RPC error. scope is the tool's mcp_tool_def.scope (may be NULL). */
typedef bool mcp_tool_filter_cb(struct hreq *r, const char *tool, const char *scope, bool refusing,
                                void *arg);
void mcp_set_tool_filter(struct mcp_server *s, mcp_tool_filter_cb *cb, void *arg);
/* Asked before a tools/call the filter allowed starts: 0 lets it run, else the seconds the
 * caller should wait, and the call is answered with the tool error busy and that retry_after
 * (never queued). A gate that lets a call run may set *ticket: release(ticket, arg) is then
 * called once, when the call stops being in flight (answered, cancelled, timed out, or handed
 * to a task). gate may be NULL. */
typedef unsigned mcp_call_gate_cb(struct hreq *r, const char *tool, void **ticket, void *arg);
typedef void mcp_call_release_cb(void *ticket, void *arg);
void mcp_set_call_gate(struct mcp_server *s, mcp_call_gate_cb *gate, mcp_call_release_cb *release,
                       void *arg);
/* Leaves a registered tool out of tools/list (or puts it back) for every caller; tools/call still
 * reaches its handler, which says why (the gateway's withheld definitions). */
void mcp_set_tool_hidden(struct mcp_server *s, const char *name, bool hidden);
/* A registered tool taken away (or given back) for every caller: left out of tools/list and
 * its calls answered as for a tool that does not exist (a gateway file reload that leaves one
 * of the bridge's tools out); calls under way are not touched. Given back, it is listed only if
 * mcp_set_tool_hidden does not hide it: the two are separate. */
void mcp_set_tool_disabled(struct mcp_server *s, const char *name, bool disabled);
/* True when no tool name is registered or it is disabled (a handler that runs another tool
 * checks it is still there). */
bool mcp_tool_disabled(const struct mcp_server *s, const char *name);
/* Replaces a registered tool's inputSchema in tools/list (schema taken; the gateway's policies
 * after a reload of its file). Its handler checks the arguments, as before. */
void mcp_set_tool_input_schema(struct mcp_server *s, const char *name, json_t *schema);
/* Asks the tool filter whether the caller of c holds scope (a tool's own check of a scope
 * other than its own). True when no filter is set. */
bool mcp_call_allowed(const struct mcp_call *c, const char *scope);
/* Which agents the principal that sent r may delegate to (least privilege): the layer that
 * authenticated r answers whether it may use the agent called agent, or with agent NULL
 * whether it may use every agent (it has no list of agents, or is the owner). */
typedef bool mcp_agent_filter_cb(struct hreq *r, const char *agent, void *arg);
void mcp_set_agent_filter(struct mcp_server *s, mcp_agent_filter_cb *cb, void *arg);
/* Asks the agent filter about the caller of c (agent NULL: every agent). True when no filter
 * is set; false for a call detached from its request (nobody can be asked). */
bool mcp_call_may_use_agent(const struct mcp_call *c, const char *agent);
/* Whether c's caller reaches every caller's tasks (the bridge's and the gateway's alike): it
 * holds hermes:admin, as the owner token does (and every caller of a server without
 * authentication). Everyone else reaches only its own (mcp_call_caller). */
#define MCP_SCOPE_SEES_ALL SCOPE_ADMIN
bool mcp_call_sees_all(const struct mcp_call *c);

/* Calls whose handler has not finished yet, and how many were ever started (for the drain). */
size_t mcp_calls_active(const struct mcp_server *s);
uint64_t mcp_calls_started(const struct mcp_server *s);
/* Shutdown: every call answering on an SSE stream is cancelled and gets a JSON-RPC error
 * (code, message) on its stream, which then ends. Calls waiting for a plain JSON answer are
 * left to httpd_shutdown (503). */
void mcp_abort_streams(struct mcp_server *s, int code, const char *message);

/* Ends every subscriptions/listen stream gracefully (a complete result on each): the drain's
 * start, as these calls would otherwise never end by themselves. */
void mcp_end_subscriptions(struct mcp_server *s);

/* Tell every session subscribed to uri that it changed. */
void mcp_resource_updated(struct mcp_server *s, const char *uri);

/* Finishing a call (exactly one of these). */
void mcp_call_result_take(struct mcp_call *c, json_t *result);
void mcp_call_error(struct mcp_call *c, int code, const char *message); /* enum jrpc_err */
/* The answer of a tasks/ method for a task that does not exist or is not the caller's: the same
 * words either way, so a task of another's cannot be told from none (-32602). */
void mcp_call_task_not_found(struct mcp_call *c);
/* -32003 for a credential whose scopes no longer cover the task it asks about. */
void mcp_call_task_forbidden(struct mcp_call *c);
/* Tool results: content is the structured value as a JSON text block plus structuredContent. */
void mcp_call_tool_result_take(struct mcp_call *c, json_t *structured);
/* The result object mcp_call_tool_result_take sends, to send it later with
 * mcp_call_result_take. */
json_t *mcp_tool_result(json_t *structured_take);

/* While running. Progress returns false when not sent (no token, not increasing, no stream). */
bool mcp_call_progress(struct mcp_call *c, double progress, double total, const char *message);
/* level is one of the RFC 5424 names MCP uses; dropped below the session's logging level. */
void mcp_call_log(struct mcp_call *c, const char *level, const char *logger, json_t *data_take);
/* Sends a request to the client on this call's stream. Returns false (cb never called) when
 * the client cannot take it: no SSE stream, or the capability was not declared. When the call
 * ends before the answer, cb gets (NULL, NULL) only if the handler set no cancel callback;
 * otherwise the request is dropped silently and its arg is the handler's to free (it ended
 * the call, or its cancel callback ran). */
bool mcp_call_request(struct mcp_call *c, const char *method, json_t *params_take, mcp_reply_cb *cb,
                      void *arg);
/* Ends the HTTP response that carries this call's SSE stream now, without ending the call; the
 * client comes back with GET + Last-Event-ID for the rest. Session mode only. */
bool mcp_call_close_stream(struct mcp_call *c);
void mcp_call_on_cancel(struct mcp_call *c, mcp_cancel_cb *cb, void *arg);
const char *mcp_call_protocol_version(const struct mcp_call *c);
const char *mcp_call_method(const struct mcp_call *c);
/* The request's _meta.progressToken (borrowed), or NULL. */
json_t *mcp_call_progress_token(const struct mcp_call *c);

/* MCP 2026-07-28 (stateless; see era.c). A call of that era cannot send requests to the
 * client (mcp_call_request returns false); it asks with an input_required result instead and
 * the client comes back with a new request carrying the answers. */
bool mcp_call_is_modern(const struct mcp_call *c);
/* Whether the client declared a capability ("elicitation", "sampling", "roots", or
 * "elicitation.form": elicitation that takes form mode, which {} means): the request's _meta in
 * 2026-07-28, the session's initialize before. */
bool mcp_call_client_supports(const struct mcp_call *c, const char *capability);
/* Whether a 2026-07-28 request declared an extension (e.g. "io.modelcontextprotocol/tasks"). */
bool mcp_call_client_extension(const struct mcp_call *c, const char *extension);
/* Ends the call with an input_required result: requests_take maps keys to
 * {method, params} (elicitation/create, sampling/createMessage, roots/list); state_take (may
 * be NULL) comes back sealed with the answers, see mcp_call_input_state. 2026-07-28 only. */
void mcp_call_input_required(struct mcp_call *c, json_t *requests_take, json_t *state_take);
/* The client's answers to an earlier input_required result (params.inputResponses, borrowed),
 * or NULL on a first round. */
json_t *mcp_call_input_responses(const struct mcp_call *c);
/* The state the handler gave mcp_call_input_required in an earlier round, checked to be
 * unaltered, unexpired and for this caller and request (borrowed), or NULL. */
json_t *mcp_call_input_state(const struct mcp_call *c);
/* How long a state sealed now is accepted (mcp_opts.state_ttl_ms or its default), in ms: what
 * a handler keeps for a later round need not outlive it. */
unsigned mcp_state_ttl_ms(const struct mcp_server *s);
/* Replaces the key made at start with one every replica shares (read from the store before
 * serving), so that a state sealed by one replica opens on another; from then on the expiry
 * sealed in a state is wall-clock time (replicas share no monotonic clock). */
void mcp_set_state_key(struct mcp_server *s, const unsigned char key[32]);
/* Who made the call, what sealed state and tasks are bound to: "p:<name>" for the principal
 * mcp_set_caller names, else a digest of its bearer token (never the credential), or
 * "anonymous". */
const char *mcp_call_caller(const struct mcp_call *c);
/* A span starting now as a child of the call's request span (an upstream call, an agent run,
 * an approval waited for); the caller ends it. NULL without tracing. */
struct otel_span *mcp_call_span(const struct mcp_call *c, const char *name, enum otel_kind kind);
/* A caller (as mcp_call_caller gives it, or as recorded from it; NULL for none) as people are
 * shown it (hermes-mcp tasks list, the approvals queue): a principal's name, "#" and the first
 * 12 characters of a digest (never taken for a name), "anonymous", or "-" for none or for
 * anything else. One word of visible ASCII, at most buflen - 1 bytes. */
void mcp_caller_label(const char *caller, char *buf, size_t buflen);
/* The principal that sent r, as the layer that authenticated it knows it (a name stable across
 * that principal's tokens), or NULL. The string need only live as long as the request. */
typedef const char *mcp_caller_cb(struct hreq *r, void *arg);
void mcp_set_caller(struct mcp_server *s, mcp_caller_cb *cb, void *arg);
/* What the principal that sent r is, as the layer that authenticated it describes it (a new
 * object: name, kind, scopes, agents, expiry; never a credential), or NULL when there is none
 * (authentication off). mcp_call_whoami asks it for a call: NULL also for a call detached from
 * its request, or when no callback is set. */
typedef json_t *mcp_whoami_cb(struct hreq *r, void *arg);
void mcp_set_whoami(struct mcp_server *s, mcp_whoami_cb *cb, void *arg);
json_t *mcp_call_whoami(const struct mcp_call *c);
/* The scope of a tool every authenticated principal may call (whoami): the tool filter grants
 * it to anyone it knows. */
#define MCP_SCOPE_ANYONE "anyone"

/* The tasks extension (io.modelcontextprotocol/tasks, 2026-07-28). A provider that runs tool
 * calls as tasks answers such a call with a CreateTaskResult ({resultType: "task", taskId,
 * status, ...}) when the client declared the extension (mcp_call_client_extension), and
 * serves the three task methods here. The engine advertises the extension in server/discover,
 * refuses the methods to a request that did not declare it (-32021), checks the routing
 * header (Mcp-Name = taskId) and hands over a task id that is a string; the provider answers
 * tasks/get with the task (status, and inputRequests, result or error by status), update and
 * cancel with an empty result, an unknown task (or another caller's, mcp_call_caller, unless
 * mcp_call_sees_all) with -32602. Each callback finishes its call like a handler. */
struct mcp_task_ops {
    void (*get)(struct mcp_call *c, const char *task_id, void *arg);
    void (*update)(struct mcp_call *c, const char *task_id, json_t *input_responses, void *arg);
    void (*cancel)(struct mcp_call *c, const char *task_id, void *arg);
};
void mcp_set_task_ops(struct mcp_server *s, const struct mcp_task_ops *ops, void *arg);
/* Another provider, for the task ids that start with prefix (at most 15 bytes; the provider
 * set with mcp_set_task_ops keeps every other id). At most MCP_TASK_PROVIDERS_MAX. */
#define MCP_TASK_PROVIDERS_MAX 4
void mcp_add_task_ops(struct mcp_server *s, const char *prefix, const struct mcp_task_ops *ops,
                      void *arg);
/* Whether any provider serves the tasks extension. */
bool mcp_has_tasks(const struct mcp_server *s);
/* Task status notifications (notifications/tasks on subscriptions/listen streams that name
 * the task): whether any open stream watches task_id, and sending the task (the object
 * tasks/get would answer, borrowed) to the streams of its owner (caller, as
 * mcp_call_caller gave it). */
bool mcp_task_watched(const struct mcp_server *s, const char *task_id);
void mcp_task_notify(struct mcp_server *s, const char *caller, json_t *task);
/* Every task id an open stream watches, as an object id -> true (new reference). */
json_t *mcp_task_watched_ids(const struct mcp_server *s);
#define MCP_TASKS_EXTENSION "io.modelcontextprotocol/tasks"

/* Finishes the call as "unavailable for now": what it needs (the task store's database) cannot
 * be reached, nothing was done, and the same request may succeed after retry_after_s seconds
 * (0 is taken as 1). The answer is the JSON-RPC error -32004 with data {retryAfter}; a lone
 * request answered with plain JSON gets it as HTTP 503 with Retry-After, which proxies and
 * clients act on; on an SSE stream already under way, or in a batch, it is that error alone. */
void mcp_call_unavailable(struct mcp_call *c, unsigned retry_after_s, const char *message);

/* Finishes with a JSON-RPC error that carries data (data_take may be NULL). */
void mcp_call_error_data(struct mcp_call *c, int code, const char *message, json_t *data_take);
/* Finishes with the 2026-07-28 missing-capability error (-32021, HTTP 400):
 * required_take is the ClientCapabilities object the request needed, what names it. */
void mcp_call_require_capability(struct mcp_call *c, json_t *required_take, const char *what);

#endif
