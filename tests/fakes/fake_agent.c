/* fake_agent.c — a fake Hermes Agent HTTP API server, for tests and as the bundled demo agent.
 *
 * It behaves like the upstream API server described in docs (shared) hermes-agent-api.md,
 * following the current sources [A]/[R]/[O]/[I]: the same routes, status codes, error envelopes,
 * headers and SSE framing. What the "agent" does is steered by directives in the task text
 * (fake_plan.h; tests/fakes/README.md).
 *
 *   fake-agent --key-file F [--port N] [--profile NAME=KEYFILE]... [--record FILE]
 *              [--max-concurrent N] [--retention-ms MS] [--state FILE] [--delay-scale X]
 *              [--idempotency-retention-ms MS] [--stream-ttl-ms MS] [--keepalive-ms MS]
 *
 * Routes (each also under /p/<profile>/, checked against that profile's key):
 *   GET  /health, /v1/health         no auth
 *   GET  /v1/models
 *   POST /v1/chat/completions        JSON or SSE ("stream": true)
 *   POST /v1/runs                    202; Idempotency-Key replay/conflict
 *   GET  /v1/runs/{id}               pollable status
 *   GET  /v1/runs/{id}/events        SSE, single consumer
 *   POST /v1/runs/{id}/stop
 *   POST /v1/runs/{id}/approval      {choice: once|session|always|deny} ([approval] plans)
 *
 * Checks run in upstream's middleware order: unknown /p/<profile>/ (404) → Origin (403) →
 * OPTIONS (403) → Content-Length over 10,000,000 (413) → no such route (404) or method (405) →
 * the handler (auth 401 → cap 429 → body).
 *
 * Threads: libmicrohttpd runs one thread per connection, so a handler or an SSE reader may block
 * (on the condition variable, never in sleep()). Every /v1/runs run has a worker thread; a sweeper
 * thread expires old runs once a second. One mutex (g.mu) guards all shared state, one condition
 * variable (g.cv, monotonic clock) is broadcast on every change. SIGTERM/SIGINT stop the daemon,
 * join every thread, free everything and exit 0. */
#include "fake_plan.h"
#include "fake_sb.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_BODY 10000000L     /* MAX_REQUEST_BYTES [A] */
#define MAX_SESSION_HEADER 256 /* _MAX_SESSION_HEADER_LEN [A] */
#define CHAT_IDEM_TTL_S 300.0  /* _IdempotencyCache ttl [A] */
#define CHAT_IDEM_MAX 1000     /* _IdempotencyCache max_items [A] */
#define EVENTS_WAIT_MS 1000    /* "waits up to 1 s for the run to appear" [R] */
#define POLL_SLICE_MS 50       /* how often a blocked SSE writer looks for a hang-up */
#define MODEL_NAME "hermes-agent"
#define VERSION "fake-1"

/* ---------------------------------------------------------------- small helpers */

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        abort();
    return p;
}

static char *xstrdup(const char *s)
{
    char *p = strdup(s ? s : "");
    if (p == NULL)
        abort();
    return p;
}

static double now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    return floor(t * 1e6 + 0.5) / 1e6;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void hex_random(char *out, size_t nhex)
{
    unsigned char raw[64];
    size_t n = (nhex + 1) / 2;
    if (n > sizeof(raw) || RAND_bytes(raw, (int)n) != 1)
        abort();
    for (size_t i = 0; i < nhex; i++)
        out[i] = "0123456789abcdef"[(raw[i / 2] >> (i % 2 ? 0 : 4)) & 15];
    out[nhex] = '\0';
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
        abort();
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* JSON as upstream writes it (Python json.dumps: ", " and ": ", ASCII only). */
static char *jdump(const json_t *j)
{
    char *s =
        j ? json_dumps(j, JSON_ENSURE_ASCII | JSON_REAL_PRECISION(16) | JSON_ENCODE_ANY) : NULL;
    if (s == NULL) {
        fprintf(stderr, "fake-agent: bug: a JSON value could not be built or encoded\n");
        s = xstrdup("null");
    }
    return s;
}

static bool is_terminal(const char *status)
{
    return status && (!strcmp(status, "completed") || !strcmp(status, "failed") ||
                      !strcmp(status, "cancelled") || !strcmp(status, "interrupted"));
}

/* Python truthiness of a JSON value. */
static bool truthy(const json_t *v)
{
    if (v == NULL)
        return false;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return json_object_size(v) > 0;
    case JSON_ARRAY:
        return json_array_size(v) > 0;
    case JSON_STRING:
        return json_string_length(v) > 0;
    case JSON_INTEGER:
        return json_integer_value(v) != 0;
    case JSON_REAL:
        return json_real_value(v) != 0;
    case JSON_TRUE:
        return true;
    default:
        return false;
    }
}

/* ---------------------------------------------------------------- global state */

struct profile {
    char *name; /* NULL for the default profile */
    char *key;
    char scope[65]; /* sha256(name or "default", NUL, key): upstream's idempotency scope */
};

struct frame {
    struct frame *next;
    char *data;
};

struct run {
    struct run *next;
    char id[40];
    size_t profile;
    json_t *status; /* the public hermes.run object */
    bool idempotent;
    bool live;      /* its worker has not finished */
    bool stop;      /* POST /stop asked it to stop */
    bool awaiting;  /* waiting_for_approval: POST /approval may answer */
    char choice[8]; /* the answer POST /approval gave, "" until then */
    bool has_thread, thread_done;
    bool forgotten; /* [forget]: its end was shown once; unknown from then on */
    pthread_t thread;
    int refs; /* handlers holding a pointer across a wait */
    struct plan plan;
    char *input, *instructions;
    /* the SSE transport: a queue for one consumer */
    bool transport, subscribed, q_closed;
    double transport_created;
    struct frame *q_head, *q_tail;
};

struct idem { /* a /v1/runs Idempotency-Key reservation (the durable store) */
    struct idem *next;
    char scope[65];
    char *key;
    char fp[65];
    char run_id[40];
    json_t *status; /* the run's status as last persisted */
    char owner[33];
    double created_at, updated_at;
};

struct outcome { /* what one piece of agent work produced */
    char *text;
    bool completed, partial, failed;
    char *error;
};

struct chat_idem { /* the chat completions Idempotency-Key cache */
    struct chat_idem *next;
    char *key; /* scope NUL route NUL key, as one string with the NULs replaced */
    char fp[65];
    double ts;
    struct outcome oc;
};

static struct {
    /* options: read-only once the daemon runs */
    unsigned port;
    struct profile *profiles; /* [0] is the default profile */
    size_t nprofiles;
    char *record_path, *state_path;
    long max_concurrent;
    long retention_ms, idem_retention_ms, stream_ttl_ms, keepalive_ms;
    double delay_scale;
    char instance[33];
    /* shared state, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    FILE *record;
    struct run *runs;
    struct idem *idems;
    struct chat_idem *chat_idems;
    int inflight_chat;
} g;

static void lock(void)
{
    pthread_mutex_lock(&g.mu);
}

static void unlock(void)
{
    pthread_mutex_unlock(&g.mu);
}

static void wake(void)
{
    pthread_cond_broadcast(&g.cv);
}

/* Waits (g.mu held) on g.cv until the monotonic deadline, at most until `until` ms. */
static void timed_wait(long long until)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    long long d = until - now;
    if (d <= 0)
        return;
    ts.tv_sec += d / 1000;
    ts.tv_nsec += (d % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&g.cv, &g.mu, &ts);
}

/* Waits (g.mu held) until the deadline; true when cut short by *flag or shutdown. */
static bool wait_until(long long deadline, const bool *flag)
{
    for (;;) {
        if (g.stopping || (flag && *flag))
            return true;
        if (now_ms() >= deadline)
            return false;
        timed_wait(deadline);
    }
}

/* ---------------------------------------------------------------- the record file */

static void record_line(json_t *line /* taken */)
{
    if (g.record == NULL) {
        json_decref(line);
        return;
    }
    char *s = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(16));
    json_decref(line);
    if (s == NULL)
        return;
    lock();
    fputs(s, g.record);
    fputc('\n', g.record);
    fflush(g.record);
    unlock();
    free(s);
}

static void record_interrupted(const char *path, const char *session_id, const char *what)
{
    record_line(json_pack("{s:f, s:s, s:s, s:s?, s:s}", "ts", now_wall(), "event", "interrupted",
                          "path", path, "session_id", session_id, "reason", what));
}

/* ---------------------------------------------------------------- outcomes */

static void outcome_from_plan(const struct plan *p, struct outcome *oc)
{
    char *answer = plan_answer(p);
    memset(oc, 0, sizeof(*oc));
    oc->completed = true;
    if (p->partial) {
        oc->text = plan_partial_text(answer);
        oc->partial = true;
        oc->completed = false;
        oc->error = xstrdup("Output truncated: the agent stopped before finishing "
                            "(simulated by [partial])");
    }
    if (p->fail) {
        oc->failed = true;
        oc->completed = false;
        free(oc->error);
        oc->error = xstrdup(p->fail_msg);
        if (oc->text == NULL)
            oc->text = xstrdup("");
    }
    if (oc->text == NULL) {
        oc->text = answer;
        answer = NULL;
    }
    free(answer);
}

static void outcome_copy(struct outcome *dst, const struct outcome *src)
{
    *dst = *src;
    dst->text = xstrdup(src->text);
    dst->error = src->error ? xstrdup(src->error) : NULL;
}

static void outcome_cleanup(struct outcome *oc)
{
    free(oc->text);
    free(oc->error);
    memset(oc, 0, sizeof(*oc));
}

/* _finish_reason [O]: "length" for truncation, "error" for failure, else "stop". */
static const char *finish_reason(const struct outcome *oc)
{
    if (oc->partial && oc->error && strcasestr(oc->error, "truncat"))
        return "length";
    if (oc->failed || (!oc->completed && oc->error))
        return "error";
    return "stop";
}

static json_t *hermes_extras(const struct outcome *oc, const char *reason)
{
    json_t *h = json_pack("{s:b, s:b, s:b}", "completed", oc->completed, "partial", oc->partial,
                          "failed", oc->failed);
    json_object_set_new(h, "error", oc->error ? json_string(oc->error) : json_null());
    json_object_set_new(
        h, "error_code",
        json_string(!strcmp(reason, "length") ? "output_truncated" : "agent_error"));
    return h;
}

/* ---------------------------------------------------------------- HTTP replies */

struct hdr {
    const char *name;
    const char *value;
};

