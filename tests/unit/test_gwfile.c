/* Unit tests for gwfile.c and gwinterp.c: the documented example, defaults, interpolation (env
 * file before environment, never the value in an error), default deny, globs, and refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gwfile.h"

static const char example[] = "upstreams:\n"
                              "  everything:                      # server name\n"
                              "    command: npx\n"
                              "    args: [\"-y\", \"@modelcontextprotocol/server-everything\"]\n"
                              "    env: {SOME_KEY: \"${SOME_KEY}\"}\n"
                              "    prefix: \"everything__\"\n"
                              "    required: true\n"
                              "    timeout: 300\n"
                              "    connect_timeout: 15\n"
                              "    max_in_flight: 16\n"
                              "    tools:\n"
                              "      include: [\"echo\", \"get_*\"]\n"
                              "      exclude: []\n"
                              "      resources: false\n"
                              "      prompts: false\n"
                              "    smoke: {tool: echo, arguments: {message: ready}}\n"
                              "  context:\n"
                              "    url: http://127.0.0.1:3050/mcp\n"
                              "    headers: {Authorization: \"Bearer ${CONTEXT_TOKEN}\"}\n"
                              "bridge_tools: {include: [\"*\"]}\n";

/* The lookup: a fixed table standing for the env file and the environment. */
static const char *vars(const char *var, void *arg)
{
    (void)arg;
    if (strcmp(var, "SOME_KEY") == 0)
        return "k-123";
    if (strcmp(var, "CONTEXT_TOKEN") == 0)
        return "tok-secret-value";
    if (strcmp(var, "DOLLAR") == 0)
        return "${SOME_KEY}"; /* a value is not scanned again */
    return NULL;
}

static bool parse(const char *s, struct gwfile *f, char *err)
{
    return gwfile_parse(s, strlen(s), vars, NULL, f, err, 300);
}

static void parses_the_issue_example(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(parse(example, &f, err));
    assert_int_equal(f.nup, 2);
    const struct gw_upstream *e = &f.up[0], *c = &f.up[1];
    assert_string_equal(e->name, "everything");
    assert_int_equal(e->kind, GW_STDIO);
    assert_string_equal(e->command, "npx");
    assert_int_equal(json_array_size(e->args), 2);
    assert_string_equal(json_string_value(json_object_get(e->env, "SOME_KEY")), "k-123");
    assert_string_equal(e->prefix, "everything__");
    assert_true(e->required);
    assert_int_equal(e->timeout_s, 300);
    assert_non_null(e->smoke);
    assert_string_equal(c->name, "context");
    assert_int_equal(c->kind, GW_HTTP);
    assert_string_equal(c->url, "http://127.0.0.1:3050/mcp");
    assert_string_equal(json_string_value(json_object_get(c->headers, "Authorization")),
                        "Bearer tok-secret-value");
    assert_true(gw_bridge_tool_kept(&f, "hermes_task"));
    gwfile_cleanup(&f);
}

static void fills_the_defaults(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(parse("upstreams:\n  mem:\n    command: node\n", &f, err));
    const struct gw_upstream *u = &f.up[0];
    assert_string_equal(u->prefix, "mem__");
    assert_true(u->required);
    assert_int_equal(u->timeout_s, 300);
    assert_int_equal(u->connect_timeout_s, 15);
    assert_int_equal(u->max_in_flight, 16);
    assert_false(u->resources);
    assert_false(u->prompts);
    assert_null(u->include);
    assert_null(u->exclude);
    assert_null(u->cwd);
    assert_int_equal(json_array_size(u->args), 0);
    /* Default deny: no rules, nothing exposed. */
    const char *rule = "x";
    assert_int_equal(gw_tool_verdict(u, "anything", &rule), GW_DEFAULT_DENY);
    assert_null(rule);
    gwfile_cleanup(&f);
    assert_true(parse("upstreams:\n  m:\n    command: n\n    prefix: \"\"\n    required: false\n"
                      "    timeout: 7\n    connect_timeout: 3\n    max_in_flight: 2\n",
                      &f, err));
    assert_string_equal(f.up[0].prefix, "");
    assert_false(f.up[0].required);
    assert_int_equal(f.up[0].timeout_s, 7);
    assert_int_equal(f.up[0].connect_timeout_s, 3);
    assert_int_equal(f.up[0].max_in_flight, 2);
    gwfile_cleanup(&f);
}

