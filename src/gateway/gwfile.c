/* gwfile.c — parsing and validating the gateway file. The YAML becomes JSON (yamljson, every
 * scalar a string), placeholders are replaced (gwinterp), then the document is walked against
 * the file's shape, one table of keys per level (jspec.h: type, bounds, default, handler), and
 * the defaults are written into the document, so the settings point into one object that owns
 * them. Unknown keys are refused: a typo such as "exlude" must not silently expose every tool.
 * tools.args fix values are sent to the upstream as they are, so they alone keep their YAML
 * type: those yamljson marks as plain (unquoted, untagged) scalars and that read as a boolean,
 * null or number become one. */
#include "gwfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwinterp.h"
#include "jspec.h"
#include "mem.h"

#include "utf8.h"
#include "yamljson.h"

#define PREFIX_MAX 63

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
    json_object_foreach(o, k, v)
    {
        if (!key_ok(k) || !json_is_string(v) || strpbrk(json_string_value(v), "\r\n"))
            return false;
    }
    return true;
}

/* ---------- the checks the types cannot say (jspec handlers) ---------- */

#define UP(out) ((const struct gw_upstream *)(out))

static bool is_command(const void *out)
{
    return UP(out)->command != NULL;
}

static bool is_url(const void *out)
{
    return UP(out)->url != NULL;
}

static bool is_stdio(const void *out)
{
    return UP(out)->kind == GW_STDIO;
}

static json_t *empty_list(const void *out)
{
    (void)out;
    return json_array();
}

static json_t *empty_map(const void *out)
{
    (void)out;
    return json_object();
}

static json_t *default_prefix(const void *out)
{
    return json_sprintf("%s__", UP(out)->name);
}

/* The upstream's transport: exactly one of command (stdio) and url (Streamable HTTP). */
static const char *one_transport(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)v;
    json_t *cmd = json_object_get(o, "command"), *url = json_object_get(o, "url");
    if ((cmd == NULL) == (url == NULL)) {
        jspec_fail(w, "command/url", "give exactly one: command (stdio) or url (Streamable HTTP)");
        return JSPEC_FAILED;
    }
    ((struct gw_upstream *)out)->kind = cmd ? GW_STDIO : GW_HTTP;
    return NULL;
}

/* A disabled upstream's placeholders are not resolved (gwinterp.c): its url may be one. */
static const char *url_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)out;
    const char *u = json_string_value(v), *on = json_string_value(json_object_get(o, "enabled"));
    bool unresolved = on && strcmp(on, "false") == 0 && strstr(u, "${");
    bool ok = (strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0) &&
              strpbrk(u, " \t\r\n") == NULL && strlen(u) < 2048;
    return ok || unresolved ? NULL : "must be an http:// or https:// URL";
}

static const char *env_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    return string_map_ok(v, env_name_ok) ? NULL : "must map variable names to one-line strings";
}

static const char *headers_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    return string_map_ok(v, header_name_ok) ? NULL : "must map header names to one-line strings";
}

static const char *prefix_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    return name_chars_ok(json_string_value(v), PREFIX_MAX)
               ? NULL
               : "must be at most 63 letters, digits, '_' or '-'";
}

static const char *tool_names_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    size_t i;
    json_t *name;
    json_array_foreach(
        v, i, name) if (!gw_tool_name_ok(json_string_value(name))) return "must be a list of at "
                                                                          "most 256 tool names";
    return NULL;
}

static const char *tool_name_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    return gw_tool_name_ok(json_string_value(v)) ? NULL : "must name a string argument";
}

static bool non_empty_strings(json_t *v)
{
    return jspec_strings_ok(v, GW_MAX_RULES) && json_array_size(v) > 0;
}

/* A condition: {argument: [values]}, one argument. */
static bool when_ok(json_t *v)
{
    const char *k;
    json_t *values;
    if (!json_is_object(v) || json_object_size(v) != 1)
        return false;
    json_object_foreach(v, k, values) if (k[0] == '\0' || !non_empty_strings(values)) return false;
    return true;
}

/* One tools.guard value: confirm, approve, or {confirm: {argument: [values]}} (confirmation
 * only when the argument is one of the values). approve stays unconditional: a person decides
 * every call, and a condition the client's arguments steer would let it skip them. */