static const struct hdr security_headers[] = {
    {"Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"},
    {"Permissions-Policy", "camera=(), microphone=(), geolocation=()"},
    {"Strict-Transport-Security", "max-age=31536000; includeSubDomains"},
    {"X-Content-Type-Options", "nosniff"},
    {"X-Frame-Options", "DENY"},
    {"X-XSS-Protection", "0"},
    {"Referrer-Policy", "no-referrer"},
    {NULL, NULL},
};

static void add_headers(struct MHD_Response *resp, const struct hdr *h)
{
    for (; h && h->name; h++)
        if (h->value)
            MHD_add_response_header(resp, h->name, h->value);
}

/* Queues a reply; body (may be NULL) is taken. `security`: a handler's reply, which upstream's
 * security-headers middleware decorates (middleware rejections and route misses are not). */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *ctype,
                             char *body, const struct hdr *h, bool security)
{
    struct MHD_Response *resp =
        body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        free(body);
        return MHD_NO;
    }
    if (ctype)
        MHD_add_response_header(resp, "Content-Type", ctype);
    add_headers(resp, h);
    if (security)
        add_headers(resp, security_headers);
    enum MHD_Result rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *body,
                                  const struct hdr *h)
{
    char *s = jdump(body);
    json_decref(body);
    return reply(c, status, "application/json; charset=utf-8", s, h, true);
}

/* _openai_error / _error_response [A]: {"error": {message, type, param, code}}. */
static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *msg,
                                   const char *type, const char *code, const char *param,
                                   const struct hdr *h)
{
    json_t *inner = json_object();
    json_object_set_new(inner, "message", json_string(msg));
    json_object_set_new(inner, "type", json_string(type ? type : "invalid_request_error"));
    json_object_set_new(inner, "param", param ? json_string(param) : json_null());
    json_object_set_new(inner, "code", code ? json_string(code) : json_null());
    json_t *e = json_object();
    json_object_set_new(e, "error", inner);
    return reply_json(c, status, e, h);
}

/* _invalid_request [A]: the bare {message, type} envelope of the OpenAI-compatible validators. */
static enum MHD_Result reply_invalid(struct MHD_Connection *c, const char *msg)
{
    return reply_json(
        c, 400,
        json_pack("{s:{s:s, s:s}}", "error", "message", msg, "type", "invalid_request_error"),
        NULL);
}

static enum MHD_Result reply_auth_failed(struct MHD_Connection *c)
{
    return reply_json(c, 401,
                      json_pack("{s:{s:s, s:s, s:s}}", "error", "message",
                                "Invalid gateway API key (API_SERVER_KEY)", "type",
                                "gateway_auth_error", "code", "gateway_auth_failed"),
                      NULL);
}

static enum MHD_Result reply_too_large(struct MHD_Connection *c)
{
    json_t *e = json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message", "Request body too large.",
                          "type", "invalid_request_error", "param", "code", "body_too_large");
    char *s = jdump(e);
    json_decref(e);
    return reply(c, 413, "application/json; charset=utf-8", s, NULL, false);
}

static enum MHD_Result reply_cap(struct MHD_Connection *c)
{
    char msg[96];
    static const struct hdr h[] = {{"Retry-After", "1"}, {NULL, NULL}};
    snprintf(msg, sizeof(msg), "Too many concurrent runs (max %ld)", g.max_concurrent);
    return reply_error(c, 429, msg, "rate_limit_error", "rate_limit_exceeded", NULL, h);
}

static enum MHD_Result reply_run_not_found(struct MHD_Connection *c, const char *id)
{
    struct sb m = {0};
    sb_adds(&m, "Run not found: ");
    sb_adds(&m, id);
    enum MHD_Result rc = reply_error(c, 404, m.p, NULL, "run_not_found", NULL, NULL);
    sb_free(&m);
    return rc;
}

/* ---------------------------------------------------------------- requests and routing */

enum route {
    R_NONE,
    R_HEALTH,
    R_MODELS,
    R_CHAT,
    R_RUNS,
    R_RUN,
    R_RUN_EVENTS,
    R_RUN_STOP,
    R_RUN_APPROVAL
};

struct req {
    enum route route;
    unsigned early;    /* a middleware or routing rejection to send, 0 for none */
    const char *allow; /* for 405 */
    char *run_id;
    char *profile_name; /* the NAME of /p/NAME/, or NULL */
    long profile;       /* index into g.profiles; -1: unknown profile */
    struct sb body;
    bool too_large;
};

/* Splits "/a/b/c" into at most 8 segments (pointers into a copy kept in *buf). */
static size_t split_path(const char *path, char **buf, char *seg[8], bool *too_many)
{
    size_t n = 0;
    *buf = xstrdup(path);
    *too_many = false;
    if (**buf != '/')
        return 0;
    for (char *s = *buf + 1;;) {
        if (n == 8) {
            *too_many = true;
            break;
        }
        seg[n++] = s;
        char *slash = strchr(s, '/');
        if (slash == NULL)
            break;
        *slash = '\0';
        s = slash + 1;
    }
    return n;
}

/* aiohttp's {name} matches [^{}/]+. */
static bool var_ok(const char *s)
{
    return *s && !strpbrk(s, "{}");
}

/* Matches segments against the route table; returns the route (0 for no path match) and the
 * method it takes in *method. */
static enum route match_segments(char **seg, size_t n, const char **method, char **run_id)
{
    *method = "GET";
    if (n == 1 && !strcmp(seg[0], "health"))
        return R_HEALTH;
    if (n < 2 || strcmp(seg[0], "v1") != 0)
        return R_NONE;
    if (n == 2 && !strcmp(seg[1], "health"))
        return R_HEALTH;
    if (n == 2 && !strcmp(seg[1], "models"))
        return R_MODELS;
    if (n == 3 && !strcmp(seg[1], "chat") && !strcmp(seg[2], "completions")) {
        *method = "POST";
        return R_CHAT;
    }
    if (strcmp(seg[1], "runs") != 0)
        return R_NONE;
    if (n == 2) {
        *method = "POST";
        return R_RUNS;
    }
    if (!var_ok(seg[2]) || n > 4)
        return R_NONE;
    *run_id = xstrdup(seg[2]);
    if (n == 3)
        return R_RUN;
    if (!strcmp(seg[3], "events"))
        return R_RUN_EVENTS;
    if (!strcmp(seg[3], "stop")) {
        *method = "POST";
        return R_RUN_STOP;
    }
    if (!strcmp(seg[3], "approval")) {
        *method = "POST";
        return R_RUN_APPROVAL;
    }
    free(*run_id);
    *run_id = NULL;
    return R_NONE;
}

static long find_profile(const char *name)
{
    if (!strcmp(name, "default"))
        return 0;
    for (size_t i = 1; i < g.nprofiles; i++)
        if (!strcmp(g.profiles[i].name, name))
            return (long)i;
    return -1;
}

/* Routing as aiohttp does it: a path+method match, else 404 or 405 (with Allow). */
static void route_request(struct req *r, const char *url, const char *method)
{
    char *buf, *seg[8];
    bool too_many;
    size_t n = split_path(url, &buf, seg, &too_many);
    const char *want = NULL;
    enum route rt = R_NONE;

    r->profile = 0;
    if (!too_many && n >= 3 && !strcmp(seg[0], "p") && var_ok(seg[1])) {
        rt = match_segments(seg + 2, n - 2, &want, &r->run_id);
        if (rt != R_NONE) {
            r->profile_name = xstrdup(seg[1]);
            r->profile = find_profile(seg[1]);
        }
    }
    if (rt == R_NONE && !too_many)
        rt = match_segments(seg, n, &want, &r->run_id);
    free(buf);
    if (rt == R_NONE) {
        r->early = 404;
    } else if (strcmp(method, want) != 0) {
        r->early = 405;
        r->allow = want;
        rt = R_NONE;
    }
    r->route = rt;
}

static const char *header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* _check_auth [A]: "Bearer " + the key (stripped), constant-time compare. */
static bool auth_ok(struct MHD_Connection *c, const struct req *r)
{
    const char *h = header(c, "Authorization");
    if (r->profile < 0 || h == NULL || strncmp(h, "Bearer ", 7) != 0)
        return false;
    const char *t = h + 7, *e;
    while (*t && isspace((unsigned char)*t))
        t++;
    e = t + strlen(t);
    while (e > t && isspace((unsigned char)e[-1]))
        e--;
    const char *key = g.profiles[r->profile].key;
    size_t n = (size_t)(e - t);
    return n == strlen(key) && CRYPTO_memcmp(t, key, n) == 0;
}

static void record_request(struct MHD_Connection *c, const struct req *r, const char *method,
                           const char *url)
{
    if (g.record == NULL)
        return;
    static const char *const names[] = {
        "x-hermes-session-id", "x-hermes-session-key", "idempotency-key", "origin",
        "content-type",        "traceparent",          "tracestate"};
    json_t *h = json_pack("{s:b}", "authorization_ok", auth_ok(c, r));
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = header(c, names[i]);
        json_t *s = v ? json_stringn(v, strlen(v)) : NULL;
        json_object_set_new(h, names[i], s ? s : json_null());
    }
    json_t *body = NULL;
    if (r->body.len && !r->too_large)
        body = json_loadb(r->body.p, r->body.len, JSON_DECODE_ANY, NULL);
    json_t *line = json_object();
    json_object_set_new(line, "ts", json_real(now_wall()));
    json_object_set_new(line, "method", json_string(method));
    json_t *path = json_string(url);
    json_object_set_new(line, "path", path ? path : json_string("(not UTF-8)"));
    json_t *prof = r->profile_name ? json_string(r->profile_name) : NULL;
    json_object_set_new(line, "profile", prof ? prof : json_null());
    json_object_set_new(line, "headers", h);
    json_object_set_new(line, "body", body ? body : json_null());
    record_line(line);
}

/* ---------------------------------------------------------------- runs: state */

static struct run *run_find(const char *id)
{
    for (struct run *r = g.runs; r; r = r->next)
        if (!strcmp(r->id, id))
            return r;
    return NULL;
}

static const char *run_status(const struct run *run)
{
    return json_string_value(json_object_get(run->status, "status"));
}

static void frames_free(struct run *run)
{
    while (run->q_head) {
        struct frame *f = run->q_head;
        run->q_head = f->next;
        free(f->data);
        free(f);
    }
    run->q_tail = NULL;
}

static void drop_transport(struct run *run)
{
    frames_free(run);
    run->transport = false;
    run->q_closed = false;
}

static void run_free(struct run *run)
{
    if (run == NULL)
        return;
    frames_free(run);
    json_decref(run->status);
    plan_cleanup(&run->plan);
    free(run->input);
    free(run->instructions);
    free(run);
}

