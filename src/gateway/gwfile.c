/* gwfile.c — parsing and validating the gateway file. The YAML becomes JSON (yamljson, every
 * scalar a string), placeholders are replaced (gwinterp), then each upstream is checked key by
 * key and its defaults are written into the document, so the settings point into one object
 * that owns them. Unknown keys are refused: a typo such as "exlude" must not silently expose
 * every tool. tools.args fix values are sent to the upstream as they are, so they alone keep
 * their YAML type: those yamljson marks as plain (unquoted, untagged) scalars and that read as
 * a boolean, null or number become one. */
#include "gwfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwinterp.h"
#include "mem.h"

#include "utf8.h"
#include "yamljson.h"

#define PREFIX_MAX 63

static const char *const upstream_keys[] = {
    "command", "args",          "env",           "cwd",   "url",   "headers", "prefix",
    "required", "timeout",      "connect_timeout", "max_in_flight", "tools", "smoke",
    "instances", "expect_tools", "enabled"};
static const char *const tools_keys[] = {"include", "exclude", "resources", "prompts",
                                         "guard", "args"};
static const char *const policy_keys[] = {"drop",       "fix",            "enum",   "max_items",
                                          "max_length", "reject_secrets", "require"};
static const char *const rules_keys[] = {"include", "exclude"};
static const char *const instances_keys[] = {"by", "roots", "max", "idle_s"};
static const char *const startup_keys[] = {"files", "max_bytes"};

static bool in_list(const char *k, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(k, list[i]) == 0)
            return true;
    return false;
}

bool gw_upstream_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 32)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              (i > 0 && (c == '_' || c == '-'))))
            return false;
    }
    return true;
}

static bool name_chars_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

bool gw_tool_name_ok(const char *s)
{
    return s[0] != '\0' && name_chars_ok(s, 64);
}

/* Errors name the upstream and key; the text is ours, except names the caller checked. */
static bool fail(char *err, size_t errlen, const char *up, const char *key, const char *why)
{
    if (up)
        snprintf(err, errlen, "upstream %s, key %s: %s", up, key, why);
    else
        snprintf(err, errlen, "key %s: %s", key, why);
    return false;
}

static bool parse_bool(json_t *v, bool dflt, bool *out)
{
    const char *s = json_string_value(v);
    if (v == NULL) {
        *out = dflt;
        return true;
    }
    if (s && strcmp(s, "true") == 0)
        *out = true;
    else if (s && strcmp(s, "false") == 0)
        *out = false;
    else
        return false;
    return true;
}

static bool parse_uint(json_t *v, unsigned dflt, unsigned lo, unsigned hi, unsigned *out)
{
    const char *s = json_string_value(v);
    unsigned long n = 0;
    if (v == NULL) {
        *out = dflt;
        return true;
    }
    if (s == NULL || *s == '\0' || strlen(s) > 9)
        return false;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        n = n * 10 + (unsigned long)(*p - '0');
    }
    if (n < lo || n > hi)
        return false;
    *out = (unsigned)n;
    return true;
}

static bool string_list_ok(json_t *a, size_t max)
{
    size_t i;
    json_t *v;
    if (!json_is_array(a) || json_array_size(a) > max)
        return false;
    json_array_foreach(a, i, v) if (!json_is_string(v) || json_string_length(v) == 0) return false;
    return true;
}

static bool env_name_ok(const char *s)
{
    if (*s == '\0' || (*s >= '0' && *s <= '9') || strlen(s) > 128)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

static bool header_name_ok(const char *s)
{
    if (*s == '\0' || strlen(s) > 128)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *s)))
            return false;
    return true;
}

/* An object of strings whose keys pass key_ok and whose values have no line breaks. */
static bool string_map_ok(json_t *o, bool (*key_ok)(const char *))
{
    const char *k;
    json_t *v;
    if (!json_is_object(o) || json_object_size(o) > 256)
        return false;
    json_object_foreach(o, k, v) {
        if (!key_ok(k) || !json_is_string(v) || strpbrk(json_string_value(v), "\r\n"))
            return false;
    }
    return true;
}

static bool url_ok(const char *u)
{
    return (strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0) &&
           strpbrk(u, " \t\r\n") == NULL && strlen(u) < 2048;
}

