/* gwfile.c — parsing and validating the gateway file. The YAML becomes JSON (yamljson, every
 * scalar a string), placeholders are replaced (gwinterp), then each upstream is checked key by
 * key and its defaults are written into the document, so the settings point into one object
 * that owns them. Unknown keys are refused: a typo such as "exlude" must not silently expose
 * every tool. */
#include "gwfile.h"

#include <fnmatch.h>
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
    "required", "timeout",      "connect_timeout", "max_in_flight", "tools", "smoke"};
static const char *const tools_keys[] = {"include", "exclude", "resources", "prompts"};
static const char *const rules_keys[] = {"include", "exclude"};

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
    if (url && (!json_is_string(url) || !url_ok(json_string_value(url))))
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

static bool parse_tools(struct gw_upstream *u, json_t *o, char *err, size_t errlen)
{
    json_t *tools = json_object_get(o, "tools"), *smoke = json_object_get(o, "smoke");
    if (tools) {
        if (!parse_rules(tools, u->name, "tools", tools_keys, 4, &u->include, &u->exclude, err,
                         errlen))
            return false;
        if (!parse_bool(json_object_get(tools, "resources"), false, &u->resources))
            return fail(err, errlen, u->name, "tools.resources", "must be true or false");
        if (!parse_bool(json_object_get(tools, "prompts"), false, &u->prompts))
            return fail(err, errlen, u->name, "tools.prompts", "must be true or false");
    }
    if (smoke) {
        const char *k;
        json_t *v;
        if (!json_is_object(smoke) || !json_is_string(json_object_get(smoke, "tool")))
            return fail(err, errlen, u->name, "smoke", "must be a mapping with a tool name");
        json_object_foreach(smoke, k, v) if (strcmp(k, "tool") && strcmp(k, "arguments"))
            return fail(err, errlen, u->name, "smoke", "takes only tool and arguments");
        json_t *a = json_object_get(smoke, "arguments");
        if (a && !json_is_object(a))
            return fail(err, errlen, u->name, "smoke.arguments", "must be a mapping");
        u->smoke = smoke;
    }
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
           parse_tools(u, o, err, errlen);
}

static bool parse_top(struct gwfile *f, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    if (!json_is_object(f->doc))
        return fail(err, errlen, NULL, "(top)", "the file must be a mapping with 'upstreams'");
    json_object_foreach(f->doc, k, v) if (strcmp(k, "upstreams") && strcmp(k, "bridge_tools") &&
                                          strcmp(k, "approvals"))
    {
        char key[48];
        snprintf(key, sizeof key, "%.40s", k);
        utf8_clean(key);
        return fail(err, errlen, NULL, key,
                    "is not a known key (upstreams, bridge_tools, approvals)");
    }
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
    json_object_foreach(ups, k, v) {
        if (!parse_upstream(&f->up[f->nup], k, v, err, errlen))
            return false;
        f->nup++;
    }
    return true;
}

bool gwfile_parse(const char *text, size_t len, gw_lookup_fn *lookup, void *lookup_arg,
                  struct gwfile *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (errlen)
        err[0] = '\0';
    out->doc = yamljson_parse(text, len, "the gateway file", err, errlen);
    bool ok = out->doc && gwinterp_doc(out->doc, lookup, lookup_arg, err, errlen) &&
              parse_top(out, err, errlen);
    if (!ok) {
        /* Names and keys in the reason are the file's text: one clean line for the log. */
        utf8_clean(err);
        for (char *p = err; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
        gwfile_cleanup(out);
    }
    return ok;
}

void gwfile_cleanup(struct gwfile *f)
{
    if (f == NULL)
        return;
    free(f->up);
    json_decref(f->doc);
    memset(f, 0, sizeof *f);
}

static const char *first_match(json_t *globs, const char *name)
{
    size_t i;
    json_t *g;
    json_array_foreach(globs, i, g) if (fnmatch(json_string_value(g), name, 0) == 0) return
        json_string_value(g);
    return NULL;
}

static enum gw_verdict verdict(json_t *inc, json_t *exc, const char *tool, const char **rule)
{
    *rule = NULL;
    if (inc && (*rule = first_match(inc, tool)))
        return GW_INCLUDED; /* include wins over exclude */
    if (exc && (*rule = first_match(exc, tool)))
        return GW_EXCLUDED;
    if (inc)
        return GW_NOT_INCLUDED;
    return exc ? GW_INCLUDED : GW_DEFAULT_DENY;
}

enum gw_verdict gw_tool_verdict(const struct gw_upstream *u, const char *tool, const char **rule)
{
    return verdict(u->include, u->exclude, tool, rule);
}

bool gw_bridge_tool_kept(const struct gwfile *f, const char *tool)
{
    const char *rule;
    if (f == NULL || (!f->bridge_include && !f->bridge_exclude))
        return true;
    return verdict(f->bridge_include, f->bridge_exclude, tool, &rule) == GW_INCLUDED;
}

const char *gw_verdict_name(enum gw_verdict v)
{
    switch (v) {
    case GW_INCLUDED: return "included";
    case GW_EXCLUDED: return "excluded";
    case GW_NOT_INCLUDED: return "not included";
    default: return "default deny";
    }
}