static struct idem *idem_by_run(const char *run_id)
{
    for (struct idem *i = g.idems; i; i = i->next)
        if (!strcmp(i->run_id, run_id))
            return i;
    return NULL;
}

/* Writes the idempotency store to --state atomically (g.mu held). */
static void state_write(void)
{
    if (g.state_path == NULL)
        return;
    json_t *recs = json_array();
    for (struct idem *i = g.idems; i; i = i->next)
        json_array_append_new(recs,
                              json_pack("{s:s, s:s, s:s, s:s, s:O, s:s, s:f, s:f}", "scope",
                                        i->scope, "key", i->key, "fingerprint", i->fp, "run_id",
                                        i->run_id, "status", i->status, "owner", i->owner,
                                        "created_at", i->created_at, "updated_at", i->updated_at));
    json_t *doc = json_pack("{s:i, s:o}", "version", 1, "records", recs);
    struct sb tmp = {0};
    sb_adds(&tmp, g.state_path);
    sb_adds(&tmp, ".tmp");
    if (json_dump_file(doc, tmp.p, JSON_INDENT(1) | JSON_REAL_PRECISION(16)) != 0 ||
        rename(tmp.p, g.state_path) != 0)
        fprintf(stderr, "fake-agent: cannot write state file %s: %s\n", g.state_path,
                strerror(errno));
    sb_free(&tmp);
    json_decref(doc);
}

static void state_load(void)
{
    json_error_t je;
    if (g.state_path == NULL || access(g.state_path, F_OK) != 0)
        return;
    json_t *doc = json_load_file(g.state_path, 0, &je);
    json_t *recs = json_object_get(doc, "records");
    if (!json_is_array(recs)) {
        fprintf(stderr, "fake-agent: ignoring unreadable state file %s: %s\n", g.state_path,
                doc ? "no records" : je.text);
        json_decref(doc);
        return;
    }
    size_t k;
    json_t *o;
    json_array_foreach(recs, k, o)
    {
        const char *scope = json_string_value(json_object_get(o, "scope"));
        const char *key = json_string_value(json_object_get(o, "key"));
        const char *fp = json_string_value(json_object_get(o, "fingerprint"));
        const char *run_id = json_string_value(json_object_get(o, "run_id"));
        const char *owner = json_string_value(json_object_get(o, "owner"));
        json_t *status = json_object_get(o, "status");
        if (!scope || strlen(scope) != 64 || !key || !fp || strlen(fp) != 64 || !run_id ||
            strlen(run_id) >= 40 || !owner || strlen(owner) >= 33 || !json_is_object(status))
            continue;
        struct idem *i = xcalloc(1, sizeof(*i));
        memcpy(i->scope, scope, 65);
        i->key = xstrdup(key);
        memcpy(i->fp, fp, 65);
        strcpy(i->run_id, run_id);
        strcpy(i->owner, owner);
        i->status = json_deep_copy(status);
        i->created_at = json_number_value(json_object_get(o, "created_at"));
        i->updated_at = json_number_value(json_object_get(o, "updated_at"));
        i->next = g.idems;
        g.idems = i;
    }
    json_decref(doc);
}

static void persist_run(struct run *run)
{
    struct idem *i = run->idempotent ? idem_by_run(run->id) : NULL;
    if (i == NULL)
        return;
    json_decref(i->status);
    i->status = json_deep_copy(run->status);
    i->updated_at = now_wall();
    state_write();
}

/* _set_run_status [R] (g.mu held): status, updated_at, then fields (a borrowed object, may be
 * NULL); persisted when the status changes, is terminal, or carries output/error/usage. */
static void set_status(struct run *run, const char *status_in, json_t *fields)
{
    char *prev = xstrdup(run_status(run));
    char status[32];
    snprintf(status, sizeof(status), "%s", status_in); /* status_in may be the old value */
    json_object_set_new(run->status, "status", json_string(status));
    json_object_set_new(run->status, "updated_at", json_real(now_wall()));
    json_object_update(run->status, fields);
    bool persist = strcmp(prev, status) != 0 || is_terminal(status) ||
                   json_object_get(fields, "output") || json_object_get(fields, "error") ||
                   json_object_get(fields, "usage") || json_object_get(fields, "session_id");
    free(prev);
    if (persist)
        persist_run(run);
    wake();
}

/* Queues one run event (g.mu held) while the run still has its transport. */
static void push_event(struct run *run, const char *name, json_t *fields /* borrowed, NULL ok */)
{
    if (!run->transport || run->q_closed)
        return;
    json_t *ev =
        json_pack("{s:s, s:s, s:f}", "event", name, "run_id", run->id, "timestamp", now_wall());
    json_object_update(ev, fields);
    char *js = jdump(ev);
    json_decref(ev);
    struct frame *f = xcalloc(1, sizeof(*f));
    struct sb b = {0};
    sb_adds(&b, "data: ");
    sb_adds(&b, js);
    sb_adds(&b, "\n\n");
    free(js);
    f->data = b.p;
    if (run->q_tail)
        run->q_tail->next = f;
    else
        run->q_head = f;
    run->q_tail = f;
    wake();
}

/* The run-event callback [R]: the event, and last_event on the (unchanged) status. */
static void tool_event(struct run *run, const char *name, json_t *fields /* taken */)
{
    json_t *le = json_pack("{s:s}", "last_event", name);
    set_status(run, run_status(run), le);
    json_decref(le);
    push_event(run, name, fields);
    json_decref(fields);
}

/* _finish [R]: terminal status with fields and last_event, then the run.<status> event and the
 * end of the event stream. */
static void finish(struct run *run, const char *status, json_t *fields /* taken, NULL ok */)
{
    char ev[32];
    snprintf(ev, sizeof(ev), "run.%s", status);
    if (fields == NULL)
        fields = json_object();
    json_t *all = json_deep_copy(fields);
    json_object_set_new(all, "last_event", json_string(ev));
    set_status(run, status, all);
    json_decref(all);
    push_event(run, ev, fields);
    json_decref(fields);
    if (run->transport)
        run->q_closed = true;
    wake();
}

/* Finds a run the caller's profile may see (g.mu held); hydrates it from the idempotency store
 * if it is not in memory, marking an unsettled run of an earlier process "interrupted". */
static struct run *run_lookup(const struct req *r)
{
    const char *scope = g.profiles[r->profile].scope;
    struct run *run = run_find(r->run_id);
    if (run)
        return strcmp(g.profiles[run->profile].scope, scope) == 0 && !run->forgotten ? run : NULL;
    struct idem *i = idem_by_run(r->run_id);
    if (i == NULL || strcmp(i->scope, scope) != 0)
        return NULL;
    run = xcalloc(1, sizeof(*run));
    snprintf(run->id, sizeof(run->id), "%s", i->run_id);
    run->profile = (size_t)r->profile;
    run->status = json_deep_copy(i->status);
    run->idempotent = true;
    if (!is_terminal(run_status(run)) && strcmp(i->owner, g.instance) != 0) {
        json_object_set_new(run->status, "status", json_string("interrupted"));
        json_object_set_new(run->status, "error",
                            json_string("The gateway restarted before this run settled."));
        json_object_set_new(run->status, "last_event", json_string("run.interrupted"));
        json_object_set_new(run->status, "updated_at", json_real(now_wall()));
        persist_run(run);
    }
    run->next = g.runs;
    g.runs = run;
    return run;
}

/* The shared concurrency cap [A] (g.mu held): chat requests in flight plus live runs. */
static bool cap_reached(void)
{
    if (g.max_concurrent <= 0)
        return false;
    long n = g.inflight_chat;
    for (struct run *r = g.runs; r; r = r->next)
        n += r->live;
    return n >= g.max_concurrent;
}

/* ---------------------------------------------------------------- SSE writers */