static void include_wins_and_globs_match(void **state)
{
    struct gwfile f;
    char err[300];
    const char *rule;
    (void)state;
    assert_true(parse("upstreams:\n  a:\n    command: x\n    tools:\n"
                      "      include: [echo, \"get_*\"]\n      exclude: [\"get_secret*\", echo]\n"
                      "  b:\n    command: y\n    tools: {exclude: [\"rm*\"]}\n"
                      "bridge_tools: {exclude: [hermes_reset]}\n",
                      &f, err));
    const struct gw_upstream *a = &f.up[0], *b = &f.up[1];
    assert_int_equal(gw_tool_verdict(a, "echo", &rule), GW_INCLUDED);
    assert_string_equal(rule, "echo"); /* include wins over exclude */
    assert_int_equal(gw_tool_verdict(a, "get_env", &rule), GW_INCLUDED);
    assert_string_equal(rule, "get_*");
    assert_int_equal(gw_tool_verdict(a, "add", &rule), GW_NOT_INCLUDED);
    assert_null(rule);
    assert_int_equal(gw_tool_verdict(b, "rmdir", &rule), GW_EXCLUDED);
    assert_string_equal(rule, "rm*");
    assert_int_equal(gw_tool_verdict(b, "ls", &rule), GW_INCLUDED);
    assert_null(rule);
    assert_false(gw_bridge_tool_kept(&f, "hermes_reset"));
    assert_true(gw_bridge_tool_kept(&f, "hermes_task"));
    gwfile_cleanup(&f);
}

static void interpolates_every_string(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(parse("upstreams:\n  a:\n    command: \"/opt/${env:SOME_KEY}/bin\"\n"
                      "    args: [\"--k=${SOME_KEY}${SOME_KEY}\", \"$5 ${DOLLAR}\"]\n"
                      "    tools: {include: [\"${SOME_KEY}\"]}\n",
                      &f, err));
    assert_string_equal(f.up[0].command, "/opt/k-123/bin");
    assert_string_equal(json_string_value(json_array_get(f.up[0].args, 0)), "--k=k-123k-123");
    assert_string_equal(json_string_value(json_array_get(f.up[0].args, 1)), "$5 ${SOME_KEY}");
    assert_string_equal(json_string_value(json_array_get(f.up[0].include, 0)), "k-123");
    gwfile_cleanup(&f);
}

static void unresolved_names_where_not_what(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_false(
        parse("upstreams:\n  ctx:\n    url: http://127.0.0.1:1/mcp\n"
              "    headers: {Authorization: \"Bearer ${MISSING_TOKEN} tok-secret-value\"}\n",
              &f, err));
    assert_non_null(strstr(err, "upstream ctx"));
    assert_non_null(strstr(err, "headers.Authorization"));
    assert_non_null(strstr(err, "MISSING_TOKEN"));
    assert_null(strstr(err, "tok-secret-value"));
    assert_null(strstr(err, "Bearer"));
    assert_int_equal(f.nup, 0);
    assert_null(f.doc);
    assert_false(parse("bridge_tools: {include: [\"${NOPE}\"]}\nupstreams: {}\n", &f, err));
    assert_non_null(strstr(err, "key bridge_tools.include[0]"));
    assert_false(parse("upstreams:\n  a:\n    command: \"${SOME_KEY\"\n", &f, err));
    assert_non_null(strstr(err, "closing"));
    assert_false(parse("upstreams:\n  a:\n    command: \"${1BAD}\"\n", &f, err));
    assert_non_null(strstr(err, "upstream a, key command"));
}

