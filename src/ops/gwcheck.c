/* gwcheck.c — `hermes-mcp gateway check [--env-file F]`: reads the env file and the gateway file
 * with the code serve uses (config.c, gwload.c) and prints one block per upstream: transport,
 * prefix, limits and the include/exclude rules, so an operator sees what will be exposed before
 * starting. Args, env values and header values may carry secrets after interpolation, so only
 * the command and the names of env variables and headers are printed. With --probe it also
 * starts each upstream the way serve does (gateway_probe), lists what it offers and prints the
 * exposed-names table: which tool is exposed under which name, and which rule decided; then
 * each upstream's protocol version and smoke call (run as serve runs it: passed, or failed
 * with our own reason), and the resources and prompts of those that enable them. */
#include "gwcheck.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "ctlclient.h"
#include "dotenvfile.h"
#include "gateway.h"
#include "gwload.h"
#include "gwpins.h"
#include "gwpolicy.h"
#include "log.h"
#include "loop.h"

const char gateway_usage[] =
    "usage: hermes-mcp gateway check [--probe] [--env-file FILE]\n"
    "       hermes-mcp gateway pins [--env-file FILE]\n"
    "       hermes-mcp gateway accept [NAME [--expect SHA256]] [--env-file FILE]\n"
    "       hermes-mcp gateway unpin NAME [--env-file FILE]\n"
    "\n"
    "Validates GATEWAY_FILE (named in FILE, default ./.env) the way serve reads it: mode 600, a\n"
    "regular file, known keys, upstream names, every ${VAR} resolved from FILE or the\n"
    "environment. Prints each upstream: its transport, the prefix of its exposed names, its\n"
    "limits and its include/exclude rules (no rules: nothing exposed; both: exclude is\n"
    "ignored, a warning), and those with enabled: false as disabled (validated, never\n"
    "started, not exposed). Never prints a value.\n"
    "--probe also starts each upstream as serve would (waiting its connect_timeout), lists its\n"
    "tools and prints the exposed-names table: NAME (or - when not exposed), UPSTREAM, TOOL\n"
    "(the upstream's own name) and RULE (included or excluded, by which glob); then for each\n"
    "upstream the protocol version it speaks (2025-11-25 or 2026-07-28) and its smoke call,\n"
    "made as serve makes it (passed, or failed and why), and the resources and prompts of\n"
    "those with tools.resources or tools.prompts, and a warning for each include glob\n"
    "that matches none of its upstream's tools; then stops them.\n"
    "When a server runs with FILE and a reload (SIGHUP) of this file asked for what only a\n"
    "restart applies (a new upstream, another command...), it prints \"restart needed\" and what.\n"
    "Exit codes: 0 valid, 1 the gateway file is refused, an upstream did not start or failed\n"
    "its smoke call, or serve would refuse an exposed name, 2 usage or configuration error.\n"
    "`doctor` runs the offline check only.\n"
    "\n"
    "pins: the SHA-256 pinned for each exposed tool's definition (GATEWAY_FILE.pins, written\n"
    "at the first start) and, from GATEWAY_FILE.pins-status (written by the server), each tool\n"
    "withheld because its definition changed: both hashes and the fields that differ.\n"
    "accept: pins the definitions the server serves (all, or the exposed tool NAME); send\n"
    "SIGHUP to the server to apply. With STORE_URL the pins are the store's: pins lists them\n"
    "(the store's sha256 of each) and, for a withheld tool, \"pinned\": the pin this replica\n"
    "last read, and \"store\": the store's now. accept writes them there and every replica\n"
    "applies it within a second, but only where the store's pin is still the expected one:\n"
    "--expect SHA256 (with NAME; the hash pins printed), else the one this replica last read\n"
    "(its status file's \"pinned\"); if one changed meanwhile (another operator's accept),\n"
    "nothing is accepted: it says so with both hashes, run pins again. Without STORE_URL,\n"
    "--expect is compared with the pins file's pin.\n"
    "unpin (STORE_URL only): removes the store's pin of NAME, a tool no longer served, and\n"
    "tells every replica: a tool withheld because the store held as many pins as it may\n"
    "(1024 of one upstream, 16 MiB in all) is pinned and served within a second.\n"
    "Exit codes: 0 done, 1 a bad file, unknown NAME, the store unreachable or a pin changed\n"
    "meanwhile, 2 usage.\n";