/* True when the client has gone (a hang-up, or EOF with nothing pipelined). */
static bool peer_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (fd < 0 || poll(&p, 1, 0) <= 0)
        return false;
    if (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL))
        return true;
    if (p.revents & POLLIN) {
        char ch;
        ssize_t n = recv(fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
    return false;
}

static int conn_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* An SSE writer's pending output. */
struct out {
    struct sb b;
    size_t off;
};

static ssize_t out_copy(struct out *o, char *buf, size_t max)
{
    size_t n = o->b.len - o->off;
    if (n > max)
        n = max;
    memcpy(buf, o->b.p + o->off, n);
    o->off += n;
    if (o->off == o->b.len)
        o->b.len = o->off = 0;
    return (ssize_t)n;
}

enum wait_rc { W_READY, W_KEEPALIVE, W_GONE };

/* Waits (g.mu held) until the deadline (or until ready() says so), looking for a hang-up every
 * POLL_SLICE_MS and asking for a keepalive after keepalive_ms without output. */
static enum wait_rc sse_wait(int fd, long long deadline, long long last_write,
                             bool (*ready)(void *), void *arg)
{
    for (;;) {
        if (g.stopping)
            return W_GONE;
        if (ready ? ready(arg) : now_ms() >= deadline)
            return W_READY;
        long long now = now_ms();
        if (g.keepalive_ms > 0 && now - last_write >= g.keepalive_ms)
            return W_KEEPALIVE;
        long long until = now + POLL_SLICE_MS;
        if (!ready && deadline < until)
            until = deadline;
        if (g.keepalive_ms > 0 && last_write + g.keepalive_ms < until)
            until = last_write + g.keepalive_ms;
        timed_wait(until);
        unlock();
        bool gone = peer_gone(fd);
        lock();
        if (gone)
            return W_GONE;
    }
}

/* ---------------------------------------------------------------- chat completions */

struct chat_stream {
    struct plan plan;
    struct outcome oc;
    struct plan_step *steps;
    size_t nsteps, step;
    char (*call_ids)[32];
    long long start, last_write;
    int fd;
    bool sent_role, done;
    char id[48];
    json_int_t created;
    json_t *model;
    char *session_id, *path;
    long prompt_tokens;
    struct out out;
};

static json_t *chat_chunk(const struct chat_stream *s, json_t *delta, const char *reason)
{
    return json_pack("{s:s, s:s, s:I, s:O, s:[{s:i, s:o, s:s?}]}", "id", s->id, "object",
                     "chat.completion.chunk", "created", s->created, "model", s->model, "choices",
                     "index", 0, "delta", delta, "finish_reason", reason);
}

static void sse_data(struct out *o, json_t *j /* taken */, const char *event)
{
    char *js = jdump(j);
    json_decref(j);
    if (event) {
        sb_adds(&o->b, "event: ");
        sb_adds(&o->b, event);
        sb_adds(&o->b, "\n");
    }
    sb_adds(&o->b, "data: ");
    sb_adds(&o->b, js);
    sb_adds(&o->b, "\n\n");
    free(js);
}

static json_t *null_finish(json_t *chunk)
{
    /* json_pack's s? leaves out a NULL finish_reason; upstream sends it as null */
    json_t *choice = json_array_get(json_object_get(chunk, "choices"), 0);
    if (json_object_get(choice, "finish_reason") == NULL)
        json_object_set_new(choice, "finish_reason", json_null());
    return chunk;
}

static void chat_step(struct chat_stream *s, const struct plan_step *st)
{
    struct plan_tool tool;
    switch (st->kind) {
    case STEP_TOOL_START:
        plan_tool(&s->plan, st->tool, &tool);
        hex_random(s->call_ids[st->tool], 24);
        memmove(s->call_ids[st->tool] + 5, s->call_ids[st->tool], 25);
        memcpy(s->call_ids[st->tool], "call_", 5);
        sse_data(&s->out,
                 json_pack("{s:s, s:s, s:s, s:s, s:s}", "tool", tool.name, "emoji", tool.emoji,
                           "label", tool.label, "toolCallId", s->call_ids[st->tool], "status",
                           "running"),
                 "hermes.tool.progress");
        break;
    case STEP_TOOL_DONE:
        plan_tool(&s->plan, st->tool, &tool);
        sse_data(&s->out,
                 json_pack("{s:s, s:s, s:s}", "tool", tool.name, "toolCallId",
                           s->call_ids[st->tool], "status", "completed"),
                 "hermes.tool.progress");
        break;
    case STEP_DELTA: {
        json_t *piece = json_stringn(s->oc.text + st->off, st->len);
        if (piece == NULL)
            piece = json_string("");
        sse_data(&s->out, null_finish(chat_chunk(s, json_pack("{s:o}", "content", piece), NULL)),
                 NULL);
        break;
    }
    case STEP_END: {
        const char *reason = finish_reason(&s->oc);
        long out_tokens = plan_tokens(s->oc.text);
        json_t *fin = chat_chunk(s, json_object(), reason);
        json_object_set_new(fin, "usage",
                            json_pack("{s:i, s:i, s:i}", "prompt_tokens", (int)s->prompt_tokens,
                                      "completion_tokens", (int)out_tokens, "total_tokens",
                                      (int)(s->prompt_tokens + out_tokens)));
        if (strcmp(reason, "stop") != 0) {
            if (s->oc.error)
                json_object_set_new(
                    fin, "error",
                    json_pack("{s:s, s:s}", "message", s->oc.error, "type", "agent_error"));
            json_object_set_new(fin, "hermes", hermes_extras(&s->oc, reason));
        }
        sse_data(&s->out, fin, NULL);
        sb_adds(&s->out.b, "data: [DONE]\n\n");
        s->done = true;
        break;
    }
    }
}

static ssize_t chat_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct chat_stream *s = cls;
    (void)pos;
    for (;;) {
        if (s->out.b.len > s->out.off)
            return out_copy(&s->out, buf, max);
        if (s->done)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (!s->sent_role) {
            s->sent_role = true;
            sse_data(&s->out,
                     null_finish(chat_chunk(s, json_pack("{s:s}", "role", "assistant"), NULL)),
                     NULL);
            s->last_write = now_ms();
            continue;
        }
        const struct plan_step *st = &s->steps[s->step];
        lock();
        enum wait_rc rc = sse_wait(s->fd, s->start + st->at_ms, s->last_write, NULL, NULL);
        unlock();
        if (rc == W_GONE)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (rc == W_KEEPALIVE) {
            sb_adds(&s->out.b, ": keepalive\n\n");
        } else {
            chat_step(s, st);
            s->step++;
        }
        s->last_write = now_ms();
    }
}

/* The stream is over (finished, client gone, or shutdown): release the cap slot; a stream that
 * did not finish interrupted the agent. */
static void chat_stream_free(void *cls)
{
    struct chat_stream *s = cls;
    lock();
    bool stopping = g.stopping;
    g.inflight_chat--;
    wake();
    unlock();
    if (!s->done)
        record_interrupted(s->path, s->session_id, stopping ? "shutdown" : "client disconnected");
    plan_cleanup(&s->plan);
    outcome_cleanup(&s->oc);
    free(s->steps);
    free(s->call_ids);
    json_decref(s->model);
    free(s->session_id);
    free(s->path);
    sb_free(&s->out.b);
    free(s);
}

/* Text of a message's content, as _normalize_chat_content / _normalize_multimodal_content [A]
 * see it. Returns false (with code and msg set) for content a chat turn may not carry. */
static bool content_text(const json_t *content, bool multimodal, struct sb *text, bool *image,
                         const char **code, char **msg)
{
    size_t i;
    json_t *part;
    *image = false;
    if (content == NULL || json_is_null(content))
        return true;
    if (json_is_string(content)) {
        sb_add(text, json_string_value(content), json_string_length(content));
        return true;
    }
    if (!json_is_array(content)) {
        char *s = jdump(content);
        sb_adds(text, s);
        free(s);
        return true;
    }
    bool first = true;
    json_array_foreach(content, i, part)
    {
        const char *t = NULL;
        if (json_is_string(part)) {
            t = json_string_value(part);
        } else if (json_is_object(part)) {
            const char *type = json_string_value(json_object_get(part, "type"));
            char lower[32] = "";
            for (size_t k = 0; type && type[k] && k + 1 < sizeof(lower); k++)
                lower[k] = (char)tolower((unsigned char)type[k]);
            if (!strcmp(lower, "text") || !strcmp(lower, "input_text") ||
                !strcmp(lower, "output_text")) {
                t = json_string_value(json_object_get(part, "text"));
            } else if (multimodal &&
                       (!strcmp(lower, "image_url") || !strcmp(lower, "input_image"))) {
                json_t *ref = json_object_get(part, "image_url");
                const char *url =
                    json_string_value(json_is_object(ref) ? json_object_get(ref, "url") : ref);
                while (url && isspace((unsigned char)*url))
                    url++;
                if (url == NULL || *url == '\0') {
                    *code = "invalid_image_url";
                    *msg = xstrdup("Image parts must include a non-empty image URL.");
                    return false;
                }
                if (!strncasecmp(url, "data:", 5) &&
                    (strncasecmp(url, "data:image/", 11) != 0 || !strchr(url, ','))) {
                    *code = "unsupported_content_type";
                    *msg = xstrdup("Only image data URLs are supported. Non-image data payloads "
                                   "are not supported.");
                    return false;
                }
                if (strncasecmp(url, "data:", 5) != 0 && strncasecmp(url, "http://", 7) != 0 &&
                    strncasecmp(url, "https://", 8) != 0) {
                    *code = "invalid_image_url";
                    *msg = xstrdup("Image inputs must use http(s) URLs or data:image/... URLs.");
                    return false;
                }
                *image = true;
            } else if (multimodal && (!strcmp(lower, "file") || !strcmp(lower, "input_file"))) {
                *code = "unsupported_content_type";
                *msg = xstrdup("Inline image inputs are supported, but uploaded files and "
                               "document inputs are not supported on this endpoint.");
                return false;
            } else if (multimodal) {
                struct sb m = {0};
                sb_adds(&m, "Unsupported content part type ");
                if (type) {
                    sb_adds(&m, "'");
                    sb_adds(&m, type);
                    sb_adds(&m, "'");
                } else {
                    sb_adds(&m, "None");
                }
                sb_adds(&m, ". Only text and image_url/input_image parts are supported.");
                *code = "unsupported_content_type";
                *msg = m.p;
                return false;
            }
        }
        if (t && *t) {
            if (!first)
                sb_adds(text, "\n");
            sb_adds(text, t);
            first = false;
        }
    }
    return true;
}

static bool visible(const char *s)
{
    for (; s && *s; s++)
        if (!isspace((unsigned char)*s))
            return true;
    return false;
}

/* X-Hermes-Session-Key [A]: optional; echoed back. Returns false after queueing a 400. */
static bool session_key(struct MHD_Connection *c, const char **out, enum MHD_Result *rc)
{
    const char *v = header(c, "X-Hermes-Session-Key");
    *out = NULL;
    if (v == NULL || !visible(v))
        return true;
    if (strpbrk(v, "\r\n")) {
        *rc = reply_invalid(c, "Invalid session key");
        return false;
    }
    if (strlen(v) > MAX_SESSION_HEADER) {
        *rc = reply_invalid(c, "Session key too long");
        return false;
    }
    *out = v;
    return true;
}

/* Python's bool-like coercion of "stream" [A]. */
static bool coerce_bool(const json_t *v)
{
    if (json_is_boolean(v))
        return json_is_true(v);
    if (json_is_string(v)) {
        char s[8] = "";
        const char *p = json_string_value(v);
        while (isspace((unsigned char)*p))
            p++;
        size_t k = 0;
        for (; p[k] && k + 1 < sizeof(s); k++)
            s[k] = (char)tolower((unsigned char)p[k]);
        while (k > 0 && isspace((unsigned char)s[k - 1]))
            k--;
        s[k] = '\0';
        return !strcmp(s, "1") || !strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on");
    }
    if (json_is_number(v))
        return json_number_value(v) != 0;
    return false;
}

static void chat_idem_purge(double now)
{
    size_t n = 0;
    for (struct chat_idem **pp = &g.chat_idems; *pp;) {
        struct chat_idem *e = *pp;
        if (now - e->ts > CHAT_IDEM_TTL_S || ++n > CHAT_IDEM_MAX) {
            *pp = e->next;
            free(e->key);
            outcome_cleanup(&e->oc);
            free(e);
        } else {
            pp = &e->next;
        }
    }
}