static const char *guard_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
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

#define WRONG_SHAPE                                                                                \
    "has the wrong shape (drop, reject_secrets: lists of property names; require: a list of "      \
    "property names or {property: {argument: [values]}}; fix: {property: value}; enum: "           \
    "{property: [strings]}; max_items, max_length: {property: 1..16777216})"

static const char *names_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    return non_empty_strings(v) ? NULL : WRONG_SHAPE;
}

static const char *require_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    return non_empty_strings(v) || property_map_ok(v, when_ok) ? NULL : WRONG_SHAPE;
}

static const char *fix_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    return property_map_ok(v, any_value) ? NULL : WRONG_SHAPE;
}

static const char *enum_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    return property_map_ok(v, non_empty_strings) ? NULL : WRONG_SHAPE;
}

/* {property: 1..16777216}: YAML scalars arrive as strings and become integers here. */
static const char *caps_check(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    const char *k;
    json_t *n;
    unsigned cap;
    if (!json_is_object(v) || json_object_size(v) > GW_MAX_RULES)
        return WRONG_SHAPE;
    json_object_foreach(v, k, n)
    {
        if (k[0] == '\0' || !jspec_uint(n, 0, 1, 16 * 1024 * 1024, &cap))
            return WRONG_SHAPE;
        json_object_set_new(v, k, json_integer(cap));
    }
    return NULL;
}

/* smoke: one call {tool, arguments} (kept as a list of one) or a list of 1 to 8 of them. */
static const char *smoke_check(struct jspec_walk *w, json_t *o, json_t *smoke, void *out)
{
    size_t i;
    json_t *call, *v;
    const char *k;
    if (json_is_object(smoke)) {
        json_t *list = json_pack("[O]", smoke);
        json_object_set_new(o, "smoke", list);
        smoke = list;
    }
    if (!json_is_array(smoke) || json_array_size(smoke) == 0 ||
        json_array_size(smoke) > GW_MAX_SMOKE)
        return "must be a mapping {tool, arguments} or a list of 1 to 8 of them";
    json_array_foreach(smoke, i, call)
    {
        if (!json_is_object(call) || !json_is_string(json_object_get(call, "tool")))
            return "must be a mapping with a tool name";
        json_object_foreach(call, k,
                            v) if (strcmp(k, "tool") &&
                                   strcmp(k, "arguments")) return "takes only tool and arguments";
        json_t *a = json_object_get(call, "arguments");
        if (a && !json_is_object(a)) {
            jspec_fail(w, "arguments", "must be a mapping");
            return JSPEC_FAILED;
        }
    }
    ((struct gw_upstream *)out)->smoke = smoke;
    return NULL;
}

static const char *startup_files_check(struct jspec_walk *w, json_t *o, json_t *files, void *out)
{
    (void)w, (void)o, (void)out;
    size_t i;
    json_t *v;
    json_array_foreach(files, i, v)
    {
        const char *p = json_string_value(v);
        if (strlen(p) != json_string_length(v) || strlen(p) > 4095 ||
            !(p[0] == '/' || (p[0] == '~' && (p[1] == '/' || p[1] == '\0'))))
            return "each path must be absolute or start with ~/";
    }
    return NULL;
}

/* ---------- the file's shape, level by level ---------- */

#define GLOBS(n, field)                                                                            \
    {                                                                                              \
        .name = n, .type = JSPEC_STRINGS, .max_items = GW_MAX_RULES, .at = field,                  \
        .why = "must be a list of at most 256 non-empty globs"                                     \
    }
#define SECONDS(n, field, lo_, hi_, dflt_, why_)                                                   \
    {                                                                                              \
        .name = n, .type = JSPEC_UINT, .lo = lo_, .hi = hi_, .dflt = dflt_, .at = field,           \
        .why = why_                                                                                \
    }
#define IN_UP(f) offsetof(struct gw_upstream, f)
#define IN_FILE(f) offsetof(struct gwfile, f)
#define POLICY(n, fn)                                                                              \
    {                                                                                              \
        .name = n, .type = JSPEC_ANY, .at = JSPEC_NOWHERE, .check = fn                             \
    }