static void print_rules(const char *what, json_t *globs)
{
    size_t i;
    json_t *g;
    printf("    %s:", what);
    if (globs == NULL || json_array_size(globs) == 0)
        printf(" (none)");
    json_array_foreach(globs, i, g) printf("%s %s", i ? "," : "", json_string_value(g));
    printf("\n");
}

static void print_names(const char *what, json_t *map)
{
    const char *k;
    json_t *v;
    if (json_object_size(map) == 0)
        return;
    printf("    %s:", what);
    json_object_foreach(map, k, v) printf(" %s", k);
    printf(" (values not shown)\n");
}

/* tools.guard, tools.args, tools.limits, instances and expect_tools as configured
 * (gw_policy_summary). */
static void print_policies(const struct gw_upstream *u)
{
    const char *k;
    json_t *v;
    char line[400];
    if (json_object_size(u->guard)) {
        printf("    guard:");
        const char *sep = " ";
        json_object_foreach(u->guard, k, v)
        {
            printf("%s%s %s", sep, k, json_string_value(v));
            const char *arg;
            json_t *values, *x;
            size_t i;
            json_object_foreach(json_object_get(u->guard_when, k), arg, values)
            {
                printf(" when %s is", arg); /* a conditional confirm */
                json_array_foreach(values, i, x)
                    printf("%s %s", i ? "," : "", json_string_value(x));
            }
            sep = ", ";
        }
        printf("\n");
    }
    json_object_foreach(u->policies, k, v)
    {
        gw_policy_summary(GW_GUARD_NONE, v, line, sizeof line);
        printf("    args of %s: %s\n", k, line);
    }
    json_object_foreach(u->limits, k, v)
    {
        json_t *per_min = json_object_get(v, "calls_per_min");
        json_t *in_flight = json_object_get(v, "calls_in_flight");
        printf("    limits of %s:", k);
        if (per_min)
            printf(" calls_per_min %s%s", json_string_value(per_min), in_flight ? "," : "");
        if (in_flight)
            printf(" calls_in_flight %s", json_string_value(in_flight));
        printf(" (each tool over every caller)\n");
    }
    if (u->instance_by) {
        size_t i;
        json_t *r;
        printf("    instances: one process per root of argument %s, at most %u, stopped after %u s "
               "idle; roots:",
               u->instance_by, u->instance_max, u->instance_idle_s);
        json_array_foreach(u->instance_roots, i, r)
            printf("%s %s", i ? "," : "", json_string_value(r));
        printf("\n");
    }
    if (u->expect_tools)
        print_rules("expect_tools", u->expect_tools);
}

static void print_upstream(const struct gw_upstream *u)
{
    printf("  %s: %s %s%s\n", u->name, u->kind == GW_STDIO ? "stdio" : "http",
           u->kind == GW_STDIO ? u->command : "(url not shown)",
           u->enabled ? "" : " (disabled: enabled: false; validated, not started, not exposed)");
    if (u->kind == GW_STDIO)
        printf("    args: %zu (not shown)%s%s\n", json_array_size(u->args), u->cwd ? ", cwd " : "",
               u->cwd ? u->cwd : "");
    print_names("env", u->env);
    print_names("headers", u->headers);
    printf("    prefix: \"%s\", required: %s, timeout: %u s, connect_timeout: %u s, "
           "max_in_flight: %u\n",
           u->prefix, u->required ? "true" : "false", u->timeout_s, u->connect_timeout_s,
           u->max_in_flight);
    if (!u->include && !u->exclude) {
        printf("    tools: none exposed (no include or exclude: default deny)\n");
        return;
    }
    print_rules("include", u->include);
    print_rules("exclude", u->exclude);
    print_policies(u);
}

/* The probe's rows, kept to print them as tables with aligned columns. */
struct table {
    size_t smoke_failed;
    json_t *rows;      /* [[name, upstream, tool, rule], ...] */
    json_t *failed;    /* [[upstream, error], ...] */
    json_t *upstreams; /* ["name: protocol ...; smoke call ...", ...] */
    json_t *resources; /* [[uri, upstream, note], ...] */
    json_t *prompts;   /* [[name, upstream, prompt, note], ...] */
    json_t *policies;  /* [[name, upstream, summary], ...]: exposed tools with a guard or policy */
    json_t *listed;    /* {upstream: [tool, ...]}: what each upstream that started offers */
    const struct gwfile *gw;
};

static const struct gw_upstream *upstream_named(const struct gwfile *gw, const char *name)
{
    for (size_t i = 0; i < gw->nup; i++)
        if (strcmp(gw->up[i].name, name) == 0)
            return &gw->up[i];
    return NULL;
}