static bool parse_rules(json_t *o, const char *up, const char *key, const char *const *keys,
                        size_t nkeys, json_t **inc, json_t **exc, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    char where[64];
    if (!json_is_object(o))
        return fail(err, errlen, up, key, "must be a mapping");
    json_object_foreach(o, k, v) {
        snprintf(where, sizeof where, "%s.%.40s", key, k);
        if (!in_list(k, keys, nkeys))
            return fail(err, errlen, up, where, "is not a known key");
    }
    *inc = json_object_get(o, "include");
    *exc = json_object_get(o, "exclude");
    const char *bad = *inc && !string_list_ok(*inc, GW_MAX_RULES)   ? "include"
                      : *exc && !string_list_ok(*exc, GW_MAX_RULES) ? "exclude"
                                                                    : NULL;
    if (bad) {
        snprintf(where, sizeof where, "%s.%s", key, bad);
        return fail(err, errlen, up, where, "must be a list of at most 256 non-empty globs");
    }
    return true;
}

static bool parse_transport(struct gw_upstream *u, json_t *o, char *err, size_t errlen)
{
    json_t *cmd = json_object_get(o, "command"), *url = json_object_get(o, "url");
    if ((cmd == NULL) == (url == NULL))
        return fail(err, errlen, u->name, "command/url",
                    "give exactly one: command (stdio) or url (Streamable HTTP)");
    u->kind = cmd ? GW_STDIO : GW_HTTP;
    if (cmd && (!json_is_string(cmd) || json_string_length(cmd) == 0))
        return fail(err, errlen, u->name, "command", "must be a non-empty string");
    /* A disabled upstream's placeholders are not resolved (gwinterp.c): its url may be one */
    const char *on = json_string_value(json_object_get(o, "enabled"));
    bool unresolved = on && strcmp(on, "false") == 0 && json_is_string(url) &&
                      strstr(json_string_value(url), "${");
    if (url && (!json_is_string(url) || !(url_ok(json_string_value(url)) || unresolved)))
        return fail(err, errlen, u->name, "url", "must be an http:// or https:// URL");
    u->command = json_string_value(cmd);
    u->url = json_string_value(url);
    json_t *args = json_object_get(o, "args"), *cwd = json_object_get(o, "cwd");
    if (args && (!u->command || !string_list_ok(args, 256)))
        return fail(err, errlen, u->name, "args",
                    u->command ? "must be a list of at most 256 non-empty strings"
                               : "belongs to a command upstream");
    if (!args)
        json_object_set_new(o, "args", args = json_array());
    u->args = args;
    json_t *env = json_object_get(o, "env"), *hdr = json_object_get(o, "headers");
    if (env && (!u->command || !string_map_ok(env, env_name_ok)))
        return fail(err, errlen, u->name, "env",
                    u->command ? "must map variable names to one-line strings"
                               : "belongs to a command upstream");
    if (!env)
        json_object_set_new(o, "env", env = json_object());
    u->env = env;
    if (cwd && (!u->command || !json_is_string(cwd) || json_string_length(cwd) == 0))
        return fail(err, errlen, u->name, "cwd", "must be a directory of a command upstream");
    u->cwd = json_string_value(cwd);
    if (hdr && (!u->url || !string_map_ok(hdr, header_name_ok)))
        return fail(err, errlen, u->name, "headers",
                    u->url ? "must map header names to one-line strings"
                           : "belongs to a url upstream");
    if (!hdr)
        json_object_set_new(o, "headers", hdr = json_object());
    u->headers = hdr;
    return true;
}