/* One tool's policy (tools.args.TOOL), checked in the file's order. */
static const struct jspec_level policy_level = {
    .not_object = "must be a mapping",
    .unknown = "is not a known key",
    .doc_order = true,
    .keys = (const struct jspec_key[]){
        POLICY("drop", names_check), POLICY("fix", fix_check), POLICY("enum", enum_check),
        POLICY("max_items", caps_check), POLICY("max_length", caps_check),
        POLICY("reject_secrets", names_check), POLICY("require", require_check), JSPEC_END}};

/* One tools.limits value: {calls_per_min, calls_in_flight}, at least one of them. */
static const char *some_limit(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)v, (void)out;
    return json_object_get(o, "calls_per_min") || json_object_get(o, "calls_in_flight")
               ? NULL
               : "must give calls_per_min, calls_in_flight or both";
}

static const struct jspec_level limit_level = {
    .not_object = "must be a mapping (calls_per_min, calls_in_flight)",
    .unknown = "is not a known key (calls_per_min, calls_in_flight)",
    .first = some_limit,
    .keys = (const struct jspec_key[]){
        SECONDS("calls_per_min", JSPEC_NOWHERE, 0, GW_MAX_CALLS_PER_MIN, 0,
                "must be a whole number 0-1000000 (0: none)"),
        SECONDS("calls_in_flight", JSPEC_NOWHERE, 0, GW_MAX_CALLS_IN_FLIGHT, 0,
                "must be a whole number 0-10000 (0: none)"),
        JSPEC_END}};

static const struct jspec_level tools_level = {
    .not_object = "must be a mapping",
    .unknown = "is not a known key",
    .keys = (const struct jspec_key[]){GLOBS("include", IN_UP(include)),
                                       GLOBS("exclude", IN_UP(exclude)),
                                       {.name = "resources",
                                        .type = JSPEC_BOOL,
                                        .at = IN_UP(resources),
                                        .why = "must be true or false"},
                                       {.name = "prompts",
                                        .type = JSPEC_BOOL,
                                        .at = IN_UP(prompts),
                                        .why = "must be true or false"},
                                       {.name = "guard",
                                        .type = JSPEC_MAP,
                                        .max_items = GW_MAX_RULES,
                                        .at = IN_UP(guard),
                                        .each = guard_check,
                                        .why = "must be a mapping of at most 256 globs"},
                                       {.name = "args",
                                        .type = JSPEC_MAP,
                                        .max_items = GW_MAX_RULES,
                                        .at = IN_UP(policies),
                                        .level = &policy_level,
                                        .why = "must be a mapping of at most 256 tools"},
                                       {.name = "limits",
                                        .type = JSPEC_MAP,
                                        .max_items = GW_MAX_RULES,
                                        .at = IN_UP(limits),
                                        .level = &limit_level,
                                        .why = "must be a mapping of at most 256 globs"},
                                       JSPEC_END}};

/* instances: {by, roots, max, idle_s} on a command upstream. Roots are only shaped here (the
 * file is parsed without I/O); gateway start resolves them. */
static const struct jspec_level instances_level = {
    .not_object = "must be a mapping",
    .unknown = "is not a known key",
    .keys = (const struct jspec_key[]){
        {.name = "by",
         .type = JSPEC_STRING,
         .required = true,
         .nonempty = true,
         .at = IN_UP(instance_by),
         .check = tool_name_check,
         .why = "must name a string argument"},
        {.name = "roots",
         .type = JSPEC_STRINGS,
         .required = true,
         .min_items = 1,
         .max_items = GW_MAX_ROOTS,
         .at = IN_UP(instance_roots),
         .why = "must be a list of 1-16 directories"},
        SECONDS("max", IN_UP(instance_max), 1, GW_MAX_INSTANCES, 4, "must be 1-64"),
        SECONDS("idle_s", IN_UP(instance_idle_s), 1, 86400, 600, "must be 1-86400 seconds"),
        JSPEC_END}};

#define COMMAND_ONLY .belongs = is_command, .not_here = "belongs to a command upstream"