static void refuses_bad_files(void **state)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"", "empty"},
        {"- a\n", "mapping with 'upstreams'"},
        {"upstreams: []\n", "mapping of upstream names"},
        {"upstream: {}\n", "not a known key"},
        {"upstreams:\n  Bad:\n    command: x\n", "name 'Bad' is not allowed"},
        {"upstreams:\n  -x:\n    command: x\n", "is not allowed"},
        {"upstreams:\n  abcdefghijklmnopqrstuvwxyz0123456:\n    command: x\n", "not allowed"},
        {"upstreams:\n  a:\n    command: x\n    url: http://127.0.0.1/\n", "exactly one"},
        {"upstreams:\n  a: {}\n", "exactly one"},
        {"upstreams:\n  a:\n    url: ftp://x/\n", "upstream a, key url"},
        {"upstreams:\n  a:\n    command: x\n    comand: y\n", "key comand: is not a known key"},
        {"upstreams:\n  a:\n    command: x\n    tools: {exlude: [x]}\n", "tools.exlude"},
        {"upstreams:\n  a:\n    command: x\n    tools: {include: echo}\n", "tools.include"},
        {"upstreams:\n  a:\n    command: x\n    required: yes\n", "key required"},
        {"upstreams:\n  a:\n    command: x\n    timeout: 0\n", "key timeout"},
        {"upstreams:\n  a:\n    command: x\n    timeout: -1\n", "key timeout"},
        {"upstreams:\n  a:\n    command: x\n    max_in_flight: 99999999999\n", "max_in_flight"},
        {"upstreams:\n  a:\n    command: x\n    prefix: \"a.b\"\n", "key prefix"},
        {"upstreams:\n  a:\n    command: x\n    env: {\"1X\": y}\n", "key env"},
        {"upstreams:\n  a:\n    command: x\n    headers: {A: b}\n", "key headers"},
        {"upstreams:\n  a:\n    command: \"x\\0y\"\n", "NUL"},
        {"upstreams:\n  a: &x {command: y}\n", "anchors"},
        {"upstreams:\n  a:\n    command: x\n    smoke: {tool: echo, extra: 1}\n", "smoke"},
        {"upstreams:\n  a:\n    command: x\n    smoke: []\n", "key smoke: must be a mapping"},
        {"upstreams:\n  a:\n    command: x\n    smoke: [{tool: a}, {arguments: {}}]\n",
         "key smoke: must be a mapping with a tool name"},
        {"upstreams:\n  a:\n    command: x\n    smoke: [{tool: a, arguments: [1]}]\n",
         "key smoke.arguments"},
        {"upstreams:\n  a:\n    command: x\n    smoke: [{tool: a}, {tool: a}, {tool: a}, "
         "{tool: a}, {tool: a}, {tool: a}, {tool: a}, {tool: a}, {tool: a}]\n",
         "a list of 1 to 8"},
        {"upstreams:\n  a:\n    command: x\n    enabled: no\n",
         "key enabled: must be true or false"},
        {"upstreams:\n  a:\n    command: x\n    enabled: 0\n",
         "key enabled: must be true or false"},
        {"upstreams:\n  a:\n    command: x\n    enabled: [false]\n", "key enabled"},
        /* a disabled upstream is validated all the same */
        {"upstreams:\n  a:\n    command: x\n    enabled: false\n    timeout: 0\n", "key timeout"},
        {"upstreams:\n  a:\n    command: x\n    enabled: false\n    tools: {exlude: [x]}\n",
         "tools.exlude"},
        {"upstreams:\n  a:\n    url: http://h/\n    instances: {by: cwd, roots: [/]}\n",
         "key instances: belongs to a command"},
        {"upstreams:\n  a:\n    command: x\n    instances: {roots: [/]}\n", "instances.by"},
        {"upstreams:\n  a:\n    command: x\n    instances: {by: \"a b\", roots: [/]}\n",
         "instances.by"},
        {"upstreams:\n  a:\n    command: x\n    instances: {by: cwd}\n", "instances.roots"},
        {"upstreams:\n  a:\n    command: x\n    instances: {by: cwd, roots: []}\n",
         "instances.roots"},
        {"upstreams:\n  a:\n    command: x\n    instances: {by: cwd, roots: [/], max: 0}\n",
         "instances.max"},
        {"upstreams:\n  a:\n    command: x\n    instances: {by: cwd, roots: [/], max: 65}\n",
         "instances.max"},
        {"upstreams:\n  a:\n    command: x\n    instances: {by: cwd, roots: [/], idle_s: 0}\n",
         "instances.idle_s"},
        {"upstreams:\n  a:\n    command: x\n    instances: {by: cwd, roots: [/], bye: 1}\n",
         "instances.bye"},
        {"upstreams:\n  a:\n    command: x\n    instances: [cwd]\n", "key instances"},
        {"upstreams:\n  a:\n    command: x\n    expect_tools: a\n", "key expect_tools"},
        {"upstreams:\n  a:\n    command: x\n    expect_tools: [\"a:b\"]\n", "key expect_tools"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct gwfile f;
        char err[300];
        bool ok = parse(cases[i].text, &f, err);
        if (ok || strstr(err, cases[i].want) == NULL)
            fail_msg("case %zu (%s): ok=%d err=%s", i, cases[i].text, ok, err);
    }
}

static void instances_and_expect_tools(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(
        parse("upstreams:\n  graph:\n    command: g\n"
              "    instances: {by: cwd, roots: [\"~/src\", /srv/work], max: 8, idle_s: 30}\n"
              "    expect_tools: [inspect_code_graph]\n"
              "  plain:\n    url: http://127.0.0.1/mcp\n    expect_tools: [a, b]\n",
              &f, err));
    const struct gw_upstream *g = &f.up[0], *p = &f.up[1];
    assert_string_equal(g->instance_by, "cwd");
    assert_int_equal(json_array_size(g->instance_roots), 2);
    assert_string_equal(json_string_value(json_array_get(g->instance_roots, 0)), "~/src");
    assert_int_equal(g->instance_max, 8);
    assert_int_equal(g->instance_idle_s, 30);
    assert_int_equal(json_array_size(g->expect_tools), 1);
    assert_null(p->instance_by);
    assert_null(p->instance_roots);
    assert_int_equal(json_array_size(p->expect_tools), 2);
    gwfile_cleanup(&f);
    assert_true(
        parse("upstreams:\n  g:\n    command: g\n    instances: {by: cwd, roots: [/]}\n", &f, err));
    assert_int_equal(f.up[0].instance_max, 4);
    assert_int_equal(f.up[0].instance_idle_s, 600);
    assert_null(f.up[0].expect_tools);
    gwfile_cleanup(&f);
}

