/* mcp_internal.h — the MCP engine's objects, shared by its modules and by nothing above them.
 *
 * The engine is split by concern (session.c, stream.c, call.c, exchange.c, methods.c, http.c,
 * mcp.c); they all work on the same few objects, so those are defined once here. Code above the
 * mcp layer sees only mcp.h and must not include this file.
 *
 * Objects and who owns them:
 * - session: in the session table until it ends (DELETE, expiry, shutdown); refcounted because
 *   exchanges, calls and streams may outlive its end by a moment.
 * - exchange: one POST carrying requests. Lives until every call in it finished and its answer
 *   went out (or the client left).
 * - call: one request being served by a handler. Freed when it finishes, or when it is cancelled
 *   and the handler had a cancel callback (else when the handler finishes anyway).
 * - stream: an SSE response body with its event ids. In session mode its events are kept
 *   (bounded) so a client can resume it with GET + Last-Event-ID after the connection closed. */
#ifndef HM_MCP_INTERNAL_H
#define HM_MCP_INTERNAL_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jrpc.h"
#include "list.h"
#include "listviews.h"
#include "mcp.h"

struct hreq;
struct loop_timer;
struct strmap;

#define MAX_BATCH 20
#define SESSION_IDLE_MS (60u * 60u * 1000u)
#define SWEEP_MS (60u * 1000u)
#define STREAM_KEEP_EVENTS 256
#define SSE_RETRY_MS 1000
#define LATEST_VERSION "2025-11-25"
/* The stateless revision: served per request beside the session-era ones (era.c). */
#define MODERN_VERSION "2026-07-28"
/* How long a list or discover result may be cached by a 2026-era client (ttlMs). */
#define LIST_TTL_MS 300000

struct mcp_session;
struct mcp_exchange;
struct listen;

struct sse_event {
    struct sse_event *next;
    unsigned long seq;
    char *text;
    size_t len;
};

struct mcp_stream {
    struct mcp_server *srv;
    struct mcp_session *sess; /* NULL: not resumable */
    unsigned long no, seq;
    struct hreq *req; /* attached response, or NULL while the client is away */
    struct sse_event *head, *tail;
    size_t nevents;
    bool closed;  /* no more events will come */
    bool dropped; /* a write to req was refused (backlog): what it lost is only in the ring */
    bool no_ids;  /* 2026-07-28: no resumption, so events carry no ids */
    unsigned refs;
    struct mcp_exchange *ex; /* the POST exchange that owns it, while it lives */
};

struct mcp_session {
    char id[MCP_SESSION_ID_MAX]; /* "<replica name>.<64 hex>", or the hex alone */
    char version[16];
    int log_level;
    json_t *client_caps;
    json_t *subs;           /* set of subscribed URIs */
    struct strmap *streams; /* resumable streams by number */
    struct mcp_stream *get_stream;
    uint64_t last_used;
    unsigned refs;
    unsigned active; /* calls in flight */
    bool ended;
};

struct outgoing {
    struct outgoing *next; /* in the call's list */
    struct mcp_call *call;
    char key[32];
    mcp_reply_cb *cb;
    void *arg;
};

struct mcp_call {
    struct mcp_server *srv;
    struct mcp_exchange *ex; /* NULL once detached (cancelled without a cancel callback) */
    struct mcp_session *sess;
    json_t *id;
    char *method;
    json_t *progress_token;
    double last_progress;
    bool sent_progress;
    char key[240];
    mcp_cancel_cb *cancel_cb;
    void *cancel_arg;
    struct outgoing *outgoing;
    struct list ex_link;  /* in the exchange's calls */
    struct list srv_link; /* in the server's list of live calls */
    struct loop_timer *deadline;
    /* 2026-07-28 requests: the client's declared capabilities (kept subset), the logLevel it
     * asked for (-1: none, so no log messages), and what it answered to an earlier
     * input_required result (inputResponses, and the state we sealed, verified). */
    bool modern;
    json_t *caps;
    int log_level;
    json_t *params; /* the request's: a sealed state is bound to their digest */
    json_t *input_responses, *input_state;
    char caller[45]; /* who asked (both eras): see era_caller */
    bool lasting;    /* not counted in srv->ncalls (mcp_call_make_lasting) */
    bool in_flight;  /* in srv->inflight under key: a cancel by id can find it */
    bool counted;    /* in srv->ninflight: neither finished nor cancelled */
    void *ticket;    /* the call gate's, released when the call stops being in flight */
    unsigned holds;  /* >0 while reply callbacks run: freeing waits until they are done */
    bool dead;       /* freed while held */
    /* Tracing: the request span's tracer and context (tracer NULL: none), and its tracestate. */
    struct otel *tracer;
    struct otel_ctx trace;
    char *tracestate;
};

struct mcp_exchange {
    struct mcp_server *srv;
    struct mcp_session *sess;
    struct hreq *req;
    bool batch, accepts_sse, dispatching;
    char version[16];
    json_t *answers;    /* array of responses (single: at most one) */
    unsigned nrequests; /* requests it carried (not notifications or responses) */
    unsigned pending;
    struct list calls; /* struct mcp_call, by ex_link */
    struct mcp_stream *stream;
    char *raw_answer; /* single request: the whole response, already serialised */
    size_t raw_len;
    /* A 2026-07-28 request (one per POST): what its calls inherit (see struct mcp_call), and
     * the method it carried, for the result's decoration (a name from the method table). */
    bool modern;
    json_t *caps;
    int log_level;
    json_t *input_responses, *input_state;
    char caller[45];
    const char *method;
    bool answer_retry;      /* its answer answers an input-required round (era_reply) */
    unsigned retry_after_s; /* its call was unavailable (mcp_call_unavailable): a lone JSON
                               answer goes as HTTP 503 with Retry-After */
};