static const struct jspec_level upstream_level = {
    .not_object = "must be a mapping",
    .self = "(itself)",
    .unknown = "is not a known key",
    .first = one_transport,
    .keys = (const struct jspec_key[]){
        {.name = "command",
         .type = JSPEC_STRING,
         .nonempty = true,
         .at = IN_UP(command),
         .why = "must be a non-empty string"},
        {.name = "url",
         .type = JSPEC_STRING,
         .at = IN_UP(url),
         .check = url_check,
         .why = "must be an http:// or https:// URL"},
        {.name = "args",
         .type = JSPEC_STRINGS,
         .max_items = 256,
         .at = IN_UP(args),
         COMMAND_ONLY,
         .absent = empty_list,
         .why = "must be a list of at most 256 non-empty strings"},
        {.name = "env",
         .type = JSPEC_ANY,
         .at = IN_UP(env),
         .check = env_check,
         COMMAND_ONLY,
         .absent = empty_map},
        {.name = "cwd",
         .type = JSPEC_STRING,
         .nonempty = true,
         .at = IN_UP(cwd),
         .belongs = is_command,
         .not_here = "must be a directory of a command upstream",
         .why = "must be a directory of a command upstream"},
        {.name = "headers",
         .type = JSPEC_ANY,
         .at = IN_UP(headers),
         .check = headers_check,
         .belongs = is_url,
         .not_here = "belongs to a url upstream",
         .absent = empty_map},
        {.name = "required",
         .type = JSPEC_BOOL,
         .dflt = 1,
         .at = IN_UP(required),
         .why = "must be true or false"},
        {.name = "enabled",
         .type = JSPEC_BOOL,
         .dflt = 1,
         .at = IN_UP(enabled),
         .why = "must be true or false"},
        SECONDS("timeout", IN_UP(timeout_s), 1, 86400, 300, "must be 1-86400 seconds"),
        SECONDS("connect_timeout", IN_UP(connect_timeout_s), 1, 3600, 15, "must be 1-3600 seconds"),
        SECONDS("max_in_flight", IN_UP(max_in_flight), 1, 1024, 16, "must be 1-1024"),
        {.name = "prefix",
         .type = JSPEC_STRING,
         .at = IN_UP(prefix),
         .check = prefix_check,
         .absent = default_prefix,
         .why = "must be at most 63 letters, digits, '_' or '-'"},
        {.name = "tools", .type = JSPEC_OBJECT, .at = JSPEC_NOWHERE, .level = &tools_level},
        {.name = "smoke", .type = JSPEC_ANY, .at = JSPEC_NOWHERE, .check = smoke_check},
        {.name = "expect_tools",
         .type = JSPEC_STRINGS,
         .max_items = GW_MAX_RULES,
         .at = IN_UP(expect_tools),
         .check = tool_names_check,
         .why = "must be a list of at most 256 tool names"},
        {.name = "instances",
         .type = JSPEC_OBJECT,
         .at = JSPEC_NOWHERE,
         .level = &instances_level,
         .belongs = is_stdio,
         .not_here = "belongs to a command upstream"},
        JSPEC_END}};

/* upstreams: {name: upstream}, each walked under its own name ("upstream NAME, key ..."). */
static const char *upstreams_check(struct jspec_walk *w, json_t *o, json_t *ups, void *out)
{
    (void)o;
    struct gwfile *f = out;
    const char *name;
    json_t *v;
    char scope[48];
    if (!json_is_object(ups))
        return "must be a mapping of upstream names";
    if (json_object_size(ups) > GW_MAX_UPSTREAMS)
        return "at most 32 upstreams";
    f->up = xcalloc(json_object_size(ups) + 1, sizeof *f->up);
    f->off = xcalloc(json_object_size(ups) + 1, sizeof *f->off);
    json_object_foreach(ups, name, v)
    {
        struct gw_upstream u = {.name = name};
        if (!gw_upstream_name_ok(name)) {
            char shown[40];
            snprintf(shown, sizeof shown, "%.32s", name);
            utf8_clean(shown);
            snprintf(w->err, w->errlen,
                     "upstream name '%s' is not allowed: use 1-32 of a-z, 0-9, '_', '-', "
                     "starting with a letter or digit",
                     shown);
            return JSPEC_FAILED;
        }
        snprintf(scope, sizeof scope, "upstream %s, ", name);
        struct jspec_walk uw = {.err = w->err, .errlen = w->errlen, .scope = scope};
        if (!jspec_walk(&uw, &upstream_level, v, &u))
            return JSPEC_FAILED;
        if (u.enabled)
            f->up[f->nup++] = u;
        else /* validated all the same: a mistake shows before it is enabled */
            f->off[f->noff++] = u;
    }
    return NULL;
}