/* "upstream: protocol V; resources: N; prompts: N; smoke call T passed" ("smoke calls T1, T2
 * passed" when the file lists several: u's). */
static json_t *upstream_line(const struct gw_probe_row *r, const struct gw_upstream *u)
{
    char extras[80] = "", smoke[400] = "";
    int n = 0;
    size_t calls = u ? json_array_size(u->smoke) : 0;
    if (r->resources >= 0)
        n += snprintf(extras + n, sizeof extras - (size_t)n, "; resources: %d offered",
                      r->resources);
    if (r->prompts >= 0)
        snprintf(extras + n, sizeof extras - (size_t)n, "; prompts: %d offered", r->prompts);
    if (r->smoke && strcmp(r->smoke, "passed") == 0 && calls > 1) {
        size_t at = (size_t)snprintf(smoke, sizeof smoke, "; smoke calls");
        for (size_t i = 0; i < calls && at < sizeof smoke; i++)
            at += (size_t)snprintf(
                smoke + at, sizeof smoke - at, "%s %.64s", i ? "," : "",
                json_string_value(json_object_get(json_array_get(u->smoke, i), "tool")));
        if (at < sizeof smoke)
            snprintf(smoke + at, sizeof smoke - at, " passed");
    } else if (r->smoke && strcmp(r->smoke, "passed") == 0)
        snprintf(smoke, sizeof smoke, "; smoke call %s passed", r->smoke_tool);
    else if (r->smoke)
        snprintf(smoke, sizeof smoke, "; %s", r->error ? r->error : "smoke call failed");
    return json_sprintf("%s: protocol %s%s%s", r->upstream, r->protocol[0] ? r->protocol : "?",
                        extras, smoke);
}

static void on_probe_row(const struct gw_probe_row *r, void *arg)
{
    struct table *t = arg;
    char rule[300];
    switch (r->kind) {
    case GW_PROBE_FAILED:
        json_array_append_new(t->failed, json_pack("[ss]", r->upstream, r->error));
        return;
    case GW_PROBE_UPSTREAM:
        json_object_set_new(t->listed, r->upstream, json_array());
        t->smoke_failed += r->smoke && strcmp(r->smoke, "passed") != 0;
        json_array_append_new(t->upstreams, upstream_line(r, upstream_named(t->gw, r->upstream)));
        return;
    case GW_PROBE_RESOURCE:
        json_array_append_new(t->resources, json_pack("[sss]", r->tool, r->upstream,
                                                      r->problem ? r->problem : "exposed"));
        return;
    case GW_PROBE_PROMPT:
        json_array_append_new(t->prompts, json_pack("[ssss]", r->exposed, r->upstream, r->tool,
                                                    r->problem ? r->problem : "exposed"));
        return;
    case GW_PROBE_TOOL:
        json_array_append_new(json_object_get(t->listed, r->upstream), json_string(r->tool));
        break;
    }
    const struct gw_upstream *u = upstream_named(t->gw, r->upstream);
    char summary[400] = "";
    if (u && r->exposed && !r->problem)
        gw_policy_summary(gw_tool_guard(u, r->tool), gw_tool_policy(u, r->tool), summary,
                          sizeof summary);
    if (summary[0])
        json_array_append_new(t->policies, json_pack("[sss]", r->exposed, r->upstream, summary));
    snprintf(rule, sizeof rule, "%s%s%s%s%s", r->verdict, r->rule ? " by " : "",
             r->rule ? r->rule : "", r->problem ? "; " : "", r->problem ? r->problem : "");
    json_array_append_new(
        t->rows, json_pack("[ssss]", r->exposed ? r->exposed : "-", r->upstream, r->tool, rule));
}

/* A titled table: every column but the last padded to its widest cell. */
static void print_rows(const char *title, const char *const *head, size_t ncols, json_t *rows)
{
    int width[4] = {0};
    size_t i;
    json_t *row;
    for (size_t c = 0; c + 1 < ncols; c++)
        width[c] = (int)strlen(head[c]);
    json_array_foreach(rows, i, row) for (size_t c = 0; c + 1 < ncols; c++)
    {
        int w = (int)strlen(json_string_value(json_array_get(row, c)));
        width[c] = w > width[c] ? w : width[c];
    }
    printf("%s:\n", title);
    for (size_t c = 0; c < ncols; c++) /* the last column's width is 0: not padded */
        printf("  %-*s%s", width[c], head[c], c + 1 < ncols ? "" : "\n");
    json_array_foreach(rows, i, row)
    {
        for (size_t c = 0; c < ncols; c++)
            printf("  %-*s%s", width[c], json_string_value(json_array_get(row, c)),
                   c + 1 < ncols ? "" : "\n");
    }
}

