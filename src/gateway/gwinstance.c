/* gwinstance.c — the containment check behind per-root instances. A caller chooses an
 * upstream process (and so the directory it works in) by a path argument, so that path is
 * hostile input: it is capped and checked for NUL before anything is resolved, resolved with
 * realpath so "..", symlinks and trailing slashes cannot escape, and compared with the
 * canonical roots component by component. The project root is the root plus the first
 * component below it, which is how a code-graph tool keys its sessions: one per checkout
 * under a work or source root. The second half runs the pool of instances (below). */
#include "gwinstance.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "gwcore.h"
#include "gwexpose.h"
#include "gwpin.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "upstream.h"
#include "utf8.h"

bool gwi_inside(const char *root, const char *path)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return path[0] == '/';
    return strncmp(root, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Root joined with the first component of path below it (path is inside root). */
static const char *first_below(const char *root, const char *path, char *out, size_t outlen)
{
    size_t n = strlen(root);
    const char *rest = path + n;
    while (*rest == '/')
        rest++;
    size_t comp = strcspn(rest, "/");
    size_t len = comp ? (size_t)(rest - path) + comp : n;
    if (len >= outlen)
        return "is too long";
    memcpy(out, path, len);
    out[len] = '\0';
    return NULL;
}

/* path (absolute, shorter than PATH_MAX) with ".", ".." and repeated slashes folded by text
 * alone, into out: where it points if no symlink is on the way. */
static void fold_dots(const char *path, char *out)
{
    size_t n = 0;
    out[n++] = '/';
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        size_t len = strcspn(p, "/");
        bool dot = len == 1 && p[0] == '.', dotdot = len == 2 && p[0] == '.' && p[1] == '.';
        if (dotdot) {
            while (n > 1 && out[n - 1] != '/')
                n--;
            if (n > 1)
                n--; /* the slash before the dropped component */
        } else if (len && !dot) {
            if (n > 1)
                out[n++] = '/';
            memcpy(out + n, p, len);
            n += len;
        }
        p += len;
    }
    out[n] = '\0';
}

const char *gwi_project_root(const char *value, size_t len, const char *const *roots, size_t nroots,
                             const char *const *near, size_t nnear, char *out, size_t outlen,
                             char *resolved)
{
    char canon[PATH_MAX];
    if (len >= PATH_MAX)
        return "is too long";
    if (memchr(value, '\0', len))
        return "contains a NUL byte";
    if (len == 0 || value[0] != '/')
        return "must be an absolute path";
    char copy[PATH_MAX], folded[PATH_MAX];
    memcpy(copy, value, len);
    copy[len] = '\0';
    /* Nothing outside the roots is resolved at all (realpath may hang on a dead mount): the path
     * must lie inside one of near (the roots, as resolved and as written) by text first. */
    fold_dots(copy, folded);
    bool is_near = false;
    for (size_t i = 0; i < (near ? nnear : nroots) && !is_near; i++)
        is_near = gwi_inside(near ? near[i] : roots[i], folded);
    /* One answer for "missing" and "outside": the caller learns nothing about paths outside
     * the roots (whether they exist). */
    if (!is_near || !realpath(copy, canon))
        return "is not an existing path inside an allowed root";
    for (size_t i = 0; i < nroots; i++)
        if (gwi_inside(roots[i], canon)) {
            if (resolved)
                memcpy(resolved, canon, strlen(canon) + 1);
            return first_below(roots[i], canon, out, outlen);
        }
    return "is not an existing path inside an allowed root";
}

bool gwi_canonical_root(const char *root, const char *home, char *out, size_t outlen, char *given,
                        char *err, size_t errlen)
{
    char path[PATH_MAX], canon[PATH_MAX];
    struct stat st;
    int n;
    if (root[0] == '~' && (root[1] == '\0' || root[1] == '/')) {
        if (home == NULL || home[0] != '/') {
            snprintf(err, errlen, "root '%.200s' starts with ~ but HOME is not an absolute path",
                     root);
            return false;
        }
        n = snprintf(path, sizeof path, "%s%s", home, root + 1);
    } else {
        n = snprintf(path, sizeof path, "%s", root);
    }
    if (n < 0 || (size_t)n >= sizeof path) {
        snprintf(err, errlen, "root '%.200s' is too long", root);
        return false;
    }
    if (path[0] != '/') {
        snprintf(err, errlen, "root '%.200s' must be an absolute path (or start with ~)", root);
        return false;
    }
    if (given)
        memcpy(given, path, strlen(path) + 1);
    if (!realpath(path, canon) || stat(canon, &st) != 0) {
        snprintf(err, errlen, "root '%.200s' does not exist or cannot be resolved", root);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "root '%.200s' is not a directory", root);
        return false;
    }
    if (strlen(canon) >= outlen) {
        snprintf(err, errlen, "root '%.200s' is too long", root);
        return false;
    }
    strcpy(out, canon);
    return true;
}