/* startup_context: {files: [...], max_bytes}: the files the gateway's own tool returns
 * (startctx.c); the paths are only checked for shape here, read at each call. */
static const struct jspec_level startup_level = {
    .not_object = "must be a mapping (files, max_bytes)",
    .unknown = "has an unknown key (files, max_bytes)",
    .unknown_here = true,
    .keys = (const struct jspec_key[]){{.name = "files",
                                        .type = JSPEC_STRINGS,
                                        .required = true,
                                        .min_items = 1,
                                        .max_items = GW_MAX_STARTUP_FILES,
                                        .at = IN_FILE(startup_files),
                                        .check = startup_files_check,
                                        .why = "must be a list of 1 to 16 non-empty paths"},
                                       SECONDS("max_bytes", IN_FILE(startup_max_bytes), 1,
                                               GW_STARTUP_BYTES_CAP, GW_STARTUP_MAX_BYTES,
                                               "must be a whole number from 1 to 4194304"),
                                       JSPEC_END}};

static const struct jspec_level approvals_level = {
    .not_object = "takes only timeout_s",
    .unknown = "takes only timeout_s",
    .unknown_here = true,
    .keys =
        (const struct jspec_key[]){SECONDS("timeout_s", IN_FILE(approvals_timeout_s), 1, 86400, 600,
                                           "must be a whole number of seconds, 1 to 86400"),
                                   JSPEC_END}};

static const struct jspec_level bridge_tools_level = {
    .not_object = "must be a mapping",
    .unknown = "is not a known key",
    .keys = (const struct jspec_key[]){GLOBS("include", IN_FILE(bridge_include)),
                                       GLOBS("exclude", IN_FILE(bridge_exclude)), JSPEC_END}};

static const struct jspec_level file_level = {
    .not_object = "the file must be a mapping with 'upstreams'",
    .self = "(top)",
    .unknown = "is not a known key (upstreams, bridge_tools, startup_context, approvals)",
    .keys = (const struct jspec_key[]){{.name = "startup_context",
                                        .type = JSPEC_OBJECT,
                                        .at = JSPEC_NOWHERE,
                                        .level = &startup_level},
                                       {.name = "approvals",
                                        .type = JSPEC_OBJECT,
                                        .at = JSPEC_NOWHERE,
                                        .level = &approvals_level,
                                        .defaults_when_absent = true},
                                       {.name = "bridge_tools",
                                        .type = JSPEC_OBJECT,
                                        .at = JSPEC_NOWHERE,
                                        .level = &bridge_tools_level},
                                       {.name = "upstreams",
                                        .type = JSPEC_ANY,
                                        .required = true,
                                        .at = JSPEC_NOWHERE,
                                        .check = upstreams_check,
                                        .why = "must be a mapping of upstream names"},
                                       JSPEC_END}};

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
    json_object_foreach(json_object_get(doc, "upstreams"), name, u)
    {
        json_array_foreach(json_object_get(u, "args"), i, a)
        {
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
        json_object_foreach(u->policies, tool, policy)
        {
            json_t *fix = json_object_get(policy, "fix");
            json_t *marks = json_object_get(json_object_get(tools, tool), "fix");
            json_object_foreach(fix, prop, v)
            {
                bool range = false;
                json_t *typed = json_is_string(v) && json_is_true(json_object_get(marks, prop))
                                    ? yamljson_plain_value(json_string_value(v), &range)
                                    : NULL;
                if (range) {
                    char where[140];
                    snprintf(where, sizeof where, "tools.args.%.40s.fix.%.40s", tool, prop);
                    utf8_clean(where);
                    snprintf(err, errlen, "upstream %s, key %s: %s", u->name, where,
                             "is a number JSON cannot carry exactly; quote it to send a string");
                    return false;
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
              jspec_walk(&(struct jspec_walk){.err = err, .errlen = errlen, .scope = ""},
                         &file_level, out->doc, out) &&
              type_fix_values(out, plain, err, errlen);
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