static void startup_context_key(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(parse("upstreams: {}\n", &f, err));
    assert_null(f.startup_files); /* absent: no startup_context tool */
    gwfile_cleanup(&f);
    assert_true(parse("upstreams: {}\nstartup_context:\n  files: [\"~/.hermes/SOUL.md\", /etc/x]\n",
                      &f, err));
    assert_int_equal(json_array_size(f.startup_files), 2);
    assert_string_equal(json_string_value(json_array_get(f.startup_files, 0)), "~/.hermes/SOUL.md");
    assert_int_equal(f.startup_max_bytes, 262144);
    gwfile_cleanup(&f);
    assert_true(parse("upstreams: {}\nstartup_context: {files: [/a], max_bytes: 10}\n", &f, err));
    assert_int_equal(f.startup_max_bytes, 10);
    gwfile_cleanup(&f);
    static const char *const bad[][2] = {
        {"startup_context: [/a]\n", "key startup_context"},
        {"startup_context: {files: []}\n", "startup_context.files"},
        {"startup_context: {}\n", "startup_context.files"},
        {"startup_context: {files: /a}\n", "startup_context.files"},
        {"startup_context: {files: [rel/path]}\n", "startup_context.files"},
        {"startup_context: {files: [\"~user/x\"]}\n", "startup_context.files"},
        {"startup_context: {files: [\"\"]}\n", "startup_context.files"},
        {"startup_context: {files: [/a], max_bytes: 0}\n", "startup_context.max_bytes"},
        {"startup_context: {files: [/a], max_bytes: 4194305}\n", "startup_context.max_bytes"},
        {"startup_context: {files: [/a], max_bytes: big}\n", "startup_context.max_bytes"},
        {"startup_context: {files: [/a], path: /b}\n", "unknown key"},
        {"startup_context: {files: [/a,/b,/c,/d,/e,/f,/g,/h,/i,/j,/k,/l,/m,/n,/o,/p,/q]}\n",
         "startup_context.files"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[300];
        snprintf(text, sizeof text, "upstreams: {}\n%s", bad[i][0]);
        bool ok = parse(text, &f, err);
        if (ok || strstr(err, bad[i][1]) == NULL)
            fail_msg("case %zu (%s): ok=%d err=%s", i, bad[i][0], ok, err);
    }
}

static void name_rules(void **state)
{
    (void)state;
    assert_true(gw_upstream_name_ok("a"));
    assert_true(gw_upstream_name_ok("0a_b-c"));
    assert_false(gw_upstream_name_ok("_a"));
    assert_false(gw_upstream_name_ok("A"));
    assert_false(gw_upstream_name_ok(""));
    assert_true(gw_tool_name_ok("Everything__get-Env_1"));
    assert_false(gw_tool_name_ok(""));
    assert_false(gw_tool_name_ok("server:tool"));
    char long_name[66];
    memset(long_name, 'a', 65);
    long_name[65] = '\0';
    assert_false(gw_tool_name_ok(long_name));
    long_name[64] = '\0';
    assert_true(gw_tool_name_ok(long_name));
}

/* tools.guard and tools.args: globs over the upstream's names, policies by tool. */
static void guards_and_arg_policies(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(parse("upstreams:\n  h:\n    command: x\n    tools:\n      include: ['*']\n"
                      "      guard: {cronjob: confirm, \"write_*\": approve}\n"
                      "      args:\n"
                      "        cronjob: {drop: [model], fix: {delivery: local}}\n"
                      "        mem: {enum: {kind: [a, b]}, max_items: {tasks: 2},\n"
                      "              max_length: {content: 10}, reject_secrets: [content]}\n",
                      &f, err));
    assert_int_equal(gw_tool_guard(&f.up[0], "cronjob"), GW_GUARD_CONFIRM);
    assert_int_equal(gw_tool_guard(&f.up[0], "write_file"), GW_GUARD_APPROVE);
    assert_int_equal(gw_tool_guard(&f.up[0], "read_file"), GW_GUARD_NONE);
    assert_non_null(gw_tool_policy(&f.up[0], "mem"));
    assert_non_null(json_object_get(gw_tool_policy(&f.up[0], "cronjob"), "fix"));
    assert_null(gw_tool_policy(&f.up[0], "read_file"));
    gwfile_cleanup(&f);
    /* fix values keep their YAML type: plain scalars typed, quoted ones strings */
    assert_true(parse("upstreams:\n  h:\n    command: x\n    tools:\n      include: ['*']\n"
                      "      args:\n        t:\n          fix:\n            b: false\n"
                      "            n: 42\n            s: \"42\"\n            z: ~\n"
                      "            r: -0.25\n            w: local\n            t: !!str 5\n"
                      "            m: 9007199254740991\n",
                      &f, err));
    json_t *fix = json_object_get(gw_tool_policy(&f.up[0], "t"), "fix");
    assert_true(json_is_false(json_object_get(fix, "b")));
    assert_int_equal(json_integer_value(json_object_get(fix, "n")), 42);
    assert_string_equal(json_string_value(json_object_get(fix, "s")), "42");
    assert_true(json_is_null(json_object_get(fix, "z")));
    assert_true(json_real_value(json_object_get(fix, "r")) == -0.25);
    assert_string_equal(json_string_value(json_object_get(fix, "w")), "local");
    assert_string_equal(json_string_value(json_object_get(fix, "t")), "5"); /* tagged: a string */
    assert_int_equal(json_integer_value(json_object_get(fix, "m")), 9007199254740991LL);
    gwfile_cleanup(&f);
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"guard: {x: maybe}", "key tools.guard.x: must be confirm, approve or"},
        {"guard: {x: {approve: {action: [create]}}}",
         "upstream a, key tools.guard.x: approve cannot be conditional"},
        {"guard: {x: {confirm: {action: []}}}", "upstream a, key tools.guard.x: must be confirm"},
        {"guard: {x: {confirm: {action: [[create]]}}}", "key tools.guard.x: must be confirm"},
        {"guard: {x: {confirm: {action: {a: b}}}}", "key tools.guard.x: must be confirm"},
        {"guard: {x: {confirm: {action: create}}}", "key tools.guard.x: must be confirm"},
        {"guard: {x: {confirm: {action: [create], mode: [x]}}}", "key tools.guard.x: must be"},
        {"guard: {x: {confirm: [create]}}", "key tools.guard.x: must be confirm"},
        {"guard: {x: {confirm: {action: [create]}, approve: x}}", "key tools.guard.x: must be"},
        {"guard: {x: {confirmm: {action: [create]}}}", "key tools.guard.x: must be confirm"},
        {"guard: [x]", "key tools.guard: must be a mapping"},
        {"args: {t: {dropp: [a]}}", "key tools.args.t.dropp: is not a known key"},
        {"args: {t: {drop: a}}", "key tools.args.t.drop"},
        {"args: {t: {fix: [a]}}", "key tools.args.t.fix"},
        {"args: {t: {enum: {k: []}}}", "key tools.args.t.enum"},
        {"args: {t: {enum: {k: [[a]]}}}", "key tools.args.t.enum"},
        {"args: {t: {max_items: {k: 0}}}", "key tools.args.t.max_items"},
        {"args: {t: {max_length: {k: x}}}", "key tools.args.t.max_length"},
        {"args: {t: {reject_secrets: content}}", "key tools.args.t.reject_secrets"},
        {"args: {t: {require: kind}}", "key tools.args.t.require"},
        {"args: {t: {require: {kind: [create]}}}", "key tools.args.t.require"},
        {"args: {t: {require: {kind: {action: [create], mode: [x]}}}}", "key tools.args.t.require"},
        {"args: {t: [drop]}", "key tools.args.t: must be a mapping"},
        {"args: [t]", "key tools.args: must be a mapping"},
        {"args: {t: {fix: {n: 123456789012345678901234567890}}}",
         "key tools.args.t.fix.n: is a number JSON cannot carry exactly"},
        {"args: {t: {fix: {n: -1e999}}}", "key tools.args.t.fix.n: is a number"},
        {"args: {t: {fix: {n: 9007199254740993}}}", "key tools.args.t.fix.n: is a number"},
        {"args: {t: {fix: {n: -9007199254740992}}}", "key tools.args.t.fix.n: is a number"},
        {"args: {t: {fix: {n: 1e-400}}}", "key tools.args.t.fix.n: is a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[300];
        snprintf(text, sizeof text, "upstreams:\n  a:\n    command: x\n    tools: {%s}\n",
                 bad[i].body);
        bool ok = parse(text, &f, err);
        if (ok || strstr(err, bad[i].want) == NULL)
            fail_msg("case %zu (%s): ok=%d err=%s", i, bad[i].body, ok, err);
    }
}