static enum MHD_Result chat_reply(struct MHD_Connection *c, const struct outcome *oc, json_t *model,
                                  const char *session_id, const char *skey, long prompt_tokens)
{
    const char *reason = finish_reason(oc);
    struct hdr h[6] = {{"X-Hermes-Session-Id", session_id}, {"X-Hermes-Session-Key", skey}};
    size_t nh = 2;
    bool flagged = oc->partial || oc->failed || !oc->completed;
    if (flagged) {
        h[nh++] = (struct hdr){"X-Hermes-Completed", "false"};
        h[nh++] = (struct hdr){"X-Hermes-Partial", oc->partial ? "true" : "false"};
    }
    if (*oc->text == '\0' && (oc->failed || oc->partial)) {
        /* hard failure: 502 so SDK clients raise */
        json_t *e =
            json_pack("{s:{s:s, s:s, s:n, s:s, s:{s:b, s:b, s:b}}}", "error", "message",
                      oc->error ? oc->error : "Agent run did not produce a response.", "type",
                      "server_error", "param", "code", "agent_incomplete", "hermes", "completed",
                      oc->completed, "partial", oc->partial, "failed", oc->failed);
        return reply_json(c, 502, e, h);
    }
    char id[48] = "chatcmpl-";
    hex_random(id + 9, 29);
    long out_tokens = plan_tokens(oc->text);
    json_t *body = json_pack(
        "{s:s, s:s, s:I, s:O, s:[{s:i, s:{s:s, s:s}, s:s}], s:{s:i, s:i, s:i}}", "id", id, "object",
        "chat.completion", "created", (json_int_t)time(NULL), "model", model, "choices", "index", 0,
        "message", "role", "assistant", "content", oc->text, "finish_reason", reason, "usage",
        "prompt_tokens", (int)prompt_tokens, "completion_tokens", (int)out_tokens, "total_tokens",
        (int)(prompt_tokens + out_tokens));
    char err[201] = "";
    if (flagged) {
        json_object_set_new(body, "hermes", hermes_extras(oc, reason));
        if (oc->error) {
            snprintf(err, sizeof(err), "%s", oc->error);
            for (char *p = err; *p; p++)
                if (*p == '\r' || *p == '\n')
                    *p = ' ';
            h[nh++] = (struct hdr){"X-Hermes-Error", err};
        }
    }
    return reply_json(c, 200, body, h);
}

static enum MHD_Result h_chat(struct MHD_Connection *c, struct req *r, const char *url)
{
    enum MHD_Result rc = MHD_NO;
    json_t *body = NULL;
    struct sb system = {0}, user = {0}, first_user = {0}, all = {0};
    bool have_system = false, have_user = false, have_first = false, reserved = false;
    char *msg = NULL;

    if (!auth_ok(c, r))
        return reply_auth_failed(c);
    lock();
    if (cap_reached()) {
        unlock();
        return reply_cap(c);
    }
    g.inflight_chat++;
    reserved = true;
    unlock();

    if (r->too_large) {
        rc = reply_too_large(c);
        goto out;
    }
    body = r->body.len ? json_loadb(r->body.p, r->body.len, JSON_DECODE_ANY, NULL) : NULL;
    if (!json_is_object(body)) {
        rc = reply_error(c, 400, "Invalid JSON in request body", NULL, NULL, NULL, NULL);
        goto out;
    }
    json_t *messages = json_object_get(body, "messages");
    if (!json_is_array(messages) || json_array_size(messages) == 0) {
        rc = reply_invalid(c, "Missing or invalid 'messages' field");
        goto out;
    }
    bool stream = coerce_bool(json_object_get(body, "stream"));
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *code = NULL;
        bool image = false;
        struct sb t = {0};
        if (role == NULL)
            continue;
        bool sys = !strcmp(role, "system");
        if (!sys && strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0)
            continue;
        if (!content_text(json_object_get(m, "content"), !sys, &t, &image, &code, &msg)) {
            char param[48];
            snprintf(param, sizeof(param), "messages[%zu].content", i);
            rc = reply_error(c, 400, msg, NULL, code, param, NULL);
            sb_free(&t);
            goto out;
        }
        sb_add(&all, t.p ? t.p : "", t.len);
        sb_adds(&all, "\n");
        if (sys) {
            if (have_system)
                sb_adds(&system, "\n");
            sb_add(&system, t.p ? t.p : "", t.len);
            have_system = true;
        } else {
            if (!have_first && !strcmp(role, "user")) {
                sb_add(&first_user, t.p ? t.p : "", t.len);
                have_first = true;
            }
            user.len = 0;
            sb_add(&user, t.p ? t.p : "", t.len);
            have_user = visible(t.p) || image;
        }
        sb_free(&t);
    }
    if (!have_user) {
        rc = reply_invalid(c, "No user message found in messages");
        goto out;
    }
    const char *skey;
    if (!session_key(c, &skey, &rc))
        goto out;
    const char *given = header(c, "X-Hermes-Session-Id");
    char session_id[MAX_SESSION_HEADER + 8];
    if (given && visible(given)) {
        while (isspace((unsigned char)*given))
            given++;
        size_t n = strlen(given);
        while (n > 0 && isspace((unsigned char)given[n - 1]))
            n--;
        if (memchr(given, '\r', n) || memchr(given, '\n', n) || memchr(given, '/', n) ||
            memchr(given, '\\', n) || memmem(given, n, "..", 2)) {
            rc = reply_invalid(c, "Invalid session ID");
            goto out;
        }
        if (n > MAX_SESSION_HEADER) {
            rc = reply_invalid(c, "Session ID too long");
            goto out;
        }
        memcpy(session_id, given, n);
        session_id[n] = '\0';
    } else {
        /* _derive_chat_session_id [A]: api- + sha256(system + "\n" + first user)[:16] */
        struct sb seed = {0};
        char hex[65];
        sb_add(&seed, system.p ? system.p : "", system.len);
        sb_adds(&seed, "\n");
        sb_add(&seed, first_user.p ? first_user.p : "", first_user.len);
        sha256_hex(seed.p, seed.len, hex);
        sb_free(&seed);
        snprintf(session_id, sizeof(session_id), "api-%.16s", hex);
    }
    json_t *model = json_object_get(body, "model");
    model = model ? json_incref(model) : json_string(MODEL_NAME);
    long prompt_tokens = plan_tokens(all.p);

    if (stream) {
        struct chat_stream *s = xcalloc(1, sizeof(*s));
        plan_parse(&s->plan, user.p, g.delay_scale);
        outcome_from_plan(&s->plan, &s->oc);
        s->steps = plan_timeline(&s->plan, s->oc.text, strlen(s->oc.text), &s->nsteps);
        s->call_ids = xcalloc((size_t)s->plan.progress + 1, sizeof(*s->call_ids));
        s->start = s->last_write = now_ms();
        s->fd = conn_fd(c);
        memcpy(s->id, "chatcmpl-", 9);
        hex_random(s->id + 9, 29);
        s->created = (json_int_t)time(NULL);
        s->model = model;
        s->session_id = xstrdup(session_id);
        s->path = xstrdup(url);
        s->prompt_tokens = prompt_tokens;
        struct MHD_Response *resp = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, 4096, chat_reader, s, chat_stream_free);
        if (resp == NULL) {
            chat_stream_free(s); /* releases the reservation */
            reserved = false;
            goto out;
        }
        reserved = false; /* the stream owns the cap slot now */
        const struct hdr h[] = {
            {"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"},
            {"X-Accel-Buffering", "no"},           {"X-Hermes-Session-Id", session_id},
            {"X-Hermes-Session-Key", skey},        {NULL, NULL}};
        add_headers(resp, h);
        rc = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        goto out;
    }

    /* non-streaming: one piece of work, or a replay from the Idempotency-Key cache */
    struct outcome oc = {0};
    bool cached = false;
    const char *ikey = header(c, "Idempotency-Key");
    char fp[65] = "", *scoped = NULL;
    if (ikey && *ikey) {
        static const char *const keys[] = {"model", "provider",    "model_options", "messages",
                                           "tools", "tool_choice", "stream"};
        json_t *subset = json_object();
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            json_t *v = json_object_get(body, keys[k]);
            json_object_set(subset, keys[k], v ? v : json_null());
        }
        char *js = json_dumps(subset, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
        sha256_hex(js, strlen(js), fp);
        free(js);
        json_decref(subset);
        struct sb k = {0};
        sb_adds(&k, g.profiles[r->profile].scope);
        sb_adds(&k, "|chat_completions|");
        sb_adds(&k, ikey);
        scoped = k.p;
        lock();
        chat_idem_purge(now_wall());
        for (struct chat_idem *e = g.chat_idems; e; e = e->next)
            if (!strcmp(e->key, scoped) && !strcmp(e->fp, fp)) {
                outcome_copy(&oc, &e->oc);
                cached = true;
                break;
            }
        unlock();
    }
    if (!cached) {
        struct plan p;
        plan_parse(&p, user.p, g.delay_scale);
        outcome_from_plan(&p, &oc);
        long long deadline = now_ms() + p.delay_ms;
        plan_cleanup(&p);
        lock();
        bool cut = wait_until(deadline, NULL);
        unlock();
        if (cut) { /* shutdown: drop the connection */
            outcome_cleanup(&oc);
            free(scoped);
            json_decref(model);
            rc = MHD_NO;
            goto out;
        }
        if (scoped) {
            struct chat_idem *e = xcalloc(1, sizeof(*e));
            e->key = xstrdup(scoped);
            memcpy(e->fp, fp, sizeof(fp));
            e->ts = now_wall();
            outcome_copy(&e->oc, &oc);
            lock();
            for (struct chat_idem **pp = &g.chat_idems; *pp; pp = &(*pp)->next)
                if (!strcmp((*pp)->key, scoped)) { /* a changed body recomputes and replaces */
                    struct chat_idem *old = *pp;
                    *pp = old->next;
                    free(old->key);
                    outcome_cleanup(&old->oc);
                    free(old);
                    break;
                }
            e->next = g.chat_idems;
            g.chat_idems = e;
            chat_idem_purge(now_wall());
            unlock();
        }
    }
    free(scoped);
    rc = chat_reply(c, &oc, model, session_id, skey, prompt_tokens);
    outcome_cleanup(&oc);
    json_decref(model);
out:
    if (reserved) {
        lock();
        g.inflight_chat--;
        wake();
        unlock();
    }
    free(msg);
    json_decref(body);
    sb_free(&system);
    sb_free(&user);
    sb_free(&first_user);
    sb_free(&all);
    return rc;
}

/* ---------------------------------------------------------------- /v1/runs */

/* [approval] (g.mu held): the run waits for POST /approval (or a stop). The `approval` field and
 * the approval.request event carry the command, a description and the choices [R]. False when
 * the run must end: stopped (cancelled by the caller) or denied (failed, as the agent reports a
 * command the user refused). */
static bool await_approval(struct run *run, const char *command)
{
    run->choice[0] = '\0';
    json_t *ask = json_pack("{s:s, s:s, s:[ssss]}", "command", command, "description",
                            "dangerous command needs approval", "choices", "once", "session",
                            "always", "deny");
    json_t *fields = json_pack("{s:O, s:s}", "approval", ask, "last_event", "approval.request");
    set_status(run, "waiting_for_approval", fields);
    json_decref(fields);
    push_event(run, "approval.request", ask);
    json_decref(ask);
    run->awaiting = true;
    while (!run->choice[0] && !run->stop && !g.stopping)
        pthread_cond_wait(&g.cv, &g.mu);
    run->awaiting = false;
    json_object_del(run->status, "approval");
    if (!run->choice[0])
        return false; /* stopped or shutting down: the caller settles the run */
    json_t *resp = json_pack("{s:s, s:i}", "choice", run->choice, "resolved", 1);
    json_t *le = json_pack("{s:s}", "last_event", "approval.responded");
    bool denied = !strcmp(run->choice, "deny");
    set_status(run, denied ? run_status(run) : "running", le);
    json_decref(le);
    push_event(run, "approval.responded", resp);
    json_decref(resp);
    return !denied;
}

