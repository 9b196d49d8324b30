/* upstream.c — one upstream's life: its transport started (a stdio child, or Streamable HTTP
 * through httpup.c for a url upstream), the start-up handshake (server/discover for a
 * 2026-07-28 HTTP upstream, else initialize and notifications/initialized) within
 * connect_timeout, then discovery (uplist.c); going down (the child exits or misbehaves, the
 * HTTP upstream fails: every request in flight is answered "gone", both NULL) and coming back
 * (restarts with backoff, the circuit in circuit.c). Its JSON-RPC client is rpcclient.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "child.h"
#include "gwcore.h"
#include "gwinstance.h"
#include "jscan.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "strmap.h"
#include "toolerr.h"
#include "upstream.h"
#include "utf8.h"
#include "version.h"

static void on_exited(int status, void *arg)
{
    struct upstream *u = arg;
    char why[80];
    if (WIFSIGNALED(status))
        snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(why, sizeof why, "exited with status %d", WEXITSTATUS(status));
    up_down(u, why);
}

/* ---------- start-up: discover or initialize, then listing (uplist.c) ---------- */

static const char *text_or(json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : "?";
}

static void on_initialized(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    (void)arg;
    if (u->state != UP_STARTING)
        return;
    const char *version = json_string_value(json_object_get(result, "protocolVersion"));
    if (result == NULL || version == NULL) {
        up_down(u, error ? "initialize was refused" : "gone during initialize");
        return;
    }
    snprintf(u->protocol, sizeof u->protocol, "%s", version);
    utf8_clean(u->protocol);
    json_t *info = json_object_get(result, "serverInfo");
    log_info("upstream %s: initialized (%.40s %.20s, protocol %.20s)", u->cfg->name,
             text_or(json_object_get(info, "name")), text_or(json_object_get(info, "version")),
             version);
    up_notify(u, "notifications/initialized", NULL);
    up_list(u);
}

static bool send_initialize(struct upstream *u, char *err, size_t errlen);

/* The answer to server/discover: 2026-07-28 offered, we speak it (no initialize, no session);
 * anything else (an error, an HTTP 4xx, a list without it), the session era's initialize. */
static void on_discover(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    char err[100];
    size_t i;
    json_t *v;
    bool offered = false;
    (void)arg, (void)error;
    u->discover_id = 0;
    if (u->state != UP_STARTING)
        return;
    json_array_foreach(json_object_get(result, "supportedVersions"), i, v) offered =
        offered || (json_is_string(v) && strcmp(json_string_value(v), GW_MODERN) == 0);
    if (offered) {
        log_info("upstream %s: discovered (protocol %s)", u->cfg->name, GW_MODERN);
        snprintf(u->protocol, sizeof u->protocol, "%s", GW_MODERN);
        up_list(u);
        return;
    }
    log_info("upstream %s: no %s offered; initialize instead", u->cfg->name, GW_MODERN);
    u->modern = false;
    httpup_set_version(u->http, "");
    if (!send_initialize(u, err, sizeof err))
        log_error("upstream %s: %s", u->cfg->name, err);
}

static void on_connect_timeout(struct loop *l, void *arg)
{
    struct upstream *u = arg;
    char why[80];
    (void)l;
    u->connect_timer = NULL;
    snprintf(why, sizeof why, "not initialized and listed within connect_timeout (%u s)",
             u->cfg->connect_timeout_s);
    up_down(u, why);
}

/* What the HTTP transport tells the upstream. */
static void http_message(void *owner, json_t *msg, size_t len, uint64_t related)
{
    struct upstream *u = owner;
    u->related_id = related; /* a request on a call's stream belongs to that call (relay.c) */
    up_receive_parsed(u, msg, len);
    u->related_id = 0;
}

static void http_request_failed(void *owner, uint64_t id, const char *why)
{
    up_request_failed(owner, id, why);
}

static void http_down(void *owner, const char *why)
{
    up_down(owner, why);
}

static bool http_alive(void *owner)
{
    return ((struct upstream *)owner)->state != UP_DOWN;
}

