/* app.c — the wiring both binaries share: loop, httpd, MCP engine, authentication, the
 * audit log, the approval queue and its control socket, and the providers (provider.h), set
 * up in order and torn down in reverse. Requests are router.c's, the probe pages probes.c's,
 * signals, reload and drain lifecycle.c's. */
#include "app_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "approvals.h"
#include "apprshare.h"
#include "audit.h"
#include "authserver.h"
#include "callgate.h"
#include "config.h"
#include "ctlsock.h"
#include "httpd.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "metrics.h"
#include "oautherr.h"
#include "oauthpg.h"
#include "oauthtokens.h"
#include "oidc.h"
#include "otel.h"
#include "passphrase.h"
#include "principal.h"
#include "ratelimit.h"
#include "reaper.h"
#include "replica.h"
#include "sdnotify.h"
#include "statekey.h"
#include "version.h"
#include "whoami.h"

#define MAX_BODY (256 * 1024)
#define IDLE_TIMEOUT_S 30
#define RATE_TABLE_MAX 10000
#define AUDIT_ROTATE_BYTES (5u * 1024u * 1024u)
#define AUDIT_KEEP 3

void app_reply_json(struct hreq *r, unsigned status, const char *json)
{
    hreq_reply(r, status, "application/json", json, strlen(json));
}

static void note_free(void *p)
{
    struct rpc_note *n = p;
    otel_span_discard(n->span); /* never answered */
    authn_who_cleanup(&n->id);
    free(n);
}

struct rpc_note *app_note(struct hreq *r)
{
    struct rpc_note *n = hreq_user(r);
    if (n == NULL) {
        n = xcalloc(1, sizeof *n);
        hreq_set_user(r, n, note_free);
    }
    return n;
}

/* Who sent r (mcp_set_caller): what tasks and sealed state are bound to (authn_caller). */
static const char *caller_name(struct hreq *r, void *arg)
{
    const struct rpc_note *n = hreq_user(r);
    (void)arg;
    return n ? authn_caller(&n->id) : NULL;
}

/* The tool filter (mcp_set_tool_filter): the request's principal must hold the tool's scope. */
static bool tool_allowed(struct hreq *r, const char *tool, const char *scope, bool refusing,
                         void *arg)
{
    struct app *a = arg;
    const struct rpc_note *n = hreq_user(r);
    const struct principal *p = n ? n->id.who : NULL;
    bool ok;

    if (!a->cfg->auth)
        return true;
    if (p == NULL)
        return false;
    if (scope && strcmp(scope, MCP_SCOPE_ANYONE) == 0)
        ok = true;
    else
        ok = principal_has_scope(p, scope);
    if (!ok && refusing) {
        char why[120];
        snprintf(why, sizeof why, "this credential may not call %s", tool);
        authn_challenge(a->authn, r, oauth_err_name(OAUTH_INSUFFICIENT_SCOPE), scope, why);
    }
    return ok;
}

/* The call gate (mcp_set_call_gate): the principal's limits (the tokens file's) and the
 * tool's own (a provider's, the gateway file's tools.limits), in callgate.c. Without
 * authentication every caller is one principal, "anonymous", with no limits of its own. */
static unsigned call_limited(struct hreq *r, const char *tool, void **ticket, void *arg)
{
    struct app *a = arg;
    const struct rpc_note *n = hreq_user(r);
    const struct principal *p = a->cfg->auth && n ? n->id.who : NULL;
    struct callgate_limits who = {0}, per_tool = {0};

    if (a->cfg->auth && p == NULL)
        return 0;
    if (p) {
        who.calls_per_min = p->calls_per_min;
        who.calls_in_flight = p->calls_in_flight;
    }
    EACH_PROVIDER(a, pr)
    {
        if (pr->ops->tool_limits && pr->ops->tool_limits(pr->self, tool, &per_tool.calls_per_min,
                                                         &per_tool.calls_in_flight))
            break;
    }
    if (!who.calls_per_min && !who.calls_in_flight && !per_tool.calls_per_min &&
        !per_tool.calls_in_flight)
        return 0;
    /* Behind a round-robin proxy each replica enforces its share (REPLICAS). */
    unsigned share = a->cfg->replicas;
    who.calls_per_min = ratelimit_share(who.calls_per_min, share);
    who.calls_in_flight = ratelimit_share(who.calls_in_flight, share);
    per_tool.calls_per_min = ratelimit_share(per_tool.calls_per_min, share);
    per_tool.calls_in_flight = ratelimit_share(per_tool.calls_in_flight, share);
    return callgate_enter(a->gate, p ? p->name : "anonymous", who, tool, per_tool,
                          loop_now(a->loop), ticket);
}

