/* gwsmoke.c — the smoke call of an upstream. An upstream can list its
 * tools and still be useless: web search tools advertise their schemas before the provider
 * behind them is usable, and answer a call with a successful result whose text says it failed.
 * So after each (re)initialize the gateway makes the gateway file's smoke calls ({tool,
 * arguments}, or a list of them: one web_search and one web_extract, say), one after the
 * other, and /readyz counts a required upstream ready only once each of them passed. It fails
 * on a JSON-RPC error, a result with isError true, a nested provider error (an error member,
 * success or ok false, status error or failed, in structuredContent or in a text item that
 * holds JSON, searched a few levels deep), no answer within the upstream's timeout, or the
 * upstream going away. Why it failed is our own text naming the tool and where the error was
 * found, never the upstream's words (a provider's message may quote a key). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "loop.h"
#include "mem.h"
#include "upstream.h"

#define NESTED_DEPTH 4               /* levels of objects and arrays searched for a nested error */
#define NESTED_NODES 2000            /* members and items looked at, at most, per result */
#define NESTED_TEXT_MAX (256 * 1024) /* a text item parsed as JSON up to this size */

/* ---------- does a result say it failed ---------- */

static bool truthy_error(json_t *v)
{
    if (json_is_string(v))
        return json_string_length(v) > 0;
    if (json_is_array(v))
        return json_array_size(v) > 0;
    return json_is_object(v) || json_is_true(v) || (json_is_integer(v) && json_integer_value(v));
}

static bool failed_status(json_t *v)
{
    static const char *const words[] = {"error", "failed", "failure", "fail"};
    const char *s = json_string_value(v);
    for (size_t i = 0; s && i < sizeof words / sizeof *words; i++)
        if (strcmp(s, words[i]) == 0)
            return true;
    return false;
}

/* Finds a nested error in v; where gets its path (e.g. "results[0].error"). */
static bool nested_error(json_t *v, int depth, size_t *budget, char *where, size_t wherelen)
{
    size_t len = strlen(where);
    if (depth > NESTED_DEPTH || *budget == 0)
        return false;
    if (json_is_object(v)) {
        const char *key;
        json_t *m;
        json_object_foreach(v, key, m)
        {
            if (*budget == 0)
                return false;
            (*budget)--;
            bool bad =
                ((strcmp(key, "error") == 0 || strcmp(key, "errors") == 0) && truthy_error(m)) ||
                ((strcmp(key, "success") == 0 || strcmp(key, "ok") == 0) && json_is_false(m)) ||
                (strcmp(key, "isError") == 0 && json_is_true(m)) ||
                (strcmp(key, "status") == 0 && failed_status(m));
            snprintf(where + len, wherelen - len, "%s%.40s", len ? "." : "", key);
            if (bad || nested_error(m, depth + 1, budget, where, wherelen))
                return true;
            where[len] = '\0';
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m)
        {
            if (*budget == 0)
                return false;
            (*budget)--;
            snprintf(where + len, wherelen - len, "[%zu]", i);
            if (nested_error(m, depth + 1, budget, where, wherelen))
                return true;
            where[len] = '\0';
        }
    }
    return false;
}

bool gw_smoke_result_failed(json_t *result, char *why, size_t whylen)
{
    char where[200] = "";
    size_t budget = NESTED_NODES, i;
    json_t *item;
    if (json_is_true(json_object_get(result, "isError"))) {
        snprintf(why, whylen, "the result has isError: true");
        return true;
    }
    if (nested_error(json_object_get(result, "structuredContent"), 0, &budget, where,
                     sizeof where)) {
        snprintf(why, whylen, "a nested error in structuredContent.%s", where);
        return true;
    }
    json_array_foreach(json_object_get(result, "content"), i, item)
    {
        const char *text = json_string_value(json_object_get(item, "text"));
        size_t n = text ? json_string_length(json_object_get(item, "text")) : 0;
        if (text == NULL || n > NESTED_TEXT_MAX)
            continue;
        while (n && (*text == ' ' || *text == '\n' || *text == '\r' || *text == '\t'))
            text++, n--;
        if (n == 0 || (*text != '{' && *text != '['))
            continue;
        json_t *doc = json_loadb(text, n, 0, NULL);
        where[0] = '\0';
        bool bad = nested_error(doc, 0, &budget, where, sizeof where);
        json_decref(doc);
        if (bad) {
            snprintf(why, whylen, "a nested error in content[%zu] (JSON text): %s", i, where);
            return true;
        }
    }
    return false;
}