/* tools.limits: globs over the upstream's names; for each limit the lowest matching value. */
static void tool_limits(void **state)
{
    struct gwfile f;
    char err[300];
    unsigned per_min, in_flight;
    (void)state;
    assert_true(parse("upstreams:\n  h:\n    command: x\n    tools:\n      include: ['*']\n"
                      "      limits:\n        '*': {calls_per_min: 60}\n"
                      "        'write_*': {calls_per_min: 100, calls_in_flight: 2}\n"
                      "        write_file: {calls_per_min: 10}\n"
                      "        read_file: {calls_per_min: 0}\n",
                      &f, err));
    assert_true(gw_tool_limits(&f.up[0], "write_file", &per_min, &in_flight));
    assert_int_equal(per_min, 10);
    assert_int_equal(in_flight, 2);
    assert_true(gw_tool_limits(&f.up[0], "write_text", &per_min, &in_flight));
    assert_int_equal(per_min, 60); /* '*' is lower than 'write_*' */
    assert_int_equal(in_flight, 2);
    assert_true(gw_tool_limits(&f.up[0], "read_file", &per_min, &in_flight));
    assert_int_equal(per_min, 60); /* 0 sets none: '*' still applies */
    assert_int_equal(in_flight, 0);
    gwfile_cleanup(&f);
    assert_true(
        parse("upstreams:\n  h:\n    command: x\n    tools:\n      include: ['*']\n", &f, err));
    assert_false(gw_tool_limits(&f.up[0], "write_file", &per_min, &in_flight));
    assert_int_equal(per_min, 0);
    assert_int_equal(in_flight, 0);
    gwfile_cleanup(&f);
    static const struct {
        const char *body, *want;
    } bad[] = {
        {"limits: {x: {calls_per_min: 1000001}}",
         "upstream a, key tools.limits.x.calls_per_min: must be a whole number 0-1000000"},
        {"limits: {x: {calls_per_min: -1}}", "key tools.limits.x.calls_per_min: must be"},
        {"limits: {x: {calls_per_min: ten}}", "key tools.limits.x.calls_per_min: must be"},
        {"limits: {x: {calls_in_flight: 10001}}",
         "key tools.limits.x.calls_in_flight: must be a whole number 0-10000"},
        {"limits: {x: {calls: 1}}", "key tools.limits.x.calls: is not a known key"},
        {"limits: {x: {}}", "key tools.limits.x: must give calls_per_min, calls_in_flight or both"},
        {"limits: {x: 5}", "key tools.limits.x: must be a mapping (calls_per_min"},
        {"limits: [x]", "key tools.limits: must be a mapping of at most 256 globs"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[300];
        snprintf(text, sizeof text, "upstreams:\n  a:\n    command: x\n    tools: {%s}\n",
                 bad[i].body);
        bool ok = parse(text, &f, err);
        if (ok || strstr(err, bad[i].want) == NULL)
            fail_msg("case %zu (%s): ok=%d err=%s", i, bad[i].body, ok, err);
    }
}

/* A conditional confirm ({confirm: {argument: [values]}}): gw_tool_guard says confirm and
 * gw_tool_policy carries the condition as confirm_when, unless a stricter glob matches too
 * (approve, or a plain confirm); two conditional globs add up. */
static void conditional_confirm_guard(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(parse("upstreams:\n  h:\n    command: x\n    tools:\n      include: ['*']\n"
                      "      guard:\n"
                      "        cronjob: {confirm: {action: [create, remove]}}\n"
                      "        \"cron*\": {confirm: {action: [run]}}\n"
                      "        \"crontab\": confirm\n"
                      "        \"cronwrite\": approve\n"
                      "        \"two_*\": {confirm: {mode: [write]}}\n"
                      "        \"two_args\": {confirm: {action: [create]}}\n"
                      "      args:\n        cronjob: {drop: [model]}\n",
                      &f, err));
    assert_int_equal(gw_tool_guard(&f.up[0], "cronjob"), GW_GUARD_CONFIRM);
    /* other readers of tools.guard (gateway check, serve's approve check) see only words */
    assert_string_equal(json_string_value(json_object_get(f.up[0].guard, "cronjob")), "confirm");
    assert_string_equal(json_string_value(json_object_get(f.up[0].guard, "cron*")), "confirm");
    json_t *p = gw_tool_policy(&f.up[0], "cronjob");
    json_t *when = json_object_get(p, "confirm_when"), *v;
    size_t i;
    /* the union of cronjob's and cron*'s values, in whichever order the globs come */
    json_t *want = json_loads("{\"action\": [\"create\", \"remove\", \"run\"]}", 0, NULL);
    assert_int_equal(json_array_size(json_object_get(when, "action")), 3);
    json_array_foreach(json_object_get(want, "action"), i, v)
    {
        bool found = false;
        json_t *x;
        size_t j;
        json_array_foreach(json_object_get(when, "action"), j, x) found |= json_equal(x, v);
        assert_true(found);
    }
    json_decref(want);
    assert_int_equal(json_object_size(when), 1);
    assert_non_null(json_object_get(p, "drop"));              /* the tool's own policy is kept */
    assert_ptr_equal(gw_tool_policy(&f.up[0], "cronjob"), p); /* one object per tool */
    /* the plain confirm on crontab and approve on cronwrite are stricter than cron*'s condition */
    assert_int_equal(gw_tool_guard(&f.up[0], "crontab"), GW_GUARD_CONFIRM);
    assert_null(gw_tool_policy(&f.up[0], "crontab"));
    assert_int_equal(gw_tool_guard(&f.up[0], "cronwrite"), GW_GUARD_APPROVE);
    assert_null(gw_tool_policy(&f.up[0], "cronwrite"));
    /* two conditions on two arguments: either one asks for confirmation */
    when = json_object_get(gw_tool_policy(&f.up[0], "two_args"), "confirm_when");
    assert_int_equal(json_object_size(when), 2);
    assert_non_null(json_object_get(when, "mode"));
    assert_non_null(json_object_get(when, "action"));
    assert_int_equal(gw_tool_guard(&f.up[0], "read_file"), GW_GUARD_NONE);
    assert_null(gw_tool_policy(&f.up[0], "read_file"));
    gwfile_cleanup(&f);
}

/* approvals.timeout_s: top level, default 600, bounded, nothing else under approvals. */
static void approvals_timeout_is_read_and_bounded(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    const char *up = "upstreams: {a: {url: http://127.0.0.1:1/mcp}}\n";
    char text[400];
    assert_true(parse(up, &f, err));
    assert_int_equal(f.approvals_timeout_s, 600);
    gwfile_cleanup(&f);
    snprintf(text, sizeof text, "%sapprovals: {timeout_s: 5}\n", up);
    assert_true(parse(text, &f, err));
    assert_int_equal(f.approvals_timeout_s, 5);
    gwfile_cleanup(&f);
    snprintf(text, sizeof text, "%sapprovals: {timeout_s: 0}\n", up);
    assert_false(parse(text, &f, err));
    assert_non_null(strstr(err, "approvals.timeout_s"));
    snprintf(text, sizeof text, "%sapprovals: {timeout_s: 5, auto: yes}\n", up);
    assert_false(parse(text, &f, err));
    assert_non_null(strstr(err, "approvals"));
}

/* smoke: one mapping or a list of them, kept as a list in file order. */
static void smoke_calls_as_a_list(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(parse("upstreams:\n  h:\n    command: x\n    smoke:\n"
                      "      - {tool: web_search, arguments: {query: q}}\n"
                      "      - {tool: web_extract, arguments: {urls: [\"https://example.com/\"]}}\n"
                      "  o:\n    command: x\n    smoke: {tool: echo}\n",
                      &f, err));
    assert_int_equal(json_array_size(f.up[0].smoke), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(f.up[0].smoke, 1), "tool")),
        "web_extract");
    assert_int_equal(json_array_size(f.up[1].smoke), 1);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(f.up[1].smoke, 0), "tool")), "echo");
    gwfile_cleanup(&f);
}