static bool parse_limits(struct gw_upstream *u, json_t *o, char *err, size_t errlen)
{
    if (!parse_bool(json_object_get(o, "required"), true, &u->required))
        return fail(err, errlen, u->name, "required", "must be true or false");
    if (!parse_bool(json_object_get(o, "enabled"), true, &u->enabled))
        return fail(err, errlen, u->name, "enabled", "must be true or false");
    if (!parse_uint(json_object_get(o, "timeout"), 300, 1, 86400, &u->timeout_s))
        return fail(err, errlen, u->name, "timeout", "must be 1-86400 seconds");
    if (!parse_uint(json_object_get(o, "connect_timeout"), 15, 1, 3600, &u->connect_timeout_s))
        return fail(err, errlen, u->name, "connect_timeout", "must be 1-3600 seconds");
    if (!parse_uint(json_object_get(o, "max_in_flight"), 16, 1, 1024, &u->max_in_flight))
        return fail(err, errlen, u->name, "max_in_flight", "must be 1-1024");
    json_t *prefix = json_object_get(o, "prefix");
    if (prefix && (!json_is_string(prefix) || !name_chars_ok(json_string_value(prefix), PREFIX_MAX)))
        return fail(err, errlen, u->name, "prefix",
                    "must be at most 63 letters, digits, '_' or '-'");
    if (!prefix)
        json_object_set_new(o, "prefix", prefix = json_sprintf("%s__", u->name));
    u->prefix = json_string_value(prefix);
    return true;
}

static bool when_ok(json_t *v);

/* One tools.guard value: confirm, approve, or {confirm: {argument: [values]}} (confirmation
 * only when the argument is one of the values). approve stays unconditional: a person decides
 * every call, and a condition the client's arguments steer would let it skip them. */
static const char *guard_problem(json_t *v)
{
    const char *s = json_string_value(v);
    if (s)
        return strcmp(s, "confirm") == 0 || strcmp(s, "approve") == 0
                   ? NULL
                   : "must be confirm, approve or {confirm: {argument: [values]}}";
    if (json_is_object(v) && json_object_size(v) == 1 && json_object_get(v, "approve"))
        return "approve cannot be conditional (the operator decides every call): write approve, "
               "or {confirm: {argument: [values]}}";
    if (json_is_object(v) && json_object_size(v) == 1 && when_ok(json_object_get(v, "confirm")))
        return NULL;
    return "must be confirm, approve or {confirm: {argument: [values]}} (one argument, a "
           "non-empty list of non-empty strings)";
}

/* tools.guard: {glob: guard}. */
static bool parse_guard(struct gw_upstream *u, json_t *g, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    char where[80];
    if (g == NULL)
        return true;
    if (!json_is_object(g) || json_object_size(g) > GW_MAX_RULES)
        return fail(err, errlen, u->name, "tools.guard", "must be a mapping of at most 256 globs");
    json_object_foreach(g, k, v) {
        const char *problem = guard_problem(v);
        if (problem) {
            snprintf(where, sizeof where, "tools.guard.%.40s", k);
            utf8_clean(where);
            return fail(err, errlen, u->name, where, problem);
        }
    }
    u->guard = g;
    return true;
}

/* {property: X} with every X passing ok; false on another shape. */
static bool property_map_ok(json_t *o, bool (*ok)(json_t *))
{
    const char *k;
    json_t *v;
    if (!json_is_object(o) || json_object_size(o) > GW_MAX_RULES)
        return false;
    json_object_foreach(o, k, v) if (k[0] == '\0' || !ok(v)) return false;
    return true;
}

static bool any_value(json_t *v)
{
    return v != NULL && !json_is_null(v);
}

static bool non_empty_strings(json_t *v)
{
    return string_list_ok(v, GW_MAX_RULES) && json_array_size(v) > 0;
}

/* require's condition: {argument: [values]}, one argument. */
static bool when_ok(json_t *v)
{
    const char *k;
    json_t *values;
    if (!json_is_object(v) || json_object_size(v) != 1)
        return false;
    json_object_foreach(v, k, values) if (k[0] == '\0' || !non_empty_strings(values)) return false;
    return true;
}

/* {property: 1..16777216}: YAML scalars arrive as strings and become integers here. */
static bool caps_ok(json_t *o)
{
    const char *k;
    json_t *v;
    unsigned n;
    if (!json_is_object(o) || json_object_size(o) > GW_MAX_RULES)
        return false;
    json_object_foreach(o, k, v) {
        if (k[0] == '\0' || !parse_uint(v, 0, 1, 16 * 1024 * 1024, &n))
            return false;
        json_object_set_new(o, k, json_integer(n));
    }
    return true;
}