static void *run_worker(void *arg)
{
    struct run *run = arg;
    struct outcome oc;
    size_t nsteps;
    struct plan_tool tool;

    outcome_from_plan(&run->plan, &oc);
    struct plan_step *steps = plan_timeline(&run->plan, oc.text, strlen(oc.text), &nsteps);
    long in_tokens = plan_tokens(run->input) + plan_tokens(run->instructions);

    lock();
    set_status(run, "running", NULL);
    bool denied = false;
    const char *asked = run->plan.approval;
    if (run->plan.approval && !run->stop)
        denied = !await_approval(run, run->plan.approval) && run->choice[0];
    if (run->plan.approval2 && !run->stop && !denied) {
        asked = run->plan.approval2;
        denied = !await_approval(run, run->plan.approval2) && run->choice[0];
    }
    long long start = now_ms();
    bool cut = run->stop || denied;
    for (size_t k = 0; k < nsteps && !cut; k++) {
        const struct plan_step *st = &steps[k];
        if (wait_until(start + st->at_ms, &run->stop)) {
            cut = true;
            break;
        }
        switch (st->kind) {
        case STEP_TOOL_START:
            plan_tool(&run->plan, st->tool, &tool);
            tool_event(run, "tool.started",
                       json_pack("{s:s, s:s}", "tool", tool.name, "preview", tool.label));
            break;
        case STEP_TOOL_DONE: {
            plan_tool(&run->plan, st->tool, &tool);
            double seg = (double)run->plan.delay_ms / (run->plan.progress + 1) / 1000.0;
            tool_event(run, "tool.completed",
                       json_pack("{s:s, s:f, s:b}", "tool", tool.name, "duration",
                                 round(seg * 1000) / 1000, "error", 0));
            break;
        }
        case STEP_DELTA: {
            json_t *d = json_pack("{s:s%}", "delta", oc.text + st->off, st->len);
            push_event(run, "message.delta", d);
            json_decref(d);
            break;
        }
        case STEP_END:
            break;
        }
    }
    if (g.stopping) {
        /* the process is exiting: the run stays unsettled, like a gateway that died */
    } else if (denied) {
        struct sb m = {0};
        sb_adds(&m, "Command denied by the user: ");
        sb_adds(&m, asked);
        finish(run, "failed", json_pack("{s:s}", "error", m.p));
        sb_free(&m);
    } else if (cut) {
        finish(run, "cancelled", NULL);
    } else if (run->plan.orphan) {
        /* [orphan]: the worker vanishes without settling the run */
    } else if (oc.failed) {
        finish(run, "failed", json_pack("{s:s}", "error", oc.error));
    } else {
        long out_tokens = plan_tokens(oc.text);
        finish(run, "completed",
               json_pack("{s:s, s:{s:i, s:i, s:i}}", "output", oc.text, "usage", "input_tokens",
                         (int)in_tokens, "output_tokens", (int)out_tokens, "total_tokens",
                         (int)(in_tokens + out_tokens)));
    }
    outcome_cleanup(&oc);
    free(steps);
    run->live = false;
    run->thread_done = true;
    wake();
    unlock();
    return NULL;
}

/* _handle_runs [R] */
static enum MHD_Result h_runs(struct MHD_Connection *c, struct req *r)
{
    enum MHD_Result rc;
    json_t *body = NULL;
    char fp[65] = "";
    const char *skey;

    if (!auth_ok(c, r))
        return reply_auth_failed(c);
    if (!session_key(c, &skey, &rc))
        return rc;
    if (r->too_large)
        return reply_too_large(c);
    body = r->body.len ? json_loadb(r->body.p, r->body.len, JSON_DECODE_ANY, NULL) : NULL;
    if (!json_is_object(body)) {
        json_decref(body);
        return reply_error(c, 400, "Invalid JSON", NULL, NULL, NULL, NULL);
    }
    /* Idempotency-Key: stripped; 1-255 visible ASCII */
    const char *raw_key = header(c, "Idempotency-Key");
    char *ikey = NULL;
    if (raw_key) {
        while (isspace((unsigned char)*raw_key))
            raw_key++;
        size_t n = strlen(raw_key);
        while (n > 0 && isspace((unsigned char)raw_key[n - 1]))
            n--;
        bool ok = n <= 255;
        for (size_t k = 0; ok && k < n; k++)
            ok = (unsigned char)raw_key[k] >= 33 && (unsigned char)raw_key[k] <= 126;
        if (!ok) {
            json_decref(body);
            return reply_error(c, 400, "Idempotency-Key must be 1-255 visible ASCII characters",
                               NULL, "invalid_idempotency_key", NULL, NULL);
        }
        if (n > 0) {
            ikey = strndup(raw_key, n);
            json_t *f =
                json_pack("{s:O, s:s}", "body", body, "gateway_session_key", skey ? skey : "");
            char *js = json_dumps(f, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
            sha256_hex(js, strlen(js), fp);
            free(js);
            json_decref(f);
        }
    }
    json_t *input = json_object_get(body, "input");
    const char *user_message = NULL;
    char *flat = NULL;
    if (!truthy(input)) {
        rc = reply_error(c, 400, "Missing 'input' field", NULL, NULL, NULL, NULL);
        goto out;
    }
    if (json_is_string(input)) {
        user_message = json_string_value(input);
    } else if (json_is_array(input)) {
        json_t *last = json_array_get(input, json_array_size(input) - 1);
        json_t *content = json_object_get(last, "content");
        if (json_is_string(content)) {
            user_message = json_string_value(content);
        } else if (truthy(content)) {
            struct sb t = {0};
            bool image;
            const char *code;
            char *msg = NULL;
            content_text(content, false, &t, &image, &code, &msg);
            free(msg);
            flat = t.p ? t.p : xstrdup(" ");
            user_message = flat;
        }
    }
    if (user_message == NULL || *user_message == '\0') {
        rc = reply_error(c, 400, "No user message found in input", NULL, NULL, NULL, NULL);
        goto out;
    }
    json_t *history = json_object_get(body, "conversation_history");
    if (truthy(history)) {
        if (!json_is_array(history)) {
            rc = reply_error(c, 400, "'conversation_history' must be an array of message objects",
                             NULL, NULL, NULL, NULL);
            goto out;
        }
        size_t k;
        json_t *e;
        json_array_foreach(history, k, e)
        {
            if (!json_is_object(e) || !json_object_get(e, "role") ||
                !json_object_get(e, "content")) {
                char m[96];
                snprintf(m, sizeof(m),
                         "conversation_history[%zu] must have 'role' and 'content' "
                         "fields",
                         k);
                rc = reply_error(c, 400, m, NULL, NULL, NULL, NULL);
                goto out;
            }
        }
    }

    const char *scope = g.profiles[r->profile].scope;
    struct hdr h[3] = {{"X-Hermes-Session-Key", skey}, {NULL, NULL}, {NULL, NULL}};
    lock();
    if (ikey) {
        /* a lost acceptance is replayed even while the cap is reached */
        for (struct idem *i = g.idems; i; i = i->next) {
            if (strcmp(i->scope, scope) != 0 || strcmp(i->key, ikey) != 0)
                continue;
            if (CRYPTO_memcmp(i->fp, fp, 64) != 0) {
                unlock();
                rc = reply_error(c, 409,
                                 "Idempotency-Key was already used with a different request "
                                 "payload",
                                 NULL, "idempotency_key_conflict", NULL, NULL);
                goto out;
            }
            struct req probe = *r;
            probe.run_id = i->run_id;
            struct run *run = run_lookup(&probe);
            const char *st =
                run ? run_status(run) : json_string_value(json_object_get(i->status, "status"));
            json_t *ok = json_pack("{s:s, s:s, s:b}", "run_id", i->run_id, "status",
                                   st ? st : "queued", "replayed", 1);
            unlock();
            h[0] = (struct hdr){"Idempotency-Replayed", "true"};
            h[1] = (struct hdr){"X-Hermes-Session-Key", skey};
            rc = reply_json(c, 202, ok, h);
            goto out;
        }
    }
    if (cap_reached()) {
        unlock();
        rc = reply_cap(c);
        goto out;
    }
    struct run *run = xcalloc(1, sizeof(*run));
    memcpy(run->id, "run_", 4);
    hex_random(run->id + 4, 32);
    run->profile = (size_t)r->profile;
    json_t *sid = json_object_get(body, "session_id");
    char *sid_text = !truthy(sid)          ? xstrdup(run->id)
                     : json_is_string(sid) ? xstrdup(json_string_value(sid))
                                           : jdump(sid);
    json_t *model = json_object_get(body, "model");
    double now = now_wall();
    run->status =
        json_pack("{s:s, s:s, s:s, s:f, s:f, s:s, s:o}", "object", "hermes.run", "run_id", run->id,
                  "status", "queued", "updated_at", now, "created_at", now, "session_id", sid_text,
                  "model", model ? json_incref(model) : json_string(MODEL_NAME));
    free(sid_text);
    run->input = xstrdup(user_message);
    const char *instr = json_string_value(json_object_get(body, "instructions"));
    run->instructions = instr ? xstrdup(instr) : NULL;
    plan_parse(&run->plan, user_message, g.delay_scale);
    run->transport = true;
    run->transport_created = now;
    run->live = true;
    run->next = g.runs;
    g.runs = run;
    if (ikey) {
        struct idem *i = xcalloc(1, sizeof(*i));
        memcpy(i->scope, scope, 65);
        i->key = ikey;
        ikey = NULL;
        memcpy(i->fp, fp, 65);
        memcpy(i->run_id, run->id, sizeof(i->run_id));
        memcpy(i->owner, g.instance, sizeof(i->owner));
        i->status = json_deep_copy(run->status);
        i->created_at = i->updated_at = now;
        i->next = g.idems;
        g.idems = i;
        run->idempotent = true;
        state_write();
    }
    if (pthread_create(&run->thread, NULL, run_worker, run) != 0) {
        run->live = false;
        finish(run, "failed", json_pack("{s:s}", "error", "could not start the run's thread"));
    } else {
        run->has_thread = true;
    }
    char id[40];
    memcpy(id, run->id, sizeof(id));
    unlock();
    rc = reply_json(
        c, 202, json_pack("{s:s, s:s, s:b}", "run_id", id, "status", "started", "replayed", 0), h);
out:
    free(flat);
    free(ikey);
    json_decref(body);
    return rc;
}

static enum MHD_Result h_run(struct MHD_Connection *c, struct req *r)
{
    if (!auth_ok(c, r))
        return reply_auth_failed(c);
    lock();
    struct run *run = run_lookup(r);
    json_t *st = run ? json_deep_copy(run->status) : NULL;
    if (run && run->plan.forget && is_terminal(run_status(run)))
        run->forgotten = true; /* [forget]: this answer is the last that knows it */
    unlock();
    return st ? reply_json(c, 200, st, NULL) : reply_run_not_found(c, r->run_id);
}

static enum MHD_Result h_stop(struct MHD_Connection *c, struct req *r)
{
    if (!auth_ok(c, r))
        return reply_auth_failed(c);
    lock();
    struct run *run = run_lookup(r);
    if (run == NULL) {
        unlock();
        return reply_run_not_found(c, r->run_id);
    }
    if (is_terminal(run_status(run))) {
        json_t *st = json_deep_copy(run->status);
        unlock();
        return reply_json(c, 200, st, NULL);
    }
    if (!run->live) {
        unlock();
        struct sb m = {0};
        sb_adds(&m, "Run is not active in this gateway process: ");
        sb_adds(&m, r->run_id);
        enum MHD_Result rc = reply_error(c, 409, m.p, NULL, "run_not_active", NULL, NULL);
        sb_free(&m);
        return rc;
    }
    json_t *le = json_pack("{s:s}", "last_event", "run.stopping");
    set_status(run, "stopping", le);
    json_decref(le);
    run->stop = true;
    wake();
    unlock();
    return reply_json(c, 200, json_pack("{s:s, s:s}", "run_id", r->run_id, "status", "stopping"),
                      NULL);
}

/* POST /v1/runs/{id}/approval [R]: answers a run that waits; 409 approval_not_pending otherwise. */
static enum MHD_Result h_approval(struct MHD_Connection *c, struct req *r)
{
    if (!auth_ok(c, r))
        return reply_auth_failed(c);
    json_t *body = r->body.len ? json_loadb(r->body.p, r->body.len, 0, NULL) : NULL;
    const char *choice = json_string_value(json_object_get(body, "choice"));
    bool valid = choice && (!strcmp(choice, "once") || !strcmp(choice, "session") ||
                            !strcmp(choice, "always") || !strcmp(choice, "deny"));
    char chosen[8] = "";
    if (valid)
        snprintf(chosen, sizeof chosen, "%s", choice);
    json_decref(body);
    lock();
    struct run *run = run_lookup(r);
    if (run == NULL) {
        unlock();
        return reply_run_not_found(c, r->run_id);
    }
    if (!valid) {
        unlock();
        return reply_error(c, 400, "choice must be one of: once, session, always, deny", NULL,
                           "invalid_choice", "choice", NULL);
    }
    if (!run->awaiting || run->choice[0]) {
        unlock();
        struct sb m = {0};
        sb_adds(&m, "No approval is pending for run: ");
        sb_adds(&m, r->run_id);
        enum MHD_Result rc = reply_error(c, 409, m.p, NULL, "approval_not_pending", NULL, NULL);
        sb_free(&m);
        return rc;
    }
    snprintf(run->choice, sizeof run->choice, "%s", chosen);
    wake();
    unlock();
    return reply_json(c, 200, json_pack("{s:i}", "resolved", 1), NULL);
}

struct ev_stream {
    struct run *run;
    long long last_write;
    int fd;
    bool done;
    struct out out;
};

static bool ev_ready(void *arg)
{
    const struct run *run = arg;
    return run->q_head != NULL || run->q_closed || !run->transport;
}

static ssize_t ev_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct ev_stream *s = cls;
    (void)pos;
    for (;;) {
        if (s->out.b.len > s->out.off)
            return out_copy(&s->out, buf, max);
        if (s->done)
            return MHD_CONTENT_READER_END_OF_STREAM;
        lock();
        enum wait_rc rc = sse_wait(s->fd, 0, s->last_write, ev_ready, s->run);
        if (rc == W_READY) {
            struct run *run = s->run;
            if (run->q_head) {
                struct frame *f = run->q_head;
                run->q_head = f->next;
                if (run->q_head == NULL)
                    run->q_tail = NULL;
                sb_adds(&s->out.b, f->data);
                free(f->data);
                free(f);
            } else {
                sb_adds(&s->out.b, ": stream closed\n\n");
                s->done = true;
            }
        }
        unlock();
        if (rc == W_GONE)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (rc == W_KEEPALIVE)
            sb_adds(&s->out.b, ": keepalive\n\n");
        s->last_write = now_ms();
    }
}