static void collect_note(bool warn, const char *line, void *arg)
{
    json_array_append_new(arg, json_pack("[bs]", warn, line));
}

/* enabled: false keeps the upstream out of up (what serve starts and exposes) and in off;
 * true or absent is as before. The notes name both-include-and-exclude (warn; bridge_tools
 * too) and the disabled one (a note); an empty exclude beside include is no contradiction. */
static void enabled_and_notes(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(
        parse("upstreams:\n"
              "  a:\n    command: x\n    enabled: true\n"
              "    tools: {include: [echo], exclude: [\"get_*\"]}\n"
              "  b:\n    command: y\n    enabled: false\n    tools: {include: [\"*\"]}\n"
              "  c:\n    url: http://127.0.0.1/mcp\n    tools: {include: [echo], exclude: []}\n"
              "bridge_tools: {include: [hermes_task], exclude: [\"*\"]}\n",
              &f, err));
    assert_int_equal(f.nup, 2);
    assert_string_equal(f.up[0].name, "a");
    assert_true(f.up[0].enabled);
    assert_string_equal(f.up[1].name, "c");
    assert_int_equal(f.noff, 1);
    assert_string_equal(f.off[0].name, "b");
    assert_false(f.off[0].enabled);
    json_t *notes = json_array();
    gwfile_notes(&f, collect_note, notes);
    assert_int_equal(json_array_size(notes), 3);
    json_t *bridge = json_array_get(notes, 0);
    assert_true(json_is_true(json_array_get(bridge, 0)));
    assert_non_null(strstr(json_string_value(json_array_get(bridge, 1)),
                           "bridge_tools has both include and exclude"));
    json_t *n0 = json_array_get(notes, 1), *n1 = json_array_get(notes, 2);
    assert_true(json_is_true(json_array_get(n0, 0)));
    assert_non_null(strstr(json_string_value(json_array_get(n0, 1)),
                           "upstream a has both tools.include and tools.exclude"));
    assert_non_null(strstr(json_string_value(json_array_get(n0, 1)), "exclude is ignored"));
    assert_true(json_is_false(json_array_get(n1, 0)));
    assert_non_null(strstr(json_string_value(json_array_get(n1, 1)),
                           "upstream b is disabled (enabled: false)"));
    json_decref(notes);
    gwfile_cleanup(&f);
}