/* One tool's policy: the known keys, each of its shape. */
static bool parse_policy(const char *up, const char *tool, json_t *p, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    char where[120];
    snprintf(where, sizeof where, "tools.args.%.40s", tool);
    utf8_clean(where);
    if (!json_is_object(p))
        return fail(err, errlen, up, where, "must be a mapping");
    json_object_foreach(p, k, v) {
        bool ok = strcmp(k, "drop") == 0 || strcmp(k, "reject_secrets") == 0
                      ? non_empty_strings(v)
                  : strcmp(k, "require") == 0    ? non_empty_strings(v) || property_map_ok(v, when_ok)
                  : strcmp(k, "fix") == 0        ? property_map_ok(v, any_value)
                  : strcmp(k, "enum") == 0       ? property_map_ok(v, non_empty_strings)
                  : strcmp(k, "max_items") == 0 || strcmp(k, "max_length") == 0
                      ? caps_ok(v)
                      : false;
        size_t at = strlen(where);
        snprintf(where + at, sizeof where - at, ".%.40s", k);
        utf8_clean(where);
        if (!in_list(k, policy_keys, sizeof policy_keys / sizeof *policy_keys))
            return fail(err, errlen, up, where, "is not a known key");
        if (!ok)
            return fail(err, errlen, up, where,
                        "has the wrong shape (drop, reject_secrets: lists of property names; "
                        "require: a list of property names or {property: {argument: [values]}}; "
                        "fix: "
                        "{property: value}; enum: {property: [strings]}; max_items, max_length: "
                        "{property: 1..16777216})");
        where[at] = '\0';
    }
    return true;
}

/* tools.args: {tool: policy}. */
static bool parse_policies(struct gw_upstream *u, json_t *a, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    if (a == NULL)
        return true;
    if (!json_is_object(a) || json_object_size(a) > GW_MAX_RULES)
        return fail(err, errlen, u->name, "tools.args", "must be a mapping of at most 256 tools");
    json_object_foreach(a, k, v) if (!parse_policy(u->name, k, v, err, errlen)) return false;
    u->policies = a;
    return true;
}

/* One smoke call: {tool, arguments}. */
static bool parse_smoke_call(struct gw_upstream *u, json_t *smoke, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    if (!json_is_object(smoke) || !json_is_string(json_object_get(smoke, "tool")))
        return fail(err, errlen, u->name, "smoke", "must be a mapping with a tool name");
    json_object_foreach(smoke, k, v) if (strcmp(k, "tool") && strcmp(k, "arguments"))
        return fail(err, errlen, u->name, "smoke", "takes only tool and arguments");
    json_t *a = json_object_get(smoke, "arguments");
    if (a && !json_is_object(a))
        return fail(err, errlen, u->name, "smoke.arguments", "must be a mapping");
    return true;
}

static bool parse_tools(struct gw_upstream *u, json_t *o, char *err, size_t errlen)
{
    json_t *tools = json_object_get(o, "tools"), *smoke = json_object_get(o, "smoke");
    if (tools) {
        if (!parse_rules(tools, u->name, "tools", tools_keys, 6, &u->include, &u->exclude, err,
                         errlen))
            return false;
        if (!parse_bool(json_object_get(tools, "resources"), false, &u->resources))
            return fail(err, errlen, u->name, "tools.resources", "must be true or false");
        if (!parse_bool(json_object_get(tools, "prompts"), false, &u->prompts))
            return fail(err, errlen, u->name, "tools.prompts", "must be true or false");
        if (!parse_guard(u, json_object_get(tools, "guard"), err, errlen) ||
            !parse_policies(u, json_object_get(tools, "args"), err, errlen))
            return false;
    }
    if (smoke) {
        if (json_is_object(smoke)) { /* one call: kept as a list of one */
            json_t *list = json_pack("[O]", smoke);
            json_object_set_new(o, "smoke", list);
            smoke = list;
        }
        if (!json_is_array(smoke) || json_array_size(smoke) == 0 ||
            json_array_size(smoke) > GW_MAX_SMOKE)
            return fail(err, errlen, u->name, "smoke",
                        "must be a mapping {tool, arguments} or a list of 1 to 8 of them");
        size_t i;
        json_t *call;
        json_array_foreach(smoke, i, call) if (!parse_smoke_call(u, call, err, errlen)) return false;
        u->smoke = smoke;
    }
    return true;
}

/* expect_tools: exact tool names; instances: {by, roots, max, idle_s} on a command upstream.
 * Roots are only shaped here (the file is parsed without I/O); gateway start resolves them. */
