/* probes.c — the pages a supervisor or a scraper reads: /health (the service and its
 * counters), /healthz and /readyz (liveness and readiness, naming each upstream's state and
 * nothing secret), /metrics (Prometheus text, behind a token holding hermes:admin). The router
 * checked the method and who asks. */
#include "app_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "audit.h"
#include "buf.h"
#include "httpd.h"
#include "mcp.h"
#include "metrics.h"
#include "otel.h"
#include "replica.h"
#include "version.h"

/* The providers' readiness objects: one as it is, several merged ("{}" when none has one). */
static bool providers_ready(struct app *a, struct buf *out)
{
    bool ready = true;
    size_t n = 0;
    EACH_PROVIDER(a, p)
    {
        n += p->ops->ready != NULL;
    }
    if (n <= 1) {
        EACH_PROVIDER(a, p)
        {
            if (p->ops->ready)
                return p->ops->ready(p->self, out);
        }
        buf_appends(out, "{}");
        return true;
    }
    json_t *all = json_object();
    EACH_PROVIDER(a, p)
    {
        struct buf one;
        if (!p->ops->ready)
            continue;
        buf_init(&one, 0);
        ready = p->ops->ready(p->self, &one) && ready;
        json_t *o = one.data ? json_loads(one.data, 0, NULL) : NULL;
        json_object_update(all, o);
        json_decref(o);
        buf_cleanup(&one);
    }
    char *text = json_dumps(all, JSON_COMPACT);
    buf_appends(out, text ? text : "{}");
    free(text);
    json_decref(all);
    return ready;
}

void app_health_page(struct app *a, struct hreq *r)
{
    char body[4096], extra[3072] = "";

    EACH_PROVIDER(a, p)
    {
        size_t used = strlen(extra);
        if (p->ops->health)
            p->ops->health(p->self, extra + used, sizeof extra - used);
    }
    snprintf(body, sizeof body,
             "{\"status\":\"ok\",\"service\":\"%s\",\"version\":\"%s\",\"tools\":%zu,"
             "\"audit\":{\"enabled\":%s,\"dropped\":%llu},\"rate_limited\":%llu%s}",
             a->o->service, HM_VERSION, mcp_tool_count(a->mcp), a->audit ? "true" : "false",
             (unsigned long long)audit_dropped(a->audit), (unsigned long long)a->rate_limited,
             extra);
    hreq_add_header(r, "Cache-Control", "no-store");
    app_reply_json(r, 200, body);
}

/* GET /healthz: 200 while the process runs, whatever the upstreams do. GET /readyz: 200 only
 * when every required upstream is ready, else 503. Both without auth (probes of a supervisor
 * or tunnel), both naming each upstream's state and nothing secret. */
static void probe(struct app *a, struct hreq *r, bool readiness)
{
    struct buf states, body;
    buf_init(&states, 0);
    buf_init(&body, 0);
    bool ready = providers_ready(a, &states);
    /* With STORE_URL a replica whose database is away is not ready: a proxy or supervisor
     * that reads /readyz sends the traffic elsewhere until it reconnects. */
    bool store_up = replica_store_up(a->replica);
    ready = ready && store_up;
    buf_printf(&body, "{\"status\":\"%s\",\"upstreams\":%s%s}",
               !readiness ? "ok"
               : ready    ? "ready"
                          : "not_ready",
               states.data,
               a->replica == NULL ? ""
               : store_up         ? ",\"store\":\"up\""
                                  : ",\"store\":\"down\"");
    if (readiness && !store_up) {
        char retry[16];
        unsigned s = (replica_retry_in_ms(a->replica) + 999) / 1000;
        snprintf(retry, sizeof retry, "%u", s ? s : 1);
        hreq_add_header(r, "Retry-After", retry);
    }
    hreq_add_header(r, "Cache-Control", "no-store");
    app_reply_json(r, readiness && !ready ? 503 : 200, body.data);
    buf_cleanup(&states);
    buf_cleanup(&body);
}

void app_healthz_page(struct app *a, struct hreq *r)
{
    probe(a, r, false);
}

void app_readyz_page(struct app *a, struct hreq *r)
{
    probe(a, r, true);
}

static void gauge(struct buf *out, const char *name, const char *help, double v)
{
    metric_render_value(out, name, help, METRIC_GAUGE, v);
}

static void counter(struct buf *out, const char *name, const char *help, double v)
{
    metric_render_value(out, name, help, METRIC_COUNTER, v);
}

static double resident_bytes(void)
{
    unsigned long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

/* GET /metrics: Prometheus text format, behind the bearer token like /mcp. */
void app_metrics_page(struct app *a, struct hreq *r)
{
    struct httpd_stats st;
    struct buf out;

    buf_init(&out, 0);
    buf_printf(&out,
               "# HELP hermes_mcp_build_info The running version\n"
               "# TYPE hermes_mcp_build_info gauge\n"
               "hermes_mcp_build_info{service=\"%s\",version=\"%s\"} 1\n",
               a->o->service, HM_VERSION);
    gauge(&out, "process_start_time_seconds", "Start time of the process since the Unix epoch",
          (double)a->started);
    gauge(&out, "process_resident_memory_bytes", "Resident memory size in bytes", resident_bytes());
    httpd_stats(a->httpd, &st);
    gauge(&out, "hermes_mcp_connections", "Open client connections", st.connections);
    gauge(&out, "hermes_mcp_requests_open", "HTTP requests received and not finished",
          (double)st.requests);
    gauge(&out, "hermes_mcp_requests_held",
          "Requests held open while their call runs (no answer yet)", (double)st.waiting);
    gauge(&out, "hermes_mcp_streams_open", "Responses being streamed (SSE)", (double)st.streaming);
    gauge(&out, "hermes_mcp_sessions", "Live MCP sessions", (double)mcp_session_count(a->mcp));
    gauge(&out, "hermes_mcp_calls_in_flight", "JSON-RPC requests being handled",
          (double)mcp_calls_in_flight(a->mcp));
    counter(&out, "hermes_mcp_rate_limited_total", "Requests refused with 429",
            (double)a->rate_limited);
    counter(&out, "hermes_mcp_auth_failures_total",
            "Requests refused with 401 (missing or wrong bearer token)", (double)a->auth_failures);
    counter(&out, "hermes_mcp_audit_lines_written_total", "Audit log lines written",
            (double)audit_written(a->audit));
    counter(&out, "hermes_mcp_audit_lines_dropped_total",
            "Audit log lines dropped (slow or full disk)", (double)audit_dropped(a->audit));
    metric_render(a->http_requests, &out);
    metric_render(a->rpc_requests, &out);
    metric_render(a->rpc_duration, &out);
    metric_render(a->principal_requests, &out);
    metric_render(a->principal_limited, &out);
    metric_render(a->limited, &out);
    metric_render(a->mcp_duration, &out);
    otel_metrics(a->otel, &out);
    EACH_PROVIDER(a, p)
    {
        if (p->ops->metrics)
            p->ops->metrics(p->self, &out);
    }
    hreq_add_header(r, "Cache-Control", "no-store");
    hreq_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", out.data ? out.data : "",
               out.len);
    buf_cleanup(&out);
}