static void print_table(const struct table *t)
{
    static const char *const tools[] = {"NAME", "UPSTREAM", "TOOL", "RULE"};
    static const char *const resources[] = {"URI", "UPSTREAM", "STATUS"};
    static const char *const prompts[] = {"NAME", "UPSTREAM", "PROMPT", "STATUS"};
    static const char *const policies[] = {"NAME", "UPSTREAM", "GUARD AND ARGUMENT POLICIES"};
    size_t i;
    json_t *row;
    print_rows("exposed names (probe)", tools, 4, t->rows);
    json_array_foreach(t->failed, i, row)
    {
        printf("  upstream %s did not start: %s\n", json_string_value(json_array_get(row, 0)),
               json_string_value(json_array_get(row, 1)));
    }
    if (json_array_size(t->policies))
        print_rows("guarded and policed tools (probe)", policies, 3, t->policies);
    if (json_array_size(t->upstreams))
        printf("upstreams (probe):\n");
    json_array_foreach(t->upstreams, i, row) printf("  %s\n", json_string_value(row));
    if (json_array_size(t->resources))
        print_rows("resources (probe)", resources, 3, t->resources);
    if (json_array_size(t->prompts))
        print_rows("prompts (probe)", prompts, 4, t->prompts);
    for (size_t u = 0; u < t->gw->noff; u++)
        printf("upstream %s: disabled (enabled: false), not started\n", t->gw->off[u].name);
    for (size_t u = 0; u < t->gw->nup; u++) { /* include globs that match nothing it offers */
        json_t *offered = json_object_get(t->listed, t->gw->up[u].name), *glob;
        json_t *unmatched = offered ? gw_include_unmatched(&t->gw->up[u], offered) : NULL;
        json_array_foreach(unmatched, i, glob)
            printf("warning: upstream %s: tools.include '%s' matches none of its %zu tools\n",
                   t->gw->up[u].name, json_string_value(glob), json_array_size(offered));
        json_decref(unmatched);
    }
}

/* Starts the upstreams, prints the table; returns the exit code. */
static int probe(const struct gwfile *gw)
{
    struct table t = {.rows = json_array(),
                      .failed = json_array(),
                      .upstreams = json_array(),
                      .resources = json_array(),
                      .prompts = json_array(),
                      .policies = json_array(),
                      .listed = json_object(),
                      .gw = gw};
    struct loop *l = loop_new();
    if (l == NULL) {
        fprintf(stderr, "hermes-mcp: cannot set up the event loop\n");
        return 1;
    }
    fflush(stdout); /* the upstreams' log lines go to stderr meanwhile */
    /* As serve does: an upstream that dies before reading its first message is a failed
     * upstream in the table, not a SIGPIPE that kills the check. */
    signal(SIGPIPE, SIG_IGN);
    size_t bad = gateway_probe(l, gw, on_probe_row, &t);
    loop_free(l);
    print_table(&t);
    size_t rows = json_array_size(t.rows), exposed = 0;
    for (size_t i = 0; i < rows; i++)
        exposed +=
            strcmp(json_string_value(json_array_get(json_array_get(t.rows, i), 0)), "-") != 0;
    printf("%zu of %zu tools exposed; %zu upstream%s did not start", exposed, rows,
           json_array_size(t.failed), json_array_size(t.failed) == 1 ? "" : "s");
    if (t.smoke_failed)
        printf("; %zu smoke call%s failed", t.smoke_failed, t.smoke_failed == 1 ? "" : "s");
    printf("\n");
    json_decref(t.rows);
    json_decref(t.failed);
    json_decref(t.upstreams);
    json_decref(t.resources);
    json_decref(t.prompts);
    json_decref(t.policies);
    json_decref(t.listed);
    return bad ? 1 : 0;
}

/* gwload_lint's warnings, below the upstreams (its errors were checked before; a disabled
 * upstream says so in its block). */
static void print_lint(enum gwlint_level level, const char *line, void *arg)
{
    (void)arg;
    if (level == GWLINT_WARN)
        printf("  warning: %s\n", line);
}