static uint64_t http_next_id(void *owner)
{
    return ++((struct upstream *)owner)->next_id;
}

/* A stdio upstream's child, or a url upstream's HTTP transport (no session yet). */
static bool connect_transport(struct upstream *u, char *err, size_t errlen)
{
    char name[64];
    if (u->cfg->kind == GW_HTTP) {
        static const struct httpup_owner ops = {.message = http_message,
                                                .request_failed = http_request_failed,
                                                .down = http_down,
                                                .alive = http_alive,
                                                .next_id = http_next_id};
        u->http = u->http ? u->http : httpup_new(u->cfg, u->loop, &ops, u);
        httpup_start(u->http);
        return true;
    }
    snprintf(name, sizeof name, "upstream %s", u->cfg->name);
    struct child_spec spec = {.name = name,
                              .command = u->cfg->command,
                              .args = u->cfg->args,
                              .env = u->cfg->env,
                              .cwd = u->cfg->cwd};
    static const struct child_events ev = {
        .line = up_on_line, .oversized = up_on_oversized, .exited = on_exited};
    u->child = child_start(u->loop, &spec, &ev, u, err, errlen);
    return u->child != NULL;
}

bool up_start(struct upstream *u, char *err, size_t errlen)
{
    u->pending = u->pending ? u->pending : strmap_new();
    u->held = u->held ? u->held : strmap_new();
    u->rounds = u->rounds ? u->rounds : strmap_new();
    u->tools = u->tools ? u->tools : json_array();
    json_array_clear(u->tools); /* a restart lists again; the surface stays as built */
    u->resources = u->resources ? u->resources : json_array();
    json_array_clear(u->resources);
    u->prompts = u->prompts ? u->prompts : json_array();
    json_array_clear(u->prompts);
    u->templates = u->templates ? u->templates : json_array();
    json_array_clear(u->templates);
    u->pages = 0;
    u->protocol[0] = '\0';
    u->state = UP_STARTING;
    if (!connect_transport(u, err, errlen)) {
        u->state = UP_DOWN;
        return false;
    }
    u->connect_timer =
        loop_timer_add(u->loop, (uint64_t)u->cfg->connect_timeout_s * 1000, on_connect_timeout, u);
    u->modern = false;
    u->discover_id = 0;
    if (u->http) { /* probe for 2026-07-28 first (on_discover falls back to initialize) */
        u->modern = true;
        httpup_set_version(u->http, GW_MODERN);
        if (up_request(u, "server/discover", json_object(), on_discover, NULL, NULL,
                       &u->discover_id))
            return true;
        snprintf(err, errlen, "cannot send server/discover");
        up_down(u, err);
        return false;
    }
    return send_initialize(u, err, errlen);
}

/* The session era's handshake (stdio, or an HTTP upstream without 2026-07-28). */
static bool send_initialize(struct upstream *u, char *err, size_t errlen)
{
    /* sampling and elicitation: relayed to the client whose call asks (relay.c), refused
     * when that client lacks them. */
    json_t *params = json_pack("{s:s, s:{s:{}, s:{}}, s:{s:s, s:s}}", "protocolVersion",
                               GW_PROTOCOL, "capabilities", "sampling", "elicitation", "clientInfo",
                               "name", "hermes-mcp-gateway", "version", HM_VERSION);
    if (!up_request(u, "initialize", params, on_initialized, NULL, NULL, NULL)) {
        snprintf(err, errlen, "cannot send initialize");
        up_down(u, err);
        return false;
    }
    return true;
}

/* ---------- going down, coming back ---------- */

static void on_restart(struct loop *l, void *arg)
{
    struct upstream *u = arg;
    char err[300];
    (void)l;
    u->restart_timer = NULL;
    u->restarts++;
    log_info("upstream %s: restarting (attempt %u in a row)", u->cfg->name, u->failures);
    if (!up_start(u, err, sizeof err)) {
        free(u->error);
        u->error = xstrdup(err);
        log_event(EV_UPSTREAM_START_FAILED, LOG_FIELDS(LF_S("upstream", u->cfg->name)),
                  "upstream %s could not start: %s", u->cfg->name, err);
        up_schedule_restart(u);
    }
}