/* ---------- the running pool ----------
 * Each instance is a struct upstream of its own (so restarts, the circuit breaker, the smoke
 * call, timeouts and the wait queue work per instance) with a copy of the discovery upstream's
 * settings whose cwd is the project root. The discovery upstream itself (g->ups) starts at
 * start-up where the file says (cwd, else ours): it lists the tools the surface is built from,
 * runs the smoke call and is what /readyz counts; it serves no calls. */

struct gwi_inst {
    struct upstream up;
    struct gw_upstream cfg; /* the discovery upstream's, cwd = root */
    struct gwi_pool *pool;
    char *root;         /* canonical project root */
    uint64_t last_used; /* loop ms of its last call */
    struct loop_timer *idle_timer;
};

struct gwi_pool {
    struct upstream *main;
    char **roots; /* canonical */
    size_t nroots;
    char **near; /* roots and their forms as written (~ expanded): a call's path must start
                  * with one before anything resolves it (realpath may block on a hung mount
                  * anywhere else) */
    size_t nnear;
    struct gwi_inst *inst[GW_MAX_INSTANCES];
    size_t n;
    unsigned long long evictions, idle_stops;
};

bool gwi_pools_start(struct gateway *g, char *err, size_t errlen)
{
    const char *home = getenv("HOME");
    char canon[PATH_MAX], given[PATH_MAX], why[400];
    for (size_t i = 0; i < g->nup; i++) {
        struct upstream *u = &g->ups[i];
        json_t *roots = u->cfg->instance_roots, *r;
        size_t k;
        if (u->cfg->instance_by == NULL)
            continue;
        struct gwi_pool *p = xcalloc(1, sizeof *p);
        p->main = u;
        p->roots = xcalloc(json_array_size(roots) + 1, sizeof *p->roots);
        p->near = xcalloc(2 * json_array_size(roots) + 1, sizeof *p->near);
        u->pool = p;
        json_array_foreach(roots, k, r)
        {
            if (!gwi_canonical_root(json_string_value(r), home, canon, sizeof canon, given, why,
                                    sizeof why)) {
                snprintf(err, errlen, "upstream %s, key instances.roots: %s", u->cfg->name, why);
                return false;
            }
            p->roots[p->nroots++] = xstrdup(canon);
            p->near[p->nnear++] = xstrdup(canon);
            if (strcmp(given, canon) != 0)
                p->near[p->nnear++] = xstrdup(given);
        }
    }
    return true;
}

static void inst_stop(struct gwi_inst *in)
{
    struct gwi_pool *p = in->pool;
    for (size_t i = 0; i < p->n; i++)
        if (p->inst[i] == in) {
            p->inst[i] = p->inst[--p->n];
            break;
        }
    loop_timer_cancel(in->idle_timer);
    up_cleanup(&in->up);
    free(in->root);
    free(in);
}

void gwi_pools_drain(struct gateway *g)
{
    for (size_t i = 0; i < g->nup; i++)
        for (size_t k = 0; g->ups[i].pool && k < g->ups[i].pool->n; k++)
            g->events->fail_waiting(&g->ups[i].pool->inst[k]->up);
}

void gwi_pools_free(struct gateway *g)
{
    for (size_t i = 0; g && i < g->nup; i++) {
        struct gwi_pool *p = g->ups[i].pool;
        if (p == NULL)
            continue;
        while (p->n)
            inst_stop(p->inst[0]);
        for (size_t k = 0; k < p->nroots; k++)
            free(p->roots[k]);
        free(p->roots);
        for (size_t k = 0; k < p->nnear; k++)
            free(p->near[k]);
        free(p->near);
        free(p);
        g->ups[i].pool = NULL;
    }
}

static bool inst_idle(const struct gwi_inst *in)
{
    return in->up.in_flight == 0 && in->up.waiting == 0;
}