static int check(const char *env_file, bool with_probe)
{
    struct config cfg;
    struct gwfile gw;
    char err[1024];
    unsigned mode;

    if (access(env_file, F_OK) != 0) {
        fprintf(stderr, "hermes-mcp: env file %s not found\n", env_file);
        return 2;
    }
    json_t *env = dotenvfile_read(env_file, &mode, err, sizeof err);
    if (env == NULL || !config_from_env(&cfg, env, env_file, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        json_decref(env);
        return 2;
    }
    int rc = 2;
    if (cfg.gateway_file == NULL) {
        fprintf(stderr, "hermes-mcp: no GATEWAY_FILE in %s: the gateway is off\n", env_file);
    } else if (!gwload_for_serve(cfg.gateway_file, env, cfg.call_timeout_ms, &gw, err,
                                 sizeof err)) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        rc = 1;
    } else {
        printf("gateway file %s: %zu upstream%s", cfg.gateway_file, gw.nup, gw.nup == 1 ? "" : "s");
        if (gw.noff)
            printf(", %zu more disabled", gw.noff);
        printf("\n");
        for (size_t i = 0; i < gw.nup; i++)
            print_upstream(&gw.up[i]);
        for (size_t i = 0; i < gw.noff; i++)
            print_upstream(&gw.off[i]);
        gwload_lint(&gw, cfg.gateway_file, cfg.call_timeout_ms, print_lint, NULL);
        printf("  bridge tools:%s\n", gw.bridge_include || gw.bridge_exclude ? "" : " all");
        if (gw.bridge_include || gw.bridge_exclude) {
            print_rules("include", gw.bridge_include);
            print_rules("exclude", gw.bridge_exclude);
        }
        if (gw.startup_files)
            printf("  startup_context: a tool returning %zu fixed file%s, at most %u bytes each\n",
                   json_array_size(gw.startup_files),
                   json_array_size(gw.startup_files) == 1 ? "" : "s", gw.startup_max_bytes);
        if (gwload_any_approve(&gw))
            printf("  approvals: an approve-guarded call waits %u s for the operator, then is "
                   "denied\n",
                   gw.approvals_timeout_s);
        char *waiting = ctlclient_restart_needed(env_file);
        if (waiting)
            printf("running server: restart needed: it reloaded this file but cannot apply %s\n",
                   waiting);
        free(waiting);
        rc = with_probe ? probe(&gw) : 0;
        gwfile_cleanup(&gw);
    }
    config_cleanup(&cfg);
    json_decref(env);
    return rc;
}

int gwcheck_main(int argc, char **argv)
{
    const char *env_file = ".env";
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(gateway_usage, stdout);
            return 0;
        }
    bool pins = argc > 0 && (!strcmp(argv[0], "pins") || !strcmp(argv[0], "accept") ||
                             !strcmp(argv[0], "unpin"));
    const char *name = NULL, *expect = NULL;
    bool with_probe = false;
    if (argc < 1 || (strcmp(argv[0], "check") != 0 && !pins)) {
        fprintf(stderr, "hermes-mcp: %s\n%s",
                argc < 1 ? "gateway needs a command" : "unknown gateway command", gateway_usage);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--env-file") && i + 1 < argc)
            env_file = argv[++i];
        else if (!strncmp(argv[i], "--env-file=", 11))
            env_file = argv[i] + 11;
        else if (!strcmp(argv[0], "check") && !strcmp(argv[i], "--probe"))
            with_probe = true;
        else if (strcmp(argv[0], "check") && strcmp(argv[0], "pins") && name == NULL &&
                 argv[i][0] != '-')
            name = argv[i];
        else if (!strcmp(argv[0], "accept") && !strcmp(argv[i], "--expect") && i + 1 < argc)
            expect = argv[++i];
        else {
            fprintf(stderr, "hermes-mcp: unknown argument '%s'\n%s", argv[i], gateway_usage);
            return 2;
        }
    }
    if ((!strcmp(argv[0], "unpin") || expect) && name == NULL) {
        fprintf(stderr, "hermes-mcp: gateway %s needs NAME\n%s",
                expect ? "accept --expect" : argv[0], gateway_usage);
        return 2;
    }
    if (expect && (strlen(expect) != 64 || strspn(expect, "0123456789abcdef") != 64)) {
        fprintf(stderr, "hermes-mcp: --expect wants the 64 hex digits `gateway pins` prints\n");
        return 2;
    }
    return pins ? gwpins_main(argv[0], env_file, name, expect) : check(env_file, with_probe);
}