static bool parse_instances(struct gw_upstream *u, json_t *o, char *err, size_t errlen)
{
    json_t *expect = json_object_get(o, "expect_tools"), *in = json_object_get(o, "instances");
    size_t i;
    json_t *v;
    const char *k;
    if (expect) {
        bool ok = string_list_ok(expect, GW_MAX_RULES);
        json_array_foreach(expect, i, v) ok = ok && gw_tool_name_ok(json_string_value(v));
        if (!ok)
            return fail(err, errlen, u->name, "expect_tools",
                        "must be a list of at most 256 tool names");
        u->expect_tools = expect;
    }
    if (in == NULL)
        return true;
    if (u->kind != GW_STDIO)
        return fail(err, errlen, u->name, "instances", "belongs to a command upstream");
    if (!json_is_object(in))
        return fail(err, errlen, u->name, "instances", "must be a mapping");
    json_object_foreach(in, k, v) if (!in_list(k, instances_keys, 4))
    {
        char where[64];
        snprintf(where, sizeof where, "instances.%.40s", k);
        utf8_clean(where);
        return fail(err, errlen, u->name, where, "is not a known key");
    }
    json_t *by = json_object_get(in, "by"), *roots = json_object_get(in, "roots");
    if (!json_is_string(by) || !gw_tool_name_ok(json_string_value(by)))
        return fail(err, errlen, u->name, "instances.by", "must name a string argument");
    if (!roots || !string_list_ok(roots, GW_MAX_ROOTS) || json_array_size(roots) == 0)
        return fail(err, errlen, u->name, "instances.roots",
                    "must be a list of 1-16 directories");
    if (!parse_uint(json_object_get(in, "max"), 4, 1, GW_MAX_INSTANCES, &u->instance_max))
        return fail(err, errlen, u->name, "instances.max", "must be 1-64");
    if (!parse_uint(json_object_get(in, "idle_s"), 600, 1, 86400, &u->instance_idle_s))
        return fail(err, errlen, u->name, "instances.idle_s", "must be 1-86400 seconds");
    u->instance_by = json_string_value(by);
    u->instance_roots = roots;
    return true;
}

static bool parse_upstream(struct gw_upstream *u, const char *name, json_t *o, char *err,
                           size_t errlen)
{
    const char *k;
    json_t *v;
    char key[48];

    if (!gw_upstream_name_ok(name)) {
        char shown[40];
        snprintf(shown, sizeof shown, "%.32s", name);
        utf8_clean(shown);
        snprintf(err, errlen,
                 "upstream name '%s' is not allowed: use 1-32 of a-z, 0-9, '_', '-', starting "
                 "with a letter or digit",
                 shown);
        return false;
    }
    u->name = name;
    if (!json_is_object(o))
        return fail(err, errlen, name, "(itself)", "must be a mapping");
    json_object_foreach(o, k, v) {
        if (!in_list(k, upstream_keys, sizeof upstream_keys / sizeof *upstream_keys)) {
            snprintf(key, sizeof key, "%.40s", k);
            utf8_clean(key);
            return fail(err, errlen, name, key, "is not a known key");
        }
    }
    return parse_transport(u, o, err, errlen) && parse_limits(u, o, err, errlen) &&
           parse_tools(u, o, err, errlen) && parse_instances(u, o, err, errlen);
}

/* startup_context: {files: [...], max_bytes}: the files the gateway's own tool returns
 * (startctx.c); the paths are only checked for shape here, read at each call. */
static bool parse_startup(struct gwfile *f, json_t *o, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    if (!json_is_object(o))
        return fail(err, errlen, NULL, "startup_context", "must be a mapping (files, max_bytes)");
    json_object_foreach(o, k, v) if (!in_list(k, startup_keys, 2))
        return fail(err, errlen, NULL, "startup_context", "has an unknown key (files, max_bytes)");
    json_t *files = json_object_get(o, "files");
    if (!string_list_ok(files, GW_MAX_STARTUP_FILES) || json_array_size(files) == 0)
        return fail(err, errlen, NULL, "startup_context.files",
                    "must be a list of 1 to 16 non-empty paths");
    size_t i;
    json_array_foreach(files, i, v) {
        const char *p = json_string_value(v);
        if (strlen(p) != json_string_length(v) || strlen(p) > 4095 ||
            !(p[0] == '/' || (p[0] == '~' && (p[1] == '/' || p[1] == '\0'))))
            return fail(err, errlen, NULL, "startup_context.files",
                        "each path must be absolute or start with ~/");
    }
    if (!parse_uint(json_object_get(o, "max_bytes"), GW_STARTUP_MAX_BYTES, 1,
                    GW_STARTUP_BYTES_CAP, &f->startup_max_bytes))
        return fail(err, errlen, NULL, "startup_context.max_bytes",
                    "must be a whole number from 1 to 4194304");
    f->startup_files = files;
    return true;
}