/* The release of call_limited's ticket: the call is no longer in flight. */
static void call_done(void *ticket, void *arg)
{
    struct app *a = arg;
    callgate_release(a->gate, ticket);
}

/* The agent filter (mcp_set_agent_filter): the agents the request's principal may delegate to
 * (agent NULL: every agent). */
static bool agent_allowed(struct hreq *r, const char *agent, void *arg)
{
    struct app *a = arg;
    const struct rpc_note *n = hreq_user(r);
    const struct principal *p = n ? n->id.who : NULL;

    if (!a->cfg->auth)
        return true;
    return p != NULL && principal_agent_allowed(p, agent);
}

/* What whoami answers (mcp_set_whoami): the principal r's credential resolved to. */
static json_t *whoami_of(struct hreq *r, void *arg)
{
    const struct rpc_note *n = hreq_user(r);
    (void)arg;
    if (n == NULL || n->id.who == NULL)
        return NULL;
    bool oidc = n->id.grant && strncmp(n->id.grant->name, OIDC_PRINCIPAL_PREFIX,
                                       sizeof OIDC_PRINCIPAL_PREFIX - 1) == 0;
    enum whoami_kind kind = oidc             ? WHOAMI_OIDC
                            : n->id.grant    ? WHOAMI_OAUTH
                            : n->id.who->all ? WHOAMI_OWNER
                                             : WHOAMI_TOKEN;
    return whoami_describe(n->id.who, kind, n->id.grant ? n->id.client_id : NULL);
}

/* What the engine told of a request (mcp_set_audit), for on_done. */
static void on_rpc_note(struct hreq *r, const char *rpc_method, const char *tool, const char *error,
                        void *arg)
{
    struct rpc_note *n = app_note(r);
    (void)arg;

    if (rpc_method)
        snprintf(n->rpc_method, sizeof n->rpc_method, "%s", rpc_method);
    if (tool)
        snprintf(n->tool, sizeof n->tool, "%s", tool);
    if (error)
        snprintf(n->error, sizeof n->error, "%s", error);
}

/* Tests only (README, "Testing"): HERMES_TEST_STATE_TTL_MS shortens how long a 2026-07-28
 * requestState (and so a gateway call held for its answer) lives; 0 (unset): the default. */
static unsigned test_state_ttl_ms(void)
{
    const char *ttl = getenv("HERMES_TEST_STATE_TTL_MS");
    unsigned long ms = ttl ? strtoul(ttl, NULL, 10) : 0;
    return ms > 600000 ? 600000 : (unsigned)ms;
}

/* The control socket's status: the providers' facts, merged. */
static json_t *providers_status(void *arg)
{
    struct app *a = arg;
    json_t *all = json_object();
    EACH_PROVIDER(a, p)
    {
        json_t *facts = p->ops->status ? p->ops->status(p->self) : NULL;
        if (facts)
            json_object_update(all, facts);
        json_decref(facts);
    }
    return all;
}

/* Whether some provider knows the upstream an OAuth client asks for (gateway:<name>). */
static bool providers_know_upstream(void *arg, const char *name)
{
    struct app *a = arg;
    EACH_PROVIDER(a, p)
    {
        if (p->ops->knows_upstream && p->ops->knows_upstream(p->self, name))
            return true;
    }
    return false;
}

/* The approval queue and its control socket. Without the socket the server still serves:
 * nothing can be approved, so whatever waits for an operator is denied at its timeout. */
