/* gw_provider.c — the gateway behind the provider interface. The file is read before the
 * server starts, so a file serve refuses stops it with one line; setup starts the upstreams,
 * whose names must not collide with the tools of the providers before it (the bridge's); a
 * reload reads the file again and judges those providers' tools by its bridge_tools. */
#include "gw_provider.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "dotenvfile.h"
#include "gateway.h"
#include "gwfile.h"
#include "gwload.h"
#include "log.h"
#include "mem.h"

struct gw_provider {
    struct gwfile file; /* as read at start; empty without a GATEWAY_FILE */
    char *gateway_file; /* GATEWAY_FILE, or NULL */
    char *env_file;     /* its placeholders' values */
    unsigned call_timeout_ms;
    struct gateway_store store; /* STORE_URL's, or none */
    struct gateway *g;          /* NULL without a GATEWAY_FILE */
    struct provider_host host;
};

static void log_lint(enum gwlint_level level, const char *line, void *arg)
{
    (void)arg;
    if (level == GWLINT_ERROR)
        fprintf(stderr, "hermes-mcp: %s\n", line);
    else if (level == GWLINT_WARN)
        log_warn("gateway: %s", line);
    else
        log_info("gateway: %s", line);
}

struct gw_provider *gw_provider_load(const char *gateway_file, const char *env_file,
                                     unsigned call_timeout_ms)
{
    char err[1024];
    unsigned mode;
    struct gw_provider *p = xcalloc(1, sizeof *p);
    if (gateway_file == NULL)
        return p;
    p->gateway_file = xstrdup(gateway_file);
    p->env_file = xstrdup(env_file);
    p->call_timeout_ms = call_timeout_ms;
    json_t *env = dotenvfile_read(env_file, &mode, err, sizeof err);
    bool ok = env && gwload_file(gateway_file, env, &p->file, err, sizeof err);
    json_decref(env);
    if (!ok)
        fprintf(stderr, "hermes-mcp: %s\n", err);
    else if (!gwload_lint(&p->file, gateway_file, call_timeout_ms, log_lint, NULL))
        ok = false;
    if (!ok) {
        gw_provider_free(p);
        return NULL;
    }
    return p;
}

void gw_provider_free(struct gw_provider *p)
{
    if (p == NULL)
        return;
    gwfile_cleanup(&p->file);
    free(p->gateway_file);
    free(p->env_file);
    free(p);
}

void gw_provider_set_store(struct gw_provider *p, const char *url, const char *password)
{
    p->store = (struct gateway_store){.url = url, .password = password};
}

bool gw_provider_keeps(const char *tool, void *arg)
{
    struct gw_provider *p = arg;
    return gw_bridge_tool_kept(&p->file, tool); /* an alias comes as its tool */
}

unsigned gw_provider_approvals_timeout_s(const struct gw_provider *p)
{
    return p->file.approvals_timeout_s;
}

/* The gateway's events as audit lines: its principal is the one the engine bound the call to
 * ("p:NAME"); a token digest is not a name and is left out. */
static void audit_event(const struct gw_event *e, void *arg)
{
    static const char *const names[] = {[GW_EVENT_CALL] = "gateway_call",
                                        [GW_EVENT_WITHHELD] = "gateway_withheld",
                                        [GW_EVENT_ACCEPTED] = "gateway_accepted",
                                        [GW_EVENT_APPROVAL] = "approval"};
    struct gw_provider *p = arg;
    const char *principal = e->caller && strncmp(e->caller, "p:", 2) == 0 ? e->caller + 2 : NULL;
    p->host.audit(p->host.audit_arg,
                  &(struct provider_event){.event = names[e->kind],
                                           .principal = principal,
                                           .upstream = e->upstream,
                                           .tool = e->tool,
                                           .upstream_tool = e->upstream_tool,
                                           .status = e->status,
                                           .decided_by = e->decided_by,
                                           .duration_ms = e->kind == GW_EVENT_CALL
                                                              ? (double)e->duration_us / 1000.0
                                                              : -1});
}

/* The tools of the providers before this one: registered ones (all false), or every one they
 * could offer with the name bridge_tools judges it by (all true; judged may be NULL). New
 * arrays of borrowed names. */