/* ---------- the call ---------- */

/* The tool of the smoke call on the wire (or the last one made). */
static const char *smoke_tool(const struct upstream *u)
{
    return json_string_value(json_object_get(json_array_get(u->cfg->smoke, u->smoke_at), "tool"));
}

static void send_smoke(struct upstream *u);

/* The call on the wire answered: why it failed, or NULL when it passed (then the next one is
 * made; the upstream passed once the last one did). */
static void settle(struct upstream *u, const char *why)
{
    loop_timer_cancel(u->smoke_timer);
    u->smoke_timer = NULL;
    u->smoke_id = 0;
    free(u->smoke_error);
    u->smoke_error = NULL;
    if (why == NULL) {
        log_info("upstream %s: smoke call %.64s passed", u->cfg->name, smoke_tool(u));
        if (++u->smoke_at < json_array_size(u->cfg->smoke)) {
            send_smoke(u);
            return;
        }
        u->smoke_at--; /* stays on the last one made */
        u->smoke = GW_SMOKE_PASSED;
        return;
    }
    u->smoke = GW_SMOKE_FAILED;
    u->smoke_error = xasprintf("smoke call %.64s failed: %s", smoke_tool(u), why);
    log_event(EV_UPSTREAM_SMOKE_FAILED,
              LOG_FIELDS(LF_S("upstream", u->cfg->name), LF_S("tool", smoke_tool(u))),
              "upstream %s: %s; not ready", u->cfg->name, u->smoke_error);
}

static void on_smoke_answer(struct upstream *u, json_t *result, json_t *error, void *arg)
{
    char why[300];
    (void)arg;
    if (result == NULL && error == NULL)
        settle(u, "the upstream went away");
    else if (result == NULL) {
        json_t *code = json_object_get(error, "code");
        snprintf(why, sizeof why, "JSON-RPC error %lld",
                 json_is_integer(code) ? (long long)json_integer_value(code) : 0LL);
        settle(u, why);
    } else if (gw_smoke_result_failed(result, why, sizeof why))
        settle(u, why);
    else
        settle(u, NULL);
}

static void on_smoke_timeout(struct loop *l, void *arg)
{
    struct upstream *u = arg;
    char why[80];
    (void)l;
    u->smoke_timer = NULL;
    up_forget(u, u->smoke_id);
    up_notify(u, "notifications/cancelled",
              json_pack("{s:I, s:s}", "requestId", (json_int_t)u->smoke_id, "reason",
                        "smoke call timed out at the gateway"));
    snprintf(why, sizeof why, "no answer within %u s", u->cfg->timeout_s);
    settle(u, why);
}

static void send_smoke(struct upstream *u)
{
    json_t *args = json_object_get(json_array_get(u->cfg->smoke, u->smoke_at), "arguments");
    json_t *params = json_pack("{s:s, s:o}", "name", smoke_tool(u), "arguments",
                               json_is_object(args) ? json_deep_copy(args) : json_object());
    if (!up_request(u, "tools/call", params, on_smoke_answer, NULL, NULL, &u->smoke_id)) {
        settle(u, "it could not be sent");
        return;
    }
    u->smoke_timer =
        loop_timer_add(u->loop, (uint64_t)u->cfg->timeout_s * 1000, on_smoke_timeout, u);
}

void gw_smoke_start(struct upstream *u)
{
    if (u->cfg->smoke == NULL) /* a probe runs it too (gateway check --probe) */
        return;
    loop_timer_cancel(u->smoke_timer);
    u->smoke_timer = NULL;
    u->smoke = GW_SMOKE_PENDING;
    u->smoke_at = 0;
    send_smoke(u);
}

bool gw_smoke_passed(const struct upstream *u)
{
    return u->cfg->smoke == NULL || u->smoke == GW_SMOKE_PASSED;
}

void gw_smoke_describe(const struct upstream *u, json_t *o)
{
    static const char *const names[] = {"not_run", "pending", "passed", "failed"};
    if (u->cfg->smoke == NULL)
        return;
    json_object_set_new(o, "smoke", json_string(names[u->smoke]));
    if (u->smoke == GW_SMOKE_FAILED && u->smoke_error)
        json_object_set_new(o, "smoke_error", json_string(u->smoke_error));
}

void gw_smoke_cleanup(struct upstream *u)
{
    loop_timer_cancel(u->smoke_timer);
    u->smoke_timer = NULL;
    free(u->smoke_error);
    u->smoke_error = NULL;
}