static void open_approvals(struct app *a)
{
    char err[512] = "";
    a->approvals = approvals_new(a->loop, a->o->approvals_timeout_s);
    char *path = ctlsock_path(a->cfg->env_file);
    if (path)
        a->ctl = ctlsock_new(a->loop, path, a->approvals, err, sizeof err);
    else
        snprintf(err, sizeof err, "control socket: the env file's directory path is too long");
    if (!a->ctl)
        log_warn("%s; approvals cannot be answered", err);
    else {
        ctlsock_set_status(a->ctl, providers_status, a);
        a->reaper = reaper_start(a->loop, a->o->owned_child);
    }
    free(path);
}

static void audit_provider_event(void *arg, const struct provider_event *e)
{
    struct app *a = arg;
    audit_log_event(a->audit, &(struct audit_event){.event = e->event,
                                                    .principal = e->principal,
                                                    .upstream = e->upstream,
                                                    .tool = e->tool,
                                                    .upstream_tool = e->upstream_tool,
                                                    .status = e->status,
                                                    .decided_by = e->decided_by,
                                                    .duration_ms = e->duration_ms});
}

/* Each provider in order, each seeing the ones before it. */
static bool setup_providers(struct app *a)
{
    for (size_t i = 0; i < a->o->nproviders; i++) {
        const struct provider *p = &a->o->providers[i];
        struct provider_host h = {.mcp = a->mcp,
                                  .loop = a->loop,
                                  .approvals = a->approvals,
                                  .replica_id = replica_id(a->replica),
                                  .audit = audit_provider_event,
                                  .audit_arg = a,
                                  .before = a->o->providers,
                                  .nbefore = i};
        a->nsetup = i + 1; /* torn down even when its setup failed half-way */
        if (!p->ops->setup(p->self, &h))
            return false;
    }
    return true;
}