static const char **before_tools(const struct provider_host *h, bool all, const char ***judged,
                                 size_t *n)
{
    size_t total = 0, k = 0, m;
    for (size_t i = 0; i < h->nbefore; i++)
        if (h->before[i].ops->tools && h->before[i].ops->tools(h->before[i].self, all, &m))
            total += m;
    const char **names = xcalloc(total ? total : 1, sizeof *names);
    if (judged)
        *judged = xcalloc(total ? total : 1, sizeof **judged);
    for (size_t i = 0; i < h->nbefore; i++) {
        const struct provider *b = &h->before[i];
        const char *const *t = b->ops->tools ? b->ops->tools(b->self, all, &m) : NULL;
        for (size_t j = 0; t && j < m && k < total; j++, k++) {
            names[k] = t[j];
            if (judged)
                (*judged)[k] = b->ops->judged_as ? b->ops->judged_as(b->self, t[j]) : t[j];
        }
    }
    *n = k;
    return names;
}

static bool setup(void *self, const struct provider_host *h)
{
    struct gw_provider *p = self;
    size_t n;
    p->host = *h;
    if (p->file.doc == NULL)
        return true;
    const char **taken = before_tools(h, false, NULL, &n);
    p->store.replica_id = h->replica_id;
    p->g = gateway_new(h->mcp, h->loop, &p->file, p->gateway_file, &p->store, taken, n, audit_event,
                       p);
    free(taken);
    if (p->g)
        gateway_set_approvals(p->g, h->approvals);
    return p->g != NULL;
}

/* SIGHUP: GATEWAY_FILE again, read and checked as at start (gateway_reload_file applies what
 * it can); a file serve would refuse keeps the running configuration, said in one line. */
static void reload_file(struct gw_provider *p)
{
    char err[1024];
    unsigned mode;
    struct gwfile *f = xcalloc(1, sizeof *f);
    json_t *env = dotenvfile_read(p->env_file, &mode, err, sizeof err);
    bool ok = env && gwload_for_serve(p->gateway_file, env, p->call_timeout_ms, f, err, sizeof err);
    json_decref(env);
    if (!ok) {
        log_event(EV_RELOAD_REJECTED, LOG_FIELDS(LF_S("config", "gateway")),
                  "gateway: reload failed, keeping the running gateway configuration: %s", err);
        free(f);
        return;
    }
    size_t n; /* every tool the others have, kept or not: bridge_tools is judged on all again */
    const char **judged;
    const char **offered = before_tools(&p->host, true, &judged, &n);
    gateway_reload_file(p->g, f, p->gateway_file, offered, judged, n);
    free(offered);
    free(judged);
}

static void reload(void *self)
{
    struct gw_provider *p = self;
    if (p->g) {
        reload_file(p);
        gateway_reload_pins(p->g); /* after `hermes-mcp gateway accept` */
    }
}

/* The gateway:<upstream> scopes an OAuth client may ask for: the upstreams of GATEWAY_FILE as
 * read at start, disabled ones too (a new one needs a restart, as its tools do). */
static bool knows_upstream(void *self, const char *name)
{
    struct gw_provider *p = self;
    for (size_t i = 0; i < p->file.nup; i++)
        if (strcmp(p->file.up[i].name, name) == 0)
            return true;
    for (size_t i = 0; i < p->file.noff; i++)
        if (strcmp(p->file.off[i].name, name) == 0)
            return true;
    return false;
}

/* The control socket's status (doctor, gateway check): what waits for a restart. */
static json_t *status(void *self)
{
    struct gw_provider *p = self;
    return json_pack("{s:o}", "gateway_restart_needed", gateway_restart_needed(p->g));
}

static void metrics(void *self, struct buf *out)
{
    struct gw_provider *p = self;
    gateway_metrics(p->g, out);
}

static bool ready(void *self, struct buf *out)
{
    struct gw_provider *p = self;
    if (p->g)
        return gateway_ready(p->g, out);
    buf_appends(out, "{}");
    return true;
}

static void drain(void *self)
{
    struct gw_provider *p = self;
    gateway_drain(p->g);
}

static size_t draining_work(void *self)
{
    struct gw_provider *p = self;
    return gateway_tasks_running(p->g);
}

static bool tool_limits(void *self, const char *tool, unsigned *calls_per_min,
                        unsigned *calls_in_flight)
{
    struct gw_provider *p = self;
    return gateway_tool_limits(p->g, tool, calls_per_min, calls_in_flight);
}

static void teardown(void *self)
{
    struct gw_provider *p = self;
    gateway_free(p->g);
    p->g = NULL;
}

const struct provider_ops gw_provider_ops = {.name = "gateway",
                                             .setup = setup,
                                             .reload = reload,
                                             .drain = drain,
                                             .draining_work = draining_work,
                                             .metrics = metrics,
                                             .ready = ready,
                                             .status = status,
                                             .knows_upstream = knows_upstream,
                                             .tool_limits = tool_limits,
                                             .teardown = teardown};