/* Exponential backoff with jitter: 0.5 s doubling to 30 s, each delay 75-125 %, so upstreams
 * that failed together do not come back in lockstep. */
unsigned up_backoff_ms(unsigned failures, unsigned *seed)
{
    uint64_t ms = GW_BACKOFF_MIN_MS;
    for (unsigned i = 0; i < failures && ms < GW_BACKOFF_MAX_MS; i++)
        ms *= 2;
    if (ms > GW_BACKOFF_MAX_MS)
        ms = GW_BACKOFF_MAX_MS;
    return (unsigned)(ms * 3 / 4 + (uint64_t)rand_r(seed) % (ms / 2 + 1));
}

/* Tests only (docs/guides/gateway.md): HERMES_TEST_GW_TIME_DIV, 2 to 100, divides the backoff
 * and the stable window, so a test sees a circuit open and close in seconds, not half a minute.
 * Unset, or any other value: 1. */
static unsigned time_div(void)
{
    const char *v = getenv("HERMES_TEST_GW_TIME_DIV");
    unsigned long n = v ? strtoul(v, NULL, 10) : 1;
    return n >= 2 && n <= 100 ? (unsigned)n : 1;
}

void up_schedule_restart(struct upstream *u)
{
    if (u->gw->stopping || u->refused || u->restart_timer)
        return;
    unsigned div = time_div();
    if (u->ready_since && loop_now(u->loop) - u->ready_since > GW_STABLE_MS / div)
        u->failures = 0;
    u->ready_since = 0;
    uint64_t ms = up_backoff_ms(u->failures, &u->seed) / div;
    u->failures++;
    log_event(EV_UPSTREAM_RESTART_SCHEDULED,
              LOG_FIELDS(LF_S("upstream", u->cfg->name), LF_N("delay_ms", ms)),
              "upstream %s: next start in %llu ms", u->cfg->name, (unsigned long long)ms);
    u->restart_timer = loop_timer_add(u->loop, ms, on_restart, u);
    gw_circuit_failed(u, ms);
}

static void reap(struct loop *l, void *arg)
{
    struct upstream *u = arg;
    (void)l;
    u->reap_timer = NULL;
    child_free(u->dead_child);
    u->dead_child = NULL;
}

/* The upstream stops serving: the child is killed (freed outside its own callbacks), calls in
 * flight and waiting are answered upstream_unavailable. */
void up_down(struct upstream *u, const char *why)
{
    if (u->state == UP_DOWN)
        return;
    log_event(EV_UPSTREAM_DOWN, LOG_FIELDS(LF_S("upstream", u->cfg->name)),
              "upstream %s is down: %s", u->cfg->name, why);
    free(u->error);
    u->error = xstrdup(why);
    u->state = UP_DOWN;
    loop_timer_cancel(u->connect_timer);
    u->connect_timer = NULL;
    if (u->child) {
        u->dead_child = u->child;
        u->child = NULL;
        if (u->reap_timer == NULL)
            u->reap_timer = loop_timer_add(u->loop, 0, reap, u);
    }
    if (u->http)
        httpup_reset(u->http); /* its transfers end; the session is forgotten */
    up_fail_pending(u);
    u->gw->events->fail_waiting(u);
    up_schedule_restart(u);
}

void up_cleanup(struct upstream *u)
{
    gw_smoke_cleanup(u);
    loop_timer_cancel(u->restart_timer);
    loop_timer_cancel(u->connect_timer);
    loop_timer_cancel(u->reap_timer);
    child_free(u->child);
    child_free(u->dead_child);
    httpup_free(u->http); /* ends its session (DELETE) */
    if (u->held) {
        u->gw->events->cleanup(u);
        strmap_free(u->held);
    }
    up_pending_free(u);
    json_decref(u->tools);
    json_decref(u->listed_at_start);
    json_decref(u->resources);
    json_decref(u->prompts);
    json_decref(u->templates);
    free(u->error);
    memset(u, 0, sizeof *u);
}