struct named {
    char *name;
    json_t *listing; /* what the list method returns for it */
    mcp_handler *handler;
    void *arg;
    char *uri_template; /* templates only */
    char *scope;        /* tools only: the scope a caller needs (mcp_tool_def.scope), or NULL */
    /* Tools: input properties mirrored in Mcp-Param-* headers in 2026-07-28 ("x-mcp-header"
     * in the schema): {property: header name}, or NULL for none. */
    json_t *param_headers;
    bool hidden;   /* tools only: left out of tools/list (mcp_set_tool_hidden) */
    bool disabled; /* tools only: as if not registered (mcp_set_tool_disabled) */
};

/* A tool's param_headers found in its input schema (x-mcp-header declarations a client can
 * honour; the others logged, naming tool), or NULL for none. At registration and whenever the
 * schema is replaced. */
json_t *mcp_param_headers(const char *tool, json_t *input_schema);

struct registry {
    struct named *v;
    size_t n;
    /* The list method's array as compact JSON, built on first use and dropped whenever the
     * registry changes: tools/list is the hottest read-only call, and serialising every schema
     * anew each time was most of its cost. */
    char *listing_text;
    size_t listing_len;
    /* What comes before the listing in a list answer, per era ("{" or the 2026-07-28
     * decoration, then "\"tools\":"), made on first use. */
    char *list_head[2];
    struct listviews views; /* tools: the listings of callers who see only some */
};

struct mcp_server {
    struct loop *loop;
    struct mcp_opts o;
    char *name, *title, *version, *instructions, *public_hosts;
    char listen_host[256];
    unsigned port;
    struct registry tools, resources, templates, prompts;
    mcp_handler *complete;
    void *complete_arg;
    struct strmap *sessions;
    struct strmap *inflight;       /* session id|request id → call (session mode only) */
    struct meta_cache *meta_cache; /* recent requests' parsed params._meta (metacache.h) */
    size_t ninflight;              /* calls neither finished nor cancelled */
    struct strmap *outgoing;       /* key → struct outgoing */
    unsigned long next_stream, next_out;
    struct loop_timer *sweep;
    char session_prefix[MCP_REPLICA_NAME_MAX + 2]; /* "<name>." or "" (mcp_set_replica_name) */
    struct list calls; /* every call whose handler has not finished (by srv_link) */
    size_t ncalls;
    uint64_t calls_started;
    mcp_audit_cb *audit; /* may be NULL */
    void *audit_arg;
    mcp_message_cb *on_message; /* may be NULL */
    void *on_message_arg;
    mcp_span_of_cb *span_of; /* may be NULL */
    void *span_of_arg;
    mcp_tool_filter_cb *tool_filter; /* may be NULL: every tool for everyone */
    void *tool_filter_arg;
    mcp_call_gate_cb *call_gate; /* may be NULL: no limits */
    mcp_call_release_cb *call_release;
    void *call_gate_arg;
    mcp_agent_filter_cb *agent_filter; /* may be NULL: every agent for everyone */
    void *agent_filter_arg;
    size_t tools_hidden; /* how many tools are left out of tools/list (hidden or disabled) */
    const struct mcp_task_ops *task_ops; /* may be NULL: no tasks extension */
    struct task_provider {               /* more providers, each owning the ids with its prefix */
        char prefix[16];
        const struct mcp_task_ops *ops;
        void *arg;
    } task_more[MCP_TASK_PROVIDERS_MAX];
    size_t ntask_more;
    struct list listens; /* open subscriptions/listen streams (listen.c) */
    void *task_arg;
    unsigned char state_key[32]; /* seals requestState (reqstate.c); new at each start, or
                                    every replica's (mcp_set_state_key) */
    bool state_key_shared;       /* then expiries are wall-clock time, which replicas share */
    char *modern_list_head;      /* "{"resultType":...,"_meta":{...}," for list answers (era.c) */
    json_t *server_info;         /* {name, version}, built on first use (era.c) */
    char *decoration[3];         /* era_reply's decoration texts, built on first use (era.c) */
    mcp_caller_cb *caller_cb;    /* who sent a request (mcp_set_caller); may be NULL */
    void *caller_arg;
    mcp_whoami_cb *whoami_cb; /* what a request's principal is (mcp_set_whoami); may be NULL */
    void *whoami_arg;
};

/* What a request needs from its HTTP context. */
struct rpc_ctx {
    struct mcp_server *srv;
    struct mcp_exchange *ex;
    struct mcp_session *sess;
    struct hreq *req;
};

/* Small helpers (mcp.c). */
bool mcp_version_supported(const char *v);
/* What the engine keeps of a client's capabilities (either era): presence flags for sampling,
 * elicitation and roots, and "elicitation.form" when it takes form-mode elicitation. A client
 * cannot park a large object in a session or a call this way (new reference). */
json_t *mcp_client_caps_kept(json_t *caps);
int mcp_level_index(const char *level);
void mcp_reply_json(struct hreq *r, unsigned status, json_t *msg_take);
void mcp_reply_rpc_error(struct hreq *r, unsigned status, json_t *id, int code, const char *msg);
/* Tells the audit hook what r was about; NULL fields are left as they were. */
void mcp_audit_note(struct mcp_server *srv, struct hreq *r, const char *rpc_method,
                    const char *tool, const char *error);

#endif