static void on_idle(struct loop *l, void *arg)
{
    struct gwi_inst *in = arg;
    uint64_t idle_ms = (uint64_t)in->cfg.instance_idle_s * 1000;
    uint64_t since = loop_now(l) - in->last_used;
    in->idle_timer = NULL;
    if (!inst_idle(in) || since < idle_ms) { /* a call ran meanwhile: wait for the rest */
        in->idle_timer = loop_timer_add(l, inst_idle(in) ? idle_ms - since : idle_ms, on_idle, in);
        return;
    }
    log_info("upstream %s: the instance for %s stopped after %u s without calls", in->cfg.name,
             in->root, in->cfg.instance_idle_s);
    in->pool->idle_stops++;
    inst_stop(in);
}

static struct gwi_inst *inst_start(struct gwi_pool *p, const char *root)
{
    struct upstream *main = p->main;
    struct gwi_inst *in = xcalloc(1, sizeof *in);
    char err[300];
    in->pool = p;
    in->root = xstrdup(root);
    in->cfg = *main->cfg;
    in->cfg.cwd = in->root;
    in->up = (struct upstream){.gw = main->gw,
                               .cfg = &in->cfg,
                               .loop = main->loop,
                               .inst = in,
                               .seed = main->seed + (unsigned)p->n + 1};
    in->last_used = loop_now(main->loop);
    in->idle_timer =
        loop_timer_add(main->loop, (uint64_t)in->cfg.instance_idle_s * 1000, on_idle, in);
    p->inst[p->n++] = in;
    log_info("upstream %s: starting an instance for %s (%zu of %u)", in->cfg.name, root, p->n,
             in->cfg.instance_max);
    if (!up_start(&in->up, err, sizeof err)) {
        if (in->up.error == NULL)
            in->up.error = xstrdup(err);
        log_error("upstream %s: the instance for %s could not start: %s", in->cfg.name, root, err);
        up_schedule_restart(&in->up);
    }
    return in;
}

/* The least recently used instance without calls, or NULL when every one has calls. */
static struct gwi_inst *lru_idle(const struct gwi_pool *p)
{
    struct gwi_inst *best = NULL;
    for (size_t i = 0; i < p->n; i++)
        if (inst_idle(p->inst[i]) && (!best || p->inst[i]->last_used < best->last_used))
            best = p->inst[i];
    return best;
}

struct upstream *gwi_route(struct upstream *main, json_t *args, bool *busy, char *msg,
                           size_t msglen)
{
    struct gwi_pool *p = main->pool;
    const char *by = main->cfg->instance_by;
    json_t *v = json_object_get(args, by);
    char root[PATH_MAX], resolved[PATH_MAX];
    *busy = false;
    if (!json_is_string(v)) {
        snprintf(msg, msglen, "argument %s must be an absolute path (a string)", by);
        return NULL;
    }
    const char *why = gwi_project_root(
        json_string_value(v), json_string_length(v), (const char *const *)p->roots, p->nroots,
        (const char *const *)p->near, p->nnear, root, sizeof root, resolved);
    if (why) {
        snprintf(msg, msglen,
                 "argument %s %s (allowed: absolute paths inside the roots of "
                 "upstream %s)",
                 by, why, main->cfg->name);
        return NULL;
    }
    json_t *sent = json_string(resolved);
    if (sent == NULL) { /* a symlink on the way named a target that is not UTF-8 */
        snprintf(msg, msglen, "argument %s resolves to a path that is not UTF-8", by);
        return NULL;
    }
    json_object_set_new(args, by, sent); /* args: the call's own copy (gw_policy_args) */
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->inst[i]->root, root) == 0) {
            p->inst[i]->last_used = loop_now(main->loop);
            return &p->inst[i]->up;
        }
    if (p->n >= main->cfg->instance_max) {
        struct gwi_inst *old = lru_idle(p);
        if (old == NULL) {
            *busy = true;
            snprintf(msg, msglen,
                     "upstream %s runs %u instances, each with calls; retry "
                     "shortly",
                     main->cfg->name, main->cfg->instance_max);
            return NULL;
        }
        log_info("upstream %s: the instance for %s stopped to make room (max %u)", main->cfg->name,
                 old->root, main->cfg->instance_max);
        p->evictions++;
        inst_stop(old);
    }
    return &inst_start(p, root)->up;
}

bool gwi_starting(const struct upstream *u)
{
    return u->inst && (u->state == UP_STARTING || u->state == UP_LISTING);
}

static json_t *tool_named(json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(
        tools, i, t) if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0) return t;
    return NULL;
}