static bool parse_top(struct gwfile *f, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    if (!json_is_object(f->doc))
        return fail(err, errlen, NULL, "(top)", "the file must be a mapping with 'upstreams'");
    json_object_foreach(f->doc, k, v) if (strcmp(k, "upstreams") && strcmp(k, "bridge_tools") &&
                                          strcmp(k, "startup_context") && strcmp(k, "approvals"))
    {
        char key[48];
        snprintf(key, sizeof key, "%.40s", k);
        utf8_clean(key);
        return fail(err, errlen, NULL, key,
                    "is not a known key (upstreams, bridge_tools, startup_context, approvals)");
    }
    json_t *sc = json_object_get(f->doc, "startup_context");
    if (sc && !parse_startup(f, sc, err, errlen))
        return false;
    json_t *ap = json_object_get(f->doc, "approvals");
    if (ap && (!json_is_object(ap) || json_object_size(ap) != (json_object_get(ap, "timeout_s") ? 1u : 0u)))
        return fail(err, errlen, NULL, "approvals", "takes only timeout_s");
    if (!parse_uint(json_object_get(ap, "timeout_s"), 600, 1, 86400, &f->approvals_timeout_s))
        return fail(err, errlen, NULL, "approvals.timeout_s", "must be a whole number of seconds, 1 to 86400");
    json_t *bt = json_object_get(f->doc, "bridge_tools");
    if (bt && !parse_rules(bt, NULL, "bridge_tools", rules_keys, 2, &f->bridge_include,
                           &f->bridge_exclude, err, errlen))
        return false;
    json_t *ups = json_object_get(f->doc, "upstreams");
    if (!json_is_object(ups))
        return fail(err, errlen, NULL, "upstreams", "must be a mapping of upstream names");
    if (json_object_size(ups) > GW_MAX_UPSTREAMS)
        return fail(err, errlen, NULL, "upstreams", "at most 32 upstreams");
    f->up = xcalloc(json_object_size(ups) + 1, sizeof *f->up);
    f->off = xcalloc(json_object_size(ups) + 1, sizeof *f->off);
    json_object_foreach(ups, k, v) {
        struct gw_upstream u = {0};
        if (!parse_upstream(&u, k, v, err, errlen))
            return false;
        if (u.enabled)
            f->up[f->nup++] = u;
        else /* validated all the same: a mistake shows before it is enabled */
            f->off[f->noff++] = u;
    }
    return true;
}

/* The i-th upstream of the file, enabled or not (i < nup + noff). */
static struct gw_upstream *any_upstream(struct gwfile *f, size_t i)
{
    return i < f->nup ? &f->up[i] : &f->off[i - f->nup];
}

/* Before the placeholders are replaced: the upstreams whose args hold one (names as keys). */
static json_t *args_with_placeholders(json_t *doc)
{
    json_t *names = json_object(), *u, *a;
    const char *name;
    size_t i;
    json_object_foreach(json_object_get(doc, "upstreams"), name, u) {
        json_array_foreach(json_object_get(u, "args"), i, a) {
            if (json_is_string(a) && strstr(json_string_value(a), "${"))
                json_object_set_new(names, name, json_true());
        }
    }
    return names;
}

/* Each policy's fix values that were plain scalars (plain: yamljson's marks of the whole file)
 * get their YAML type. */