/* The consumer is done (stream closed, disconnect or shutdown): the queue is dropped [R]. */
static void ev_free(void *cls)
{
    struct ev_stream *s = cls;
    lock();
    s->run->subscribed = false;
    drop_transport(s->run);
    s->run->refs--;
    wake();
    unlock();
    sb_free(&s->out.b);
    free(s);
}

static enum MHD_Result h_events(struct MHD_Connection *c, struct req *r)
{
    if (!auth_ok(c, r))
        return reply_auth_failed(c);
    lock();
    struct run *run = run_lookup(r);
    if (run == NULL) {
        unlock();
        return reply_run_not_found(c, r->run_id);
    }
    /* the queue may appear a moment later; one consumer at a time */
    run->refs++;
    long long deadline = now_ms() + EVENTS_WAIT_MS;
    while (!(run->transport && !run->subscribed) && !g.stopping && now_ms() < deadline)
        timed_wait(deadline);
    if (!(run->transport && !run->subscribed) || g.stopping) {
        run->refs--;
        unlock();
        return reply_run_not_found(c, r->run_id);
    }
    run->subscribed = true;
    unlock();
    struct ev_stream *s = xcalloc(1, sizeof(*s));
    s->run = run;
    s->fd = conn_fd(c);
    s->last_write = now_ms();
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, ev_reader, s, ev_free);
    if (resp == NULL) {
        ev_free(s);
        return MHD_NO;
    }
    static const struct hdr h[] = {{"Content-Type", "text/event-stream"},
                                   {"Cache-Control", "no-cache"},
                                   {"X-Accel-Buffering", "no"},
                                   {NULL, NULL}};
    add_headers(resp, h);
    enum MHD_Result rc = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* ---------------------------------------------------------------- health, models */

static enum MHD_Result h_health(struct MHD_Connection *c)
{
    return reply_json(c, 200,
                      json_pack("{s:s, s:s, s:s}", "status", "ok", "platform", "hermes-agent",
                                "version", VERSION),
                      NULL);
}

static enum MHD_Result h_models(struct MHD_Connection *c, struct req *r)
{
    if (!auth_ok(c, r))
        return reply_auth_failed(c);
    const char *name = r->profile > 0 ? g.profiles[r->profile].name : MODEL_NAME;
    return reply_json(c, 200,
                      json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:[], s:s, s:n}]}", "object", "list",
                                "data", "id", name, "object", "model", "created",
                                (json_int_t)time(NULL), "owned_by", "hermes", "permission", "root",
                                name, "parent"),
                      NULL);
}

/* ---------------------------------------------------------------- the access handler */

static enum MHD_Result send_early(struct MHD_Connection *c, const struct req *r)
{
    char body[64];
    switch (r->early) {
    case 413:
        return reply_too_large(c);
    case 400: {
        json_t *e = json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message",
                              "Invalid Content-Length header.", "type", "invalid_request_error",
                              "param", "code", "invalid_content_length");
        char *s = jdump(e);
        json_decref(e);
        return reply(c, 400, "application/json; charset=utf-8", s, NULL, false);
    }
    case 403:
        return reply(c, 403, NULL, NULL, NULL, false);
    case 405: {
        const struct hdr h[] = {{"Allow", r->allow}, {NULL, NULL}};
        snprintf(body, sizeof(body), "405: Method Not Allowed");
        return reply(c, 405, "text/plain; charset=utf-8", xstrdup(body), h, false);
    }
    case 404:
        if (r->route != R_NONE) /* a route under /p/<unknown>/ */
            return reply(c, 404, "application/json; charset=utf-8",
                         xstrdup("{\"error\": \"Unknown or unconfigured profile\"}"), NULL, false);
        return reply(c, 404, "text/plain; charset=utf-8", xstrdup("404: Not Found"), NULL, false);
    default:
        return MHD_NO;
    }
}