/* A disabled upstream's placeholders are checked for syntax but not resolved: one disabled
 * because its secret is not set yet does not fail the file (nor is its value read). */
static void disabled_upstreams_resolve_no_placeholder(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(parse("upstreams:\n"
                      "  a:\n    command: x\n    env: {K: \"${SOME_KEY}\"}\n"
                      "  b:\n    command: y\n    enabled: false\n    env: {T: \"${NOT_SET_YET}\"}\n"
                      "  c:\n    url: \"${NOR_THIS}\"\n    enabled: false\n"
                      "    headers: {Authorization: \"Bearer ${SOME_KEY}\"}\n",
                      &f, err));
    assert_string_equal(json_string_value(json_object_get(f.up[0].env, "K")), "k-123");
    assert_int_equal(f.noff, 2);
    assert_string_equal(json_string_value(json_object_get(f.off[0].env, "T")), "${NOT_SET_YET}");
    assert_string_equal(json_string_value(json_object_get(f.off[1].headers, "Authorization")),
                        "Bearer ${SOME_KEY}");
    gwfile_cleanup(&f);
    /* A malformed placeholder is still an error there. */
    assert_false(parse("upstreams:\n  b:\n    command: y\n    enabled: false\n"
                       "    env: {T: \"${bad-name}\"}\n",
                       &f, err));
    assert_non_null(strstr(err, "upstream b"));
    /* And an unset one in an enabled upstream as before. */
    assert_false(
        parse("upstreams:\n  a:\n    command: x\n    env: {T: \"${NOT_SET_YET}\"}\n", &f, err));
    assert_non_null(strstr(err, "NOT_SET_YET"));
}

