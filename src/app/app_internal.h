/* app_internal.h — what the files of the app share: the server's state (struct app) and the
 * entry points of its parts. app.c wires them; router.c routes each request (route table,
 * rate limits, client address, per-request metrics and audit); probes.c answers /health,
 * /healthz, /readyz and /metrics; lifecycle.c handles signals, reload, drain and the
 * watchdog. Authentication is src/auth/authn.c's. */
#ifndef HM_APP_INTERNAL_H
#define HM_APP_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "app.h"
#include "authn.h"
#include "provider.h"

struct hreq;
struct loop;

struct app {
    const struct app_opts *o;
    struct config *cfg;
    struct loop *loop;
    struct httpd *httpd;
    struct mcp_server *mcp;
    int sigfd;
    struct loop_watch *sigw;
    struct ratelimit *rl;      /* per client IP: requests without a valid credential */
    struct ratelimit *rl_auth; /* per credential: authenticated requests */
    struct callgate *gate;     /* tools/call at a principal's or a tool's limits */
    struct audit *audit;
    struct approvals *approvals; /* the operator's queue, answered through ctl */
    struct ctlsock *ctl;         /* NULL when the socket could not be made: requests time out */
    struct reaper *reaper;       /* keeps detached descendants below us (see reaper.h) */
    struct authn *authn; /* who the bearer tokens are (MCP_AUTH_TOKEN, TOKENS_FILE, OAuth) */
    struct tokenstore *oauth_tokens; /* with OAUTH_ISSUER_URL: the tokens issued, by hash */
    char *oauth_resource;            /* <issuer>/mcp: the audience an access token must name */
    struct authserver *oauth_server; /* with OAUTH_ISSUER_URL: /authorize, /token, /register */
    struct oauthpg *oauth_pg;        /* with it and STORE_URL: the OAuth state in the store */
    struct otel *otel;               /* with OTEL_EXPORTER_OTLP_*ENDPOINT: the tracer, else NULL */
    struct metric *mcp_duration;     /* mcp.server.operation.duration (tracing.c) */
    struct replica *replica;         /* with STORE_URL: this server's heartbeat there */
    struct apprshare *apprshare;     /* with STORE_URL: the approval queue every replica shares */
    struct oidc *oidc;               /* with OIDC_ISSUER_URL: external providers' tokens */
    struct httpc *oidc_http;         /* its fetches */
    char *resource_url;              /* the resource the protected resource metadata names */
    char *metadata_url;              /* where that metadata is, for 401 challenges; or NULL */
    uint64_t rate_limited, auth_failures;
    struct metric *http_requests, *rpc_requests, *rpc_duration, *principal_requests,
        *principal_limited, *limited;
    time_t started;
    struct loop_timer *watchdog;
    unsigned watchdog_ms;
    bool draining; /* SIGTERM seen: calls in flight are finishing */
    bool hurry;    /* a second SIGTERM/SIGINT: end the drain now */
    size_t nsetup; /* providers whose setup ran, torn down in reverse */
};

#define EACH_PROVIDER(a, p)                                                                        \
    for (const struct provider *p = (a)->o->providers; p < (a)->o->providers + (a)->o->nproviders; \
         p++)

/* What the app knows of a request, kept in its user slot (httpd frees it when the request is
 * done): who its token named, and what the engine told of it (mcp_set_audit), for on_done.
 * The principal's set is held, so a reload in between cannot free it. */
struct rpc_note {
    struct authn_who id;
    char rpc_method[40], tool[72], error[40];
    struct otel_span *span; /* with tracing: the request's SERVER span (tracing.c) */
    bool span_oauth;        /* it is an OAuth endpoint's */
};
/* r's note, made on first use. */
struct rpc_note *app_note(struct hreq *r);
void app_reply_json(struct hreq *r, unsigned status, const char *json);

/* router.c: the httpd callbacks, and the client's address (trusted proxies considered). */
void app_on_headers(struct hreq *r, void *arg);
void app_on_request(struct hreq *r, void *arg);
void app_on_done(struct hreq *r, unsigned status, uint64_t duration_ms, void *arg);
/* authn's admit hook: a new identity provider's token costs a request of its address's rate
 * (RATE_LIMIT_PER_MIN) before it is verified or a provider is asked; false when over it (r is
 * then answered 429). */
bool app_admit_token(struct hreq *r, void *arg);
/* r's client address: X-Forwarded-For's last untrusted hop behind TRUSTED_PROXIES, else the
 * peer. */
void app_client_ip(struct app *a, struct hreq *r, char *out, size_t outlen);

/* tracing.c: the request's span and the operation duration histogram. */
struct metric *app_trace_histogram(void);
void app_trace_start(struct app *a, struct hreq *r);
void app_trace_message(struct hreq *r, json_t *msg, void *arg); /* mcp_set_message_hook */
struct otel_span *app_trace_span_of(struct hreq *r, void *arg); /* mcp_set_span_of */
void app_trace_done(struct app *a, struct hreq *r, unsigned status, uint64_t duration_ms);

/* probes.c: the pages of a route (router.c's table). */
void app_health_page(struct app *a, struct hreq *r);
void app_healthz_page(struct app *a, struct hreq *r);
void app_readyz_page(struct app *a, struct hreq *r);
void app_metrics_page(struct app *a, struct hreq *r);

/* identity.c */
char *app_resource_url(const struct config *cfg);
char *app_metadata_url(const char *resource);
void app_start_oidc(struct app *a); /* with OIDC_ISSUER_URL, once the loop runs */
void app_stop_oidc(struct app *a);

/* lifecycle.c */
void app_on_signal(struct loop *l, int fd, uint32_t events, void *arg);
void app_on_watchdog(struct loop *l, void *arg);
/* SIGTERM: stop taking work, give the calls in flight up to MCP_DRAIN_GRACE_S to finish. */
void app_drain(struct app *a);
/* Socket activation: 0 to go on (*fd -1 when there is none), or an exit code. */
int app_take_socket(struct app *a, int *fd, char *host, size_t hostlen, unsigned *port);
void app_raise_fd_limit(void);

#endif