/* Why u's tool names are not exactly expect_tools, or "" when they are. */
static void expect_mismatch(const struct upstream *u, char *why, size_t whylen)
{
    size_t i;
    json_t *v;
    why[0] = '\0';
    json_array_foreach(u->cfg->expect_tools, i, v) if (!tool_named(u->tools, json_string_value(v)))
    {
        snprintf(why, whylen, "it does not offer %.64s, which expect_tools names",
                 json_string_value(v));
        return;
    }
    json_array_foreach(u->tools, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        bool expected = false;
        size_t k;
        json_t *e;
        json_array_foreach(u->cfg->expect_tools, k, e) expected =
            expected || strcmp(json_string_value(e), name) == 0;
        if (!expected) {
            char shown[65];
            utf8_shown(shown, sizeof shown, name);
            snprintf(why, whylen, "it offers %s, which expect_tools does not name", shown);
            return;
        }
    }
}

/* Why an instance's exposed tools differ from the discovery instance's, or "". */
static void definition_mismatch(const struct upstream *u, char *why, size_t whylen)
{
    const struct gateway *g = u->gw;
    const struct upstream *main = u->inst->pool->main;
    char hash[65];
    why[0] = '\0';
    for (size_t k = 0; k < g->ntools; k++) {
        const struct gw_tool *t = &g->tools[k];
        if (t->up != main)
            continue;
        json_t *tool = tool_named(u->tools, t->name);
        if (tool)
            gw_pin_hash(tool, hash);
        if (tool == NULL || strcmp(hash, t->seen) != 0) {
            snprintf(why, whylen,
                     "its definition of %.64s differs from the discovery "
                     "instance's",
                     t->name);
            return;
        }
    }
}

bool gwi_check_listed(struct upstream *u)
{
    char why[200] = "", line[300];
    if (u->cfg->expect_tools)
        expect_mismatch(u, why, sizeof why);
    if (why[0] == '\0' && u->inst)
        definition_mismatch(u, why, sizeof why);
    if (why[0] == '\0')
        return true;
    snprintf(line, sizeof line, "refused: %s", why);
    u->refused = true;
    up_down(u, line);
    return false;
}

void gwi_ready(struct upstream *u)
{
    if (u->inst)
        u->gw->events->slot_free(u);
}

static const char *inst_state(const struct upstream *u)
{
    return u->refused ? "refused" : gw_circuit_state_name(u);
}

void gwi_describe(const struct upstream *main, json_t *o)
{
    const struct gwi_pool *p = main->pool;
    if (p == NULL)
        return;
    json_t *roots = json_object();
    for (size_t i = 0; i < p->n; i++)
        json_object_set_new(roots, p->inst[i]->root, json_string(inst_state(&p->inst[i]->up)));
    json_object_set_new(o, "instances",
                        json_pack("{s:I, s:I, s:o}", "count", (json_int_t)p->n, "max",
                                  (json_int_t)main->cfg->instance_max, "roots", roots));
}

void gwi_metrics(const struct gateway *g, struct buf *out)
{
    static const char *const states[] = {"starting", "listing", "ready", "restarting",
                                         "down",     "refused", "open",  "half_open"};
    buf_appends(out, "# HELP hermes_mcp_gateway_instances Per-root instances of each upstream "
                     "with instances, by state\n# TYPE hermes_mcp_gateway_instances gauge\n");
    for (size_t i = 0; i < g->nup; i++) {
        const struct gwi_pool *p = g->ups[i].pool;
        for (size_t s = 0; p && s < sizeof states / sizeof *states; s++) {
            size_t n = 0;
            for (size_t k = 0; k < p->n; k++)
                n += strcmp(inst_state(&p->inst[k]->up), states[s]) == 0;
            buf_printf(out, "hermes_mcp_gateway_instances{upstream=\"%s\",state=\"%s\"} %zu\n",
                       g->ups[i].cfg->name, states[s], n);
        }
    }
    buf_appends(out, "# HELP hermes_mcp_gateway_instance_stops_total Per-root instances "
                     "stopped, by upstream and reason (idle, evicted)\n# TYPE "
                     "hermes_mcp_gateway_instance_stops_total counter\n");
    for (size_t i = 0; i < g->nup; i++) {
        const struct gwi_pool *p = g->ups[i].pool;
        if (p == NULL)
            continue;
        buf_printf(out,
                   "hermes_mcp_gateway_instance_stops_total{upstream=\"%s\",reason=\"idle\"} "
                   "%llu\n",
                   g->ups[i].cfg->name, p->idle_stops);
        buf_printf(out,
                   "hermes_mcp_gateway_instance_stops_total{upstream=\"%s\","
                   "reason=\"evicted\"} %llu\n",
                   g->ups[i].cfg->name, p->evictions);
    }
}