/* Upstream's middleware order: profile → Origin → OPTIONS → Content-Length → route miss. */
static void early_checks(struct MHD_Connection *c, struct req *r, const char *method)
{
    unsigned miss = r->early;
    const char *origin = header(c, "Origin");
    r->early = 0;
    if (r->route != R_NONE && r->profile < 0) {
        r->early = 404;
        return;
    }
    if (origin && *origin) {
        r->early = 403;
        return;
    }
    if (!strcmp(method, "OPTIONS")) {
        r->early = 403;
        return;
    }
    const char *cl = header(c, "Content-Length");
    if (cl && (!strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH"))) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (end == cl || *end != '\0' || errno) {
            r->early = 400;
            return;
        }
        if (n > (unsigned long long)MAX_BODY) {
            r->early = 413;
            return;
        }
    }
    r->early = miss;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct req *r = *con_cls;
    (void)cls;
    (void)version;
    if (r == NULL) {
        r = xcalloc(1, sizeof(*r));
        *con_cls = r;
        route_request(r, url, method);
        early_checks(c, r, method);
        if (r->early == 413) { /* do not read a body that large */
            record_request(c, r, method, url);
            return send_early(c, r);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!r->early && !r->too_large) {
            if (r->body.len + *upload_size > (size_t)MAX_BODY) {
                r->too_large = true;
                sb_free(&r->body);
            } else {
                sb_add(&r->body, upload, *upload_size);
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    record_request(c, r, method, url);
    if (r->early)
        return send_early(c, r);
    switch (r->route) {
    case R_HEALTH:
        return h_health(c);
    case R_MODELS:
        return h_models(c, r);
    case R_CHAT:
        return h_chat(c, r, url);
    case R_RUNS:
        return h_runs(c, r);
    case R_RUN:
        return h_run(c, r);
    case R_RUN_EVENTS:
        return h_events(c, r);
    case R_RUN_STOP:
        return h_stop(c, r);
    case R_RUN_APPROVAL:
        return h_approval(c, r);
    default:
        return MHD_NO;
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct req *r = *con_cls;
    (void)cls;
    (void)c;
    (void)toe;
    if (r == NULL)
        return;
    free(r->run_id);
    free(r->profile_name);
    sb_free(&r->body);
    free(r);
    *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (getenv("FAKE_AGENT_DEBUG") == NULL)
        return;
    fputs("fake-agent: mhd: ", stderr);
    vfprintf(stderr, fmt, ap);
}

/* ---------------------------------------------------------------- the sweeper */

static void *sweeper(void *arg)
{
    (void)arg;
    long long next = now_ms() + 1000;
    lock();
    while (!g.stopping) {
        timed_wait(next);
        if (g.stopping)
            break;
        if (now_ms() < next)
            continue;
        next = now_ms() + 1000;
        double now = now_wall();
        for (struct run **pp = &g.runs; *pp;) {
            struct run *run = *pp;
            if (run->has_thread && run->thread_done) {
                pthread_join(run->thread, NULL);
                run->has_thread = false;
            }
            /* unread transports expire [R _RUN_STREAM_TTL] */
            if (run->transport && !run->subscribed &&
                (now - run->transport_created) * 1000 > (double)g.stream_ttl_ms)
                drop_transport(run);
            /* terminal statuses are kept for the retention time [R _RUN_STATUS_TTL] */
            const char *st = run_status(run);
            double updated = json_number_value(json_object_get(run->status, "updated_at"));
            if (st &&
                (!strcmp(st, "completed") || !strcmp(st, "failed") || !strcmp(st, "cancelled")) &&
                (now - updated) * 1000 > (double)g.retention_ms && !run->has_thread &&
                run->refs == 0 && !run->subscribed) {
                *pp = run->next;
                run_free(run);
                continue;
            }
            pp = &run->next;
        }
        /* idempotency records: kept after the last update, until terminal [I] */
        bool changed = false;
        for (struct idem **pp = &g.idems; *pp;) {
            struct idem *i = *pp;
            const char *st = json_string_value(json_object_get(i->status, "status"));
            if (is_terminal(st) && (now - i->updated_at) * 1000 > (double)g.idem_retention_ms) {
                *pp = i->next;
                free(i->key);
                json_decref(i->status);
                free(i);
                changed = true;
                continue;
            }
            pp = &i->next;
        }
        if (changed)
            state_write();
        chat_idem_purge(now);
    }
    unlock();
    return NULL;
}

/* ---------------------------------------------------------------- startup */

static void usage(FILE *f)
{
    fputs("usage: fake-agent --key-file FILE [--port N] [--profile NAME=KEYFILE]...\n"
          "                  [--record FILE] [--max-concurrent N] [--retention-ms MS]\n"
          "                  [--state FILE] [--delay-scale X] [--idempotency-retention-ms MS]\n"
          "                  [--stream-ttl-ms MS] [--keepalive-ms MS]\n"
          "A fake Hermes Agent API server on 127.0.0.1 (see tests/fakes/README.md).\n",
          f);
}

/* Reads the key: the first line of the file, trimmed; at least 16 visible characters. */
static char *read_key(const char *path)
{
    char buf[4096];
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "fake-agent: cannot read key file %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *nl = strpbrk(buf, "\r\n");
    if (nl)
        *nl = '\0';
    char *s = buf;
    while (isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    for (size_t k = 0; k < len; k++)
        if ((unsigned char)s[k] < 33 || (unsigned char)s[k] > 126) {
            fprintf(stderr,
                    "fake-agent: refusing to start: the key in %s has characters that "
                    "are not visible ASCII\n",
                    path);
            return NULL;
        }
    if (len < 16) {
        fprintf(stderr,
                "fake-agent: refusing to start: the key in %s is missing or shorter "
                "than 16 characters (API_SERVER_KEY rule)\n",
                path);
        return NULL;
    }
    return xstrdup(s);
}

static bool parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static void free_all(void)
{
    while (g.runs) {
        struct run *r = g.runs;
        g.runs = r->next;
        run_free(r);
    }
    while (g.idems) {
        struct idem *i = g.idems;
        g.idems = i->next;
        free(i->key);
        json_decref(i->status);
        free(i);
    }
    while (g.chat_idems) {
        struct chat_idem *e = g.chat_idems;
        g.chat_idems = e->next;
        free(e->key);
        outcome_cleanup(&e->oc);
        free(e);
    }
    for (size_t i = 0; i < g.nprofiles; i++) {
        free(g.profiles[i].name);
        free(g.profiles[i].key);
    }
    free(g.profiles);
    free(g.record_path);
    free(g.state_path);
}

static void set_scope(struct profile *p)
{
    struct sb s = {0};
    sb_adds(&s, p->name ? p->name : "default");
    sb_add(&s, "", 1); /* the NUL separator */
    sb_adds(&s, p->key);
    sha256_hex(s.p, s.len, p->scope);
    OPENSSL_cleanse(s.p, s.len);
    sb_free(&s);
}

static int parse_args(int argc, char **argv)
{
    const char *key_file = NULL;
    long v;

    g.port = 8642;
    g.max_concurrent = 10;
    g.retention_ms = 3600000;
    g.idem_retention_ms = 24L * 3600 * 1000;
    g.stream_ttl_ms = 300000;
    g.keepalive_ms = 30000;
    g.delay_scale = 1.0;
    g.profiles = xcalloc(1, sizeof(*g.profiles));
    g.nprofiles = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char name[40];
        const char *eq = strchr(a, '=');
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "fake-agent: unexpected argument %s\n", a);
            return 2;
        }
        if (eq && (size_t)(eq - a) < sizeof(name)) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            val = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", a);
            if (i + 1 >= argc) {
                fprintf(stderr, "fake-agent: %s needs a value\n", a);
                return 2;
            }
            val = argv[++i];
        }
        if (!strcmp(name, "--port")) {
            if (!parse_long(val, 0, 65535, &v))
                goto bad;
            g.port = (unsigned)v;
        } else if (!strcmp(name, "--key-file")) {
            key_file = val;
        } else if (!strcmp(name, "--profile")) {
            const char *sep = strchr(val, '=');
            size_t n = sep ? (size_t)(sep - val) : 0;
            if (n == 0 || n > 64 || !sep[1])
                goto bad;
            for (size_t k = 0; k < n; k++)
                if (!isalnum((unsigned char)val[k]) && val[k] != '_' && val[k] != '-' &&
                    val[k] != '.')
                    goto bad;
            char *pname = strndup(val, n);
            if (!strcmp(pname, "default") || find_profile(pname) >= 0) {
                fprintf(stderr, "fake-agent: profile %s is the default or given twice\n", pname);
                free(pname);
                return 2;
            }
            char *key = read_key(sep + 1);
            if (key == NULL) {
                free(pname);
                return 2;
            }
            g.profiles = realloc(g.profiles, (g.nprofiles + 1) * sizeof(*g.profiles));
            if (g.profiles == NULL)
                abort();
            g.profiles[g.nprofiles] = (struct profile){.name = pname, .key = key};
            set_scope(&g.profiles[g.nprofiles]);
            g.nprofiles++;
        } else if (!strcmp(name, "--record")) {
            free(g.record_path);
            g.record_path = xstrdup(val);
        } else if (!strcmp(name, "--state")) {
            free(g.state_path);
            g.state_path = xstrdup(val);
        } else if (!strcmp(name, "--max-concurrent")) {
            if (!parse_long(val, 0, 1000000, &g.max_concurrent))
                goto bad;
        } else if (!strcmp(name, "--retention-ms")) {
            if (!parse_long(val, 0, 1L << 40, &g.retention_ms))
                goto bad;
        } else if (!strcmp(name, "--idempotency-retention-ms")) {
            if (!parse_long(val, 0, 1L << 40, &g.idem_retention_ms))
                goto bad;
        } else if (!strcmp(name, "--stream-ttl-ms")) {
            if (!parse_long(val, 0, 1L << 40, &g.stream_ttl_ms))
                goto bad;
        } else if (!strcmp(name, "--keepalive-ms")) {
            if (!parse_long(val, 0, 1L << 40, &g.keepalive_ms))
                goto bad;
        } else if (!strcmp(name, "--delay-scale")) {
            char *end;
            g.delay_scale = strtod(val, &end);
            if (end == val || *end || !isfinite(g.delay_scale) || g.delay_scale < 0)
                goto bad;
        } else {
            fprintf(stderr, "fake-agent: unknown option %s\n", name);
            usage(stderr);
            return 2;
        }
        continue;
    bad:
        fprintf(stderr, "fake-agent: bad value for %s: %s\n", name, val);
        return 2;
    }
    if (key_file == NULL) {
        fprintf(stderr, "fake-agent: refusing to start: --key-file is required (API_SERVER_KEY)\n");
        usage(stderr);
        return 2;
    }
    g.profiles[0].key = read_key(key_file);
    if (g.profiles[0].key == NULL)
        return 2;
    set_scope(&g.profiles[0]);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = parse_args(argc, argv);
    if (rc != 0) {
        free_all();
        return rc;
    }
    hex_random(g.instance, 32);

    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g.mu, NULL);

    if (g.record_path) {
        g.record = fopen(g.record_path, "a");
        if (g.record == NULL) {
            fprintf(stderr, "fake-agent: cannot open record file %s: %s\n", g.record_path,
                    strerror(errno));
            free_all();
            return 2;
        }
    }
    state_load();

    /* every thread inherits this mask; the main thread takes the signals with sigwait */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
                             MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
                         (uint16_t)g.port, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR,
                         (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                         MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "fake-agent: cannot listen on 127.0.0.1:%u\n", g.port);
        if (g.record)
            fclose(g.record);
        free_all();
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = di ? di->port : g.port;
    printf("fake-agent listening on http://127.0.0.1:%u\n", port);
    fflush(stdout);

    pthread_t sweep;
    bool have_sweep = pthread_create(&sweep, NULL, sweeper, NULL) == 0;

    int sig = 0;
    sigwait(&set, &sig);

    lock();
    g.stopping = true;
    wake();
    unlock();
    MHD_stop_daemon(d); /* waiters see g.stopping; every connection thread is joined */
    if (have_sweep)
        pthread_join(sweep, NULL);
    for (;;) {
        pthread_t t;
        bool found = false;
        lock();
        for (struct run *r = g.runs; r; r = r->next)
            if (r->has_thread) {
                t = r->thread;
                r->has_thread = false;
                found = true;
                break;
            }
        unlock();
        if (!found)
            break;
        pthread_join(t, NULL);
    }
    if (g.record)
        fclose(g.record);
    free_all();
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
    return 0;
}