static bool type_fix_values(struct gwfile *f, json_t *plain, char *err, size_t errlen)
{
    for (size_t i = 0; i < f->nup + f->noff; i++) {
        const struct gw_upstream *u = any_upstream(f, i);
        json_t *up = json_object_get(json_object_get(plain, "upstreams"), u->name);
        json_t *tools = json_object_get(json_object_get(up, "tools"), "args"), *policy, *v;
        const char *tool, *prop;
        json_object_foreach(u->policies, tool, policy) {
            json_t *fix = json_object_get(policy, "fix");
            json_t *marks = json_object_get(json_object_get(tools, tool), "fix");
            json_object_foreach(fix, prop, v) {
                bool range = false;
                json_t *typed = json_is_string(v) && json_is_true(json_object_get(marks, prop))
                                    ? yamljson_plain_value(json_string_value(v), &range)
                                    : NULL;
                if (range) {
                    char where[140];
                    snprintf(where, sizeof where, "tools.args.%.40s.fix.%.40s", tool, prop);
                    utf8_clean(where);
                    return fail(err, errlen, u->name, where,
                                "is a number JSON cannot carry exactly; quote it to send a string");
                }
                if (typed)
                    json_object_set_new(fix, prop, typed);
            }
        }
    }
    return true;
}

/* Once the file is valid: each conditional confirm's condition moves to guard_when and its
 * guard value becomes "confirm", the one other readers of tools.guard know (gwcheck, main). */
static void split_conditional_guards(struct gw_upstream *u)
{
    const char *glob;
    json_t *v;
    json_object_foreach(u->guard, glob, v) if (json_is_object(v))
    {
        if (u->guard_when == NULL) {
            u->guard_when = json_object();
            u->confirm_policies = json_object();
        }
        json_object_set(u->guard_when, glob, json_object_get(v, "confirm"));
        json_object_set_new(u->guard, glob, json_string("confirm")); /* same key: iteration holds */
    }
}

bool gwfile_parse(const char *text, size_t len, gw_lookup_fn *lookup, void *lookup_arg,
                  struct gwfile *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (errlen)
        err[0] = '\0';
    json_t *plain;
    out->doc = yamljson_parse_marked(text, len, "the gateway file", err, errlen, &plain);
    json_t *marked = out->doc ? args_with_placeholders(out->doc) : NULL;
    bool ok = out->doc && gwinterp_doc(out->doc, lookup, lookup_arg, err, errlen) &&
              parse_top(out, err, errlen) && type_fix_values(out, plain, err, errlen);
    json_decref(plain);
    for (size_t i = 0; ok && i < out->nup + out->noff; i++) {
        struct gw_upstream *u = any_upstream(out, i);
        u->args_placeholder = json_object_get(marked, u->name) != NULL;
        split_conditional_guards(u);
    }
    json_decref(marked);
    if (!ok) {
        /* Names and keys in the reason are the file's text: one clean line for the log. */
        utf8_line(err);
        gwfile_cleanup(out);
    }
    return ok;
}

void gwfile_cleanup(struct gwfile *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->nup + f->noff; i++) {
        json_decref(any_upstream(f, i)->guard_when);
        json_decref(any_upstream(f, i)->confirm_policies);
    }
    free(f->up);
    free(f->off);
    json_decref(f->doc);
    memset(f, 0, sizeof *f);
}

void gwfile_notes(const struct gwfile *f, gw_note_fn *fn, void *arg)
{
    char line[400];
    if (json_array_size(f->bridge_include) && json_array_size(f->bridge_exclude))
        fn(true,
           "bridge_tools has both include and exclude: include alone decides (a tool is kept "
           "when an include glob matches it), so exclude is ignored; keep one of them",
           arg);
    for (size_t i = 0; i < f->nup + f->noff; i++) {
        const struct gw_upstream *u = i < f->nup ? &f->up[i] : &f->off[i - f->nup];
        if (json_array_size(u->include) && json_array_size(u->exclude)) {
            snprintf(line, sizeof line,
                     "upstream %s has both tools.include and tools.exclude: include alone "
                     "decides (a tool is exposed when an include glob matches it), so exclude "
                     "is ignored; keep one of them",
                     u->name);
            fn(true, line, arg);
        }
        if (!u->enabled) {
            snprintf(line, sizeof line,
                     "upstream %s is disabled (enabled: false): validated, not started, none "
                     "of its tools exposed",
                     u->name);
            fn(false, line, arg);
        }
    }
}