/* The include globs matching no offered tool, from names or from tools/list entries. */
static void include_globs_matching_nothing(void **state)
{
    struct gwfile f;
    char err[300];
    (void)state;
    assert_true(parse("upstreams:\n  a:\n    command: x\n"
                      "    tools: {include: [echo, \"get_*\", ehco, \"web_*\"]}\n",
                      &f, err));
    json_t *tools =
        json_loads("[{\"name\": \"echo\"}, {\"name\": \"get_sum\"}, {\"name\": \"x\"}]", 0, NULL);
    json_t *unmatched = gw_include_unmatched(&f.up[0], tools);
    json_t *want = json_loads("[\"ehco\", \"web_*\"]", 0, NULL);
    assert_true(json_equal(unmatched, want));
    json_decref(unmatched);
    json_decref(tools);
    tools = json_loads("[\"echo\", \"get_x\", \"web_search\", \"ehco\"]", 0, NULL);
    unmatched = gw_include_unmatched(&f.up[0], tools);
    assert_int_equal(json_array_size(unmatched), 0);
    json_decref(unmatched);
    json_decref(tools);
    json_decref(want);
    gwfile_cleanup(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_the_issue_example),
        cmocka_unit_test(approvals_timeout_is_read_and_bounded),
        cmocka_unit_test(fills_the_defaults),
        cmocka_unit_test(include_wins_and_globs_match),
        cmocka_unit_test(interpolates_every_string),
        cmocka_unit_test(unresolved_names_where_not_what),
        cmocka_unit_test(refuses_bad_files),
        cmocka_unit_test(instances_and_expect_tools),
        cmocka_unit_test(startup_context_key),
        cmocka_unit_test(name_rules),
        cmocka_unit_test(guards_and_arg_policies),
        cmocka_unit_test(conditional_confirm_guard),
        cmocka_unit_test(tool_limits),
        cmocka_unit_test(approvals_timeout_is_read_and_bounded),
        cmocka_unit_test(smoke_calls_as_a_list),
        cmocka_unit_test(enabled_and_notes),
        cmocka_unit_test(disabled_upstreams_resolve_no_placeholder),
        cmocka_unit_test(include_globs_matching_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
