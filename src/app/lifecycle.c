/* lifecycle.c — the server's life after start: signals (SIGHUP reloads the env file and the
 * providers, SIGTERM drains, a second one ends the drain), the systemd watchdog, socket
 * activation and the fd limit. */
#include "app_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "approvals.h"
#include "config.h"
#include "httpd.h"
#include "jrpc.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "principal.h"
#include "reaper.h"
#include "sdlisten.h"
#include "sdnotify.h"
#include "weburl.h"

static void reload(struct app *a)
{
    struct config fresh;
    char err[512];

    if (a->cfg->env_file == NULL) {
        log_info("SIGHUP: no env file to reload");
        return;
    }
    sdnotify_reloading();
    if (!config_load(&fresh, a->cfg->env_file, err, sizeof err)) {
        log_event(EV_RELOAD_REJECTED, LOG_FIELDS(LF_S("config", "env")),
                  "reload failed, keeping the current settings: %s", err);
        sdnotify("READY=1\nSTATUS=reload failed; running with the previous settings");
        return;
    }
    /* A file that lost its token must not turn authentication off, nor leave only a way in
     * that this process does not serve (OAUTH_ISSUER_URL takes effect at a restart). */
    if (a->cfg->auth && !fresh.owner_token && !fresh.tokens_file && a->oauth_server == NULL) {
        /* The three ways in, as serve names them at start (serve.c). */
        const char *f = a->cfg->env_file;
        if (fresh.oauth_issuer)
            log_event(EV_RELOAD_REJECTED, LOG_FIELDS(LF_S("config", "env")),
                      "reload failed, keeping the current settings: %s has no MCP_AUTH_TOKEN nor "
                      "TOKENS_FILE, and its OAUTH_ISSUER_URL takes effect only at a restart (set "
                      "the consent passphrase with hermes-mcp oauth passwd --env-file %s, then "
                      "restart), or create a token with: hermes-mcp token gen --env-file %s, or "
                      "set TOKENS_FILE",
                      f, f, f);
        else
            log_event(EV_RELOAD_REJECTED, LOG_FIELDS(LF_S("config", "env")),
                      "reload failed, keeping the current settings: no MCP_AUTH_TOKEN, TOKENS_FILE "
                      "or OAUTH_ISSUER_URL in %s, so no client could authenticate; set TOKENS_FILE "
                      "again, or create a token with: hermes-mcp token gen --env-file %s (or set "
                      "OAUTH_ISSUER_URL, then: hermes-mcp oauth passwd --env-file %s, and restart)",
                      f, f, f);
        config_cleanup(&fresh);
        sdnotify("READY=1\nSTATUS=reload failed; running with the previous settings");
        return;
    }
    struct principals *who = principals_load(fresh.owner_token ? fresh.token_hash : NULL,
                                             fresh.tokens_file, err, sizeof err);
    if (who && !principals_check_issuers(who, a->cfg->oidc_issuers, err, sizeof err)) {
        principals_unref(who);
        who = NULL;
    }
    if (who && who->n == 0 && a->oauth_server == NULL) {
        snprintf(err, sizeof err,
                 "TOKENS_FILE %s names no principal and there is no "
                 "MCP_AUTH_TOKEN: no client could authenticate",
                 fresh.tokens_file);
        principals_unref(who);
        who = NULL;
    }
    if (who == NULL) {
        /* A broken tokens file must not lock the roles out, nor let anyone new in. */
        log_event(EV_RELOAD_REJECTED, LOG_FIELDS(LF_S("config", "env")),
                  "reload failed, keeping the current settings: %s", err);
        config_cleanup(&fresh);
        sdnotify("READY=1\nSTATUS=reload failed; running with the previous settings");
        return;
    }
    authn_set_principals(a->authn, who);
    /* Only what can change without re-binding takes effect; say what does not. */
    char keys[512];
    if (config_restart_keys(a->cfg, &fresh, keys, sizeof keys))
        log_event(EV_RELOAD_RESTART_NEEDED, LOG_FIELDS(LF_S("config", "env"), LF_S("keys", keys)),
                  "reload: %s changed; restart to apply", keys);
    a->cfg->owner_token = fresh.owner_token;
    memcpy(a->cfg->token_hash, fresh.token_hash, sizeof fresh.token_hash);
    free(a->cfg->tokens_file);
    a->cfg->tokens_file = fresh.tokens_file;
    fresh.tokens_file = NULL;
    log_set_level(fresh.log_level);
    a->cfg->drain_grace_s = fresh.drain_grace_s;               /* read when the drain starts */
    a->cfg->tasks_retention_days = fresh.tasks_retention_days; /* read at each prune */
    a->cfg->tasks_max = fresh.tasks_max;
    /* A tunnel's new public name must not need a restart (README: add it, reload). */
    mcp_set_public_hosts(a->mcp, fresh.public_hosts);
    free(a->cfg->public_hosts);
    a->cfg->public_hosts = fresh.public_hosts;
    fresh.public_hosts = NULL;
    config_cleanup(&fresh);
    log_event(EV_RELOAD_APPLIED, LOG_FIELDS(LF_S("config", "env"), LF_S("file", a->cfg->env_file)),
              "reloaded %s", a->cfg->env_file);
    EACH_PROVIDER(a, p)
    {
        if (p->ops->reload)
            p->ops->reload(p->self);
    }
    sdnotifyf("READY=1\nSTATUS=reloaded %s", a->cfg->env_file);
}