int app_run(const struct app_opts *o)
{
    struct app a = {.o = o, .cfg = o->cfg, .sigfd = -1};
    sigset_t mask;
    char err[512], sock_host[INET6_ADDRSTRLEN] = "";
    unsigned sock_port = 0;
    int rc = 1, sock_fd = -1;

    log_set_level(o->cfg->log_level);
    struct principals *who = principals_load(o->cfg->owner_token ? o->cfg->token_hash : NULL,
                                             o->cfg->tokens_file, err, sizeof err);
    if (who && !principals_check_issuers(who, o->cfg->oidc_issuers, err, sizeof err)) {
        principals_unref(who);
        who = NULL;
    }
    if (who == NULL) {
        log_error("%s", err);
        return 2;
    }
    if (o->cfg->auth && who->n == 0 && !o->cfg->oauth_issuer) {
        log_error("TOKENS_FILE %s names no principal and there is no MCP_AUTH_TOKEN nor "
                  "OAUTH_ISSUER_URL: no client could authenticate",
                  o->cfg->tokens_file);
        principals_unref(who);
        return 2;
    }
    if (o->cfg->oauth_issuer) {
        /* With a store the token file is not used: the store holds them, this is its cache. */
        a.oauth_tokens =
            tokenstore_open(o->cfg->store_url ? NULL : o->cfg->oauth_store, err, sizeof err);
        if (a.oauth_tokens == NULL) {
            log_error("%s", err);
            principals_unref(who);
            return 2;
        }
        a.oauth_resource = xasprintf("%s/mcp", o->cfg->oauth_issuer);
        bool know_upstreams = false; /* no provider with upstreams: any name */
        EACH_PROVIDER(&a, p)
        {
            know_upstreams = know_upstreams || p->ops->knows_upstream;
        }
        char *passphrase = passphrase_path_beside(o->cfg->oauth_store);
        char *clients = authserver_clients_path_beside(o->cfg->oauth_store);
        struct authserver_opts ao = {.issuer = o->cfg->oauth_issuer,
                                     .resource = a.oauth_resource,
                                     .passphrase_path = passphrase,
                                     .service = o->service,
                                     .tokens = a.oauth_tokens,
                                     .dcr = o->cfg->oauth_dcr,
                                     .clients_path = o->cfg->store_url ? NULL : clients,
                                     .static_client_id = o->cfg->oauth_client_id,
                                     .static_secret_hash = o->cfg->oauth_client_secret_hash,
                                     .redirect_schemes = o->cfg->oauth_redirect_schemes,
                                     .cimd = o->cfg->oauth_cimd,
                                     .cimd_ca_file = o->cfg->oauth_cimd_ca_file,
                                     .cimd_allow_hosts = o->cfg->oauth_cimd_allow_hosts,
                                     .access_ttl_s = o->cfg->oauth_access_ttl_s,
                                     .refresh_ttl_s = o->cfg->oauth_refresh_ttl_s,
                                     .upstream_known =
                                         know_upstreams ? providers_know_upstream : NULL,
                                     .upstream_arg = &a};
        a.oauth_server = authserver_new(&ao, err, sizeof err);
        free(passphrase);
        free(clients);
        if (a.oauth_server == NULL) {
            log_error("%s", err);
            principals_unref(who);
            tokenstore_free(a.oauth_tokens);
            free(a.oauth_resource);
            return 2;
        }
    }
    a.resource_url = app_resource_url(o->cfg);
    a.metadata_url = app_metadata_url(a.resource_url);
    a.authn = authn_new(&(struct authn_opts){.required = o->cfg->auth,
                                             .issuer = o->cfg->oauth_issuer,
                                             .tokens = a.oauth_tokens,
                                             .resource = a.oauth_resource,
                                             .metadata_url = a.metadata_url,
                                             .admit = app_admit_token,
                                             .admit_arg = &a},
                        who);
    rc = app_take_socket(&a, &sock_fd, sock_host, sizeof sock_host, &sock_port);
    if (rc != 0) {
        authn_free(a.authn);
        authserver_free(a.oauth_server);
        tokenstore_free(a.oauth_tokens);
        free(a.oauth_resource);
        free(a.resource_url);
        free(a.metadata_url);
        return rc;
    }
    rc = 1;
    app_raise_fd_limit();
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGCHLD); /* for the reaper (reaper.h); children get a clean mask */
    sigprocmask(SIG_BLOCK, &mask, NULL);

    a.loop = loop_new();
    a.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (a.loop == NULL || a.sigfd < 0) {
        log_error("cannot set up the event loop: %s", strerror(errno));
        goto out;
    }
    a.sigw = loop_watch_add(a.loop, a.sigfd, EPOLLIN, app_on_signal, &a);
    if (a.oauth_server)
        authserver_set_loop(a.oauth_server, a.loop);
    if (a.oauth_server && a.cfg->store_url) {
        a.oauth_pg = oauthpg_new(a.loop, a.cfg->store_url, a.cfg->store_password, a.oauth_tokens);
        if (a.oauth_pg == NULL) /* the token store is only a cache now: no store, no OAuth */
            goto out;
        authserver_set_store(a.oauth_server, a.oauth_pg);
        authn_set_store(a.authn, a.oauth_pg);
    }
    app_start_oidc(&a);
    a.replica = replica_start(a.loop, a.cfg->store_url, a.cfg->store_password);
    a.started = time(NULL);
    static const double bounds[] = {0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10, 60, 300, 1800};
    a.http_requests =
        metric_new("hermes_mcp_http_requests_total",
                   "HTTP requests answered, by path and status code", METRIC_COUNTER, NULL, 0);
    a.rpc_requests = metric_new("hermes_mcp_rpc_requests_total",
                                "JSON-RPC requests answered, by method, tool and outcome (ok, "
                                "a JSON-RPC error code or a tool error code)",
                                METRIC_COUNTER, NULL, 0);
    a.rpc_duration = metric_new("hermes_mcp_rpc_duration_seconds",
                                "Time from request to answer, by method and tool", METRIC_HISTOGRAM,
                                bounds, sizeof bounds / sizeof *bounds);
    a.principal_requests =
        metric_new("hermes_mcp_principal_requests_total",
                   "Authenticated HTTP requests, by principal (its name)", METRIC_COUNTER, NULL, 0);
    a.principal_limited =
        metric_new("hermes_mcp_principal_limited_total",
                   "Tool calls refused busy by a principal's limits, by principal "
                   "and limit",
                   METRIC_COUNTER, NULL, 0);
    a.limited = metric_new("hermes_mcp_limited_total",
                           "Tool calls refused busy by a principal's or a tool's limits, by "
                           "principal, tool and limit",
                           METRIC_COUNTER, NULL, 0);
    a.gate = callgate_new(a.principal_limited, a.limited);
    a.mcp_duration = app_trace_histogram();
    a.otel = otel_new(&o->cfg->otel, HM_VERSION, err, sizeof err);
    if (a.otel == NULL && err[0]) {
        log_error("%s", err);
        goto out;
    }
    if (a.otel) /* not the URL: it may carry credentials */
        log_info("tracing on: spans exported over OTLP/HTTP (%s)",
                 o->cfg->otel.protocol == OTEL_PROTO_JSON ? "http/json" : "http/protobuf");

    struct mcp_opts mo = {.name = o->service,
                          .version = HM_VERSION,
                          .sessions = o->cfg->sessions,
                          .public_hosts = o->cfg->public_hosts,
                          .call_timeout_ms = o->cfg->call_timeout_ms,
                          /* Without authentication every caller gets the same lists. */
                          .cache_public = !o->cfg->auth,
                          .state_ttl_ms = test_state_ttl_ms()};
    a.mcp = mcp_new(a.loop, &mo);
    if (a.cfg->store_url && !statekey_share(a.mcp, a.cfg->store_url, a.cfg->store_password))
        goto out;
    mcp_set_replica_name(a.mcp, o->cfg->replica_name);
    mcp_set_audit(a.mcp, on_rpc_note, &a);
    if (a.otel) {
        mcp_set_message_hook(a.mcp, app_trace_message, &a);
        mcp_set_span_of(a.mcp, app_trace_span_of, &a);
    }
    mcp_set_tool_filter(a.mcp, tool_allowed, &a);
    mcp_set_call_gate(a.mcp, call_limited, call_done, &a);
    mcp_set_agent_filter(a.mcp, agent_allowed, &a);
    mcp_set_caller(a.mcp, caller_name, &a);
    mcp_set_whoami(a.mcp, whoami_of, &a);
    /* Opened before setup: the gateway audits what it finds at start (a withheld tool). */
    if (o->cfg->audit_path)
        a.audit = audit_new(o->cfg->audit_path, AUDIT_ROTATE_BYTES, AUDIT_KEEP);
    open_approvals(&a);
    a.apprshare = apprshare_start(a.loop, a.cfg->store_url, a.cfg->store_password,
                                  replica_id(a.replica), a.approvals, a.ctl);
    if (!setup_providers(&a))
        goto out;
    if (a.draining) { /* SIGTERM while setting up (the gateway's start-up wait): never serve */
        log_info("stopped before listening");
        rc = 0;
        goto out;
    }

    struct httpd_opts ho = {.host = o->cfg->host,
                            .port = o->cfg->port,
                            .listen_fd = sock_fd,
                            .max_body = MAX_BODY,
                            .max_conns = o->cfg->max_conns,
                            .idle_timeout = IDLE_TIMEOUT_S,
                            .header_timeout_ms = o->cfg->header_timeout_ms,
                            .body_timeout_ms = o->cfg->body_timeout_ms,
                            .on_headers = app_on_headers,
                            .on_request = app_on_request,
                            .on_done = app_on_done,
                            .error_body = mcp_http_error_body,
                            .arg = &a};
    if (o->cfg->rate_per_min)
        a.rl =
            ratelimit_new(ratelimit_share(o->cfg->rate_per_min, o->cfg->replicas), RATE_TABLE_MAX);
    if (o->cfg->rate_auth_per_min)
        a.rl_auth = ratelimit_new(ratelimit_share(o->cfg->rate_auth_per_min, o->cfg->replicas),
                                  RATE_TABLE_MAX);
    a.httpd = httpd_new(a.loop, &ho, err, sizeof err);
    sock_fd = -1; /* httpd owns it now, or closed it */
    if (a.httpd == NULL) {
        log_error("%s", err);
        goto out;
    }
    const char *host = sock_host[0] ? sock_host : o->cfg->host;
    mcp_set_listen(a.mcp, host, httpd_port(a.httpd));
    bool v6 = strchr(host, ':') != NULL;
    char url[300];
    snprintf(url, sizeof url, "http://%s%s%s:%u/mcp", v6 ? "[" : "", host, v6 ? "]" : "",
             httpd_port(a.httpd));
    printf("%s: listening on %s\n", o->service, url);
    fflush(stdout);
    if (!o->cfg->auth)
        log_warn("authentication is off: anyone who can reach the port can call the tools");
    else if (!o->cfg->owner_token && a.oauth_server)
        log_info("no MCP_AUTH_TOKEN: no static owner token; the owner allows OAuth clients "
                 "with the consent passphrase (hermes-mcp oauth passwd) and uses the CLI");
    sdnotifyf("READY=1\nSTATUS=listening on %s", url);
    a.watchdog_ms = sdnotify_watchdog_ms();
    if (a.watchdog_ms)
        a.watchdog = loop_timer_add(a.loop, a.watchdog_ms, app_on_watchdog, &a);
    if (loop_run(a.loop) < 0) {
        log_error("event loop failed: %s", strerror(errno));
        goto out;
    }
    app_drain(&a);
    if (a.hurry) {
        /* Asked twice: the signalfd took the second one, and the loop no longer runs. Left
         * pending, it tells the teardown's bounded waits (child_reap_all) not to wait. */
        loop_watch_del(a.sigw);
        a.sigw = NULL;
        raise(SIGTERM);
    }
    rc = 0;
out:
    if (sock_fd >= 0)
        close(sock_fd);
    if (a.httpd) {
        /* Answer everything still waiting before the engine goes away. */
        httpd_shutdown(a.httpd);
    }
    /* The engine first: ending its sessions cancels the calls still running, and their
     * providers must still be there to hear it. */
    mcp_free(a.mcp);
    a.mcp = NULL;
    for (size_t i = a.nsetup; i-- > 0;) {
        if (o->providers[i].ops->teardown)
            o->providers[i].ops->teardown(o->providers[i].self);
    }
    httpd_free(a.httpd);
    app_stop_oidc(&a);           /* after httpd: no request waits on a provider any more */
    oauthpg_free(a.oauth_pg);    /* likewise: its last requests are answered to nobody */
    apprshare_stop(a.apprshare); /* before the queue and the socket it serves */
    replica_stop(a.replica);     /* the replica leaves the store's list */
    ctlsock_free(a.ctl);
    reaper_free(a.reaper);
    approvals_free(a.approvals); /* after teardown: providers withdraw what they queued */
    audit_free(a.audit, 2000);
    ratelimit_free(a.rl);
    ratelimit_free(a.rl_auth);
    callgate_free(a.gate);
    metric_free(a.http_requests);
    metric_free(a.rpc_requests);
    metric_free(a.rpc_duration);
    metric_free(a.principal_requests);
    metric_free(a.principal_limited);
    metric_free(a.limited);
    metric_free(a.mcp_duration);
    otel_free(a.otel, o->cfg->otel.delay_ms + o->cfg->otel.timeout_ms);
    authn_free(a.authn);
    authserver_free(a.oauth_server);
    tokenstore_free(a.oauth_tokens);
    free(a.oauth_resource);
    free(a.resource_url);
    free(a.metadata_url);
    loop_timer_cancel(a.watchdog);
    loop_watch_del(a.sigw);
    if (a.sigfd >= 0)
        close(a.sigfd);
    loop_free(a.loop);
    if (rc == 0)
        log_info("stopped");
    return rc;
}