void app_on_signal(struct loop *l, int fd, uint32_t events, void *arg)
{
    struct app *a = arg;
    struct signalfd_siginfo si;
    (void)events;

    while (read(fd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) {
            reaper_on_sigchld(a->reaper); /* adopted orphans, not the children it owns */
        } else if (si.ssi_signo == SIGHUP) {
            if (a->draining)
                log_event(EV_RELOAD_IGNORED, NULL, "SIGHUP while draining: ignored");
            else
                reload(a);
        } else if (!a->draining) {
            log_event(EV_STOP_REQUESTED,
                      LOG_FIELDS(LF_S("signal", sigabbrev_np((int)si.ssi_signo))),
                      "received %s, draining", strsignal((int)si.ssi_signo));
            a->draining = true;
            loop_stop(l);
        } else {
            log_event(EV_DRAIN_FORCED, LOG_FIELDS(LF_S("signal", sigabbrev_np((int)si.ssi_signo))),
                      "received %s again: ending the drain now", strsignal((int)si.ssi_signo));
            a->hurry = true;
        }
    }
}

void app_on_watchdog(struct loop *l, void *arg)
{
    struct app *a = arg;
    /* Sent from the loop, so a loop that hangs stops feeding it and systemd restarts us. */
    sdnotify("WATCHDOG=1");
    a->watchdog = loop_timer_add(l, a->watchdog_ms, app_on_watchdog, a);
}

static bool busy(struct app *a)
{
    if (mcp_calls_active(a->mcp) > 0 || httpd_receiving(a->httpd) > 0)
        return true;
    EACH_PROVIDER(a, p)
    {
        if (p->ops->draining_work && p->ops->draining_work(p->self) > 0)
            return true;
    }
    return false;
}

/* SIGTERM: stop taking work, give the calls in flight up to MCP_DRAIN_GRACE_S to finish. What
 * is still running afterwards is answered by the shutdown that follows (503, or an error on the
 * call's SSE stream). Async runs are on disk and are followed again after the next start. */
void app_drain(struct app *a)
{
    uint64_t grace_ms = (uint64_t)a->cfg->drain_grace_s * 1000u;
    uint64_t t0 = loop_now(a->loop);
    uint64_t started = mcp_calls_started(a->mcp);
    size_t waiting = mcp_calls_active(a->mcp);

    httpd_drain(a->httpd);
    mcp_end_subscriptions(a->mcp); /* they would only end at the grace's end */
    /* No operator answers a stopping server: what waits for one is denied now, not cut off. */
    size_t denied = approvals_deny_all(a->approvals, "server stopping", APPROVALS_BY_SHUTDOWN);
    if (denied)
        log_info("drain: %zu request%s waiting for approval denied (server stopping)", denied,
                 denied == 1 ? "" : "s");
    EACH_PROVIDER(a, p)
    {
        if (p->ops->drain)
            p->ops->drain(p->self); /* the gateway answers the calls it has not sent yet */
    }
    sdnotifyf("STOPPING=1\nSTATUS=draining: %zu call%s in flight", waiting,
              waiting == 1 ? "" : "s");
    log_event(EV_DRAIN_STARTED,
              LOG_FIELDS(LF_N("calls", waiting), LF_N("grace_s", a->cfg->drain_grace_s)),
              "drain: %zu call%s in flight, up to %u s for them to finish; new connections are "
              "refused",
              waiting, waiting == 1 ? "" : "s", a->cfg->drain_grace_s);
    while (!a->hurry && busy(a)) {
        uint64_t spent = loop_now(a->loop) - t0;
        if (spent >= grace_ms)
            break;
        uint64_t left = grace_ms - spent;
        if (loop_once(a->loop, left > 1000 ? 1000 : (int)left) < 0)
            break;
    }
    size_t total = waiting + (size_t)(mcp_calls_started(a->mcp) - started);
    size_t cut = mcp_calls_active(a->mcp);
    log_event(EV_DRAIN_OVER,
              LOG_FIELDS(LF_N("ms", loop_now(a->loop) - t0), LF_N("finished", total - cut),
                         LF_N("calls", total), LF_N("cut_off", cut)),
              "drain over after %llu ms: %zu of %zu call%s finished, %zu cut off",
              (unsigned long long)(loop_now(a->loop) - t0), total - cut, total,
              total == 1 ? "" : "s", cut);
    mcp_abort_streams(a->mcp, JRPC_SHUTTING_DOWN, "Server is shutting down; retry the call");
}

/* Socket activation: serve on the socket systemd passed, under the same loopback rule as
 * MCP_HOST. Returns 0 to go on (*fd -1 when there is none), or an exit code. */
int app_take_socket(struct app *a, int *fd, char *host, size_t hostlen, unsigned *port)
{
    char err[512];

    if (!sdlisten_claim(fd, host, hostlen, port, err, sizeof err)) {
        log_error("%s", err);
        return 2;
    }
    if (*fd < 0)
        return 0;
    if (!weburl_loopback_host(host) && !a->cfg->allow_remote) {
        log_error("the socket passed by systemd listens on %s, not a loopback address; use "
                  "ListenStream=127.0.0.1:PORT, or set MCP_ALLOW_NON_LOOPBACK=1",
                  host);
        close(*fd);
        *fd = -1;
        return 2;
    }
    if (!weburl_loopback_host(host))
        log_event(EV_LISTEN_EXPOSED, LOG_FIELDS(LF_S("addr", host)),
                  "LISTENING BEYOND LOOPBACK on %s (socket passed by systemd): anyone who can "
                  "reach it is one token away from your agent",
                  host);
    log_info("serving on the socket passed by systemd; MCP_HOST and MCP_PORT are not used");
    return 0;
}

void app_raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}
