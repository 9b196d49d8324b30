/* toolargs.c — checks a tool call's arguments against its table and makes the table's JSON
 * Schema. The error texts are the ones clients and tests already know ("'x' is required"). */
#include "toolargs.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

static size_t spec_len(const struct toolarg *spec)
{
    size_t n = 0;
    while (spec[n].name)
        n++;
    return n;
}

static json_t *string_schema(const struct toolarg *a, size_t max_len)
{
    json_t *s = json_pack("{s:s}", "type", "string");
    if (a->nonempty)
        json_object_set_new(s, "minLength", json_integer(1));
    if (max_len)
        json_object_set_new(s, "maxLength", json_integer((json_int_t)max_len));
    if (a->pattern)
        json_object_set_new(s, "pattern", json_string(a->pattern));
    if (a->one_of) {
        json_t *e = json_array();
        for (const char *const *v = a->one_of; *v; v++)
            json_array_append_new(e, json_string(*v));
        json_object_set_new(s, "enum", e);
    }
    return s;
}

json_t *toolargs_schema(const struct toolarg *spec)
{
    json_t *props = json_object(), *required = json_array();
    for (const struct toolarg *a = spec; a->name; a++) {
        json_t *p;
        switch (a->type) {
        case TOOLARG_BOOL:
            p = json_pack("{s:s}", "type", "boolean");
            break;
        case TOOLARG_STRINGS:
            p = json_pack("{s:s, s:o}", "type", "array", "items",
                          string_schema(&(struct toolarg){.nonempty = false}, a->max_len));
            if (a->max_items)
                json_object_set_new(p, "maxItems", json_integer((json_int_t)a->max_items));
            break;
        default:
            p = string_schema(a, a->max_len);
            break;
        }
        if (a->description)
            json_object_set_new(p, "description", json_string(a->description));
        json_object_set_new(props, a->name, p);
        if (a->required)
            json_array_append_new(required, json_string(a->name));
    }
    json_t *schema = json_pack("{s:s, s:o}", "type", "object", "properties", props);
    if (json_array_size(required))
        json_object_set_new(schema, "required", required);
    else
        json_decref(required);
    json_object_set_new(schema, "additionalProperties", json_false());
    return schema;
}

static bool fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    utf8_clean(err); /* it may quote a client's field name */
    return false;
}

/* "must be \"a\" or \"b\"", "must be one of \"a\", \"b\" or \"c\"" */
static void enum_words(const char *const *v, char *out, size_t outlen)
{
    size_t n = 0, used = 0;
    while (v[n])
        n++;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < outlen; i++) {
        const char *sep = i == 0 ? (n > 2 ? "one of " : "") : (i + 1 == n ? " or " : ", ");
        int w = snprintf(out + used, outlen - used, "%s\"%s\"", sep, v[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Characters (code points) as JSON Schema's maxLength counts them, not bytes: a client that
 * checked the inputSchema must not be refused here. jansson holds valid UTF-8 only. */
static size_t chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

static bool too_long(const struct toolarg *a, json_t *v)
{
    size_t len = json_string_length(v);
    /* A UTF-8 character is 1 to 4 bytes: only the lengths in between need counting. */
    return a->max_len && len > a->max_len &&
           (len > 4 * a->max_len || chars(json_string_value(v), len) > a->max_len);
}

static bool check_string(const struct toolarg *a, json_t *v, char *err, size_t errlen)
{
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (too_long(a, v))
        return fail(err, errlen, "'%s' is longer than %zu characters", a->name, a->max_len);
    /* Valid JSON may carry \u0000; no field of ours may (names, ids and paths would be cut
     * short where C, the file system or the agent meets the NUL). */
    if (memchr(s, '\0', len))
        return fail(err, errlen, "'%s' contains a NUL character", a->name);
    if (a->nonempty && len == 0)
        return fail(err, errlen, "'%s' must not be empty", a->name);
    if (a->one_of) {
        bool ok = false;
        for (const char *const *e = a->one_of; *e && !ok; e++)
            ok = strcmp(*e, s) == 0;
        if (!ok) {
            char words[256];
            enum_words(a->one_of, words, sizeof words);
            return fail(err, errlen, "'%s' must be %s", a->name, words);
        }
    }
    if (a->syntax && !a->syntax(s, len))
        return fail(err, errlen, "'%s' %s", a->name,
                    a->syntax_hint ? a->syntax_hint : "is malformed");
    return true;
}

static bool check_one(const struct toolarg *a, json_t *v, char *err, size_t errlen)
{
    switch (a->type) {
    case TOOLARG_BOOL:
        if (!json_is_boolean(v))
            return fail(err, errlen, "'%s' must be a boolean", a->name);
        return true;
    case TOOLARG_STRINGS: {
        size_t i;
        json_t *item;
        if (!json_is_array(v))
            return fail(err, errlen, "'%s' must be an array of strings", a->name);
        if (a->max_items && json_array_size(v) > a->max_items)
            return fail(err, errlen, "'%s' may hold at most %zu items", a->name, a->max_items);
        json_array_foreach(v, i, item)
        {
            if (!json_is_string(item) || too_long(a, item))
                return fail(err, errlen, "'%s' items must be strings of at most %zu characters",
                            a->name, a->max_len);
            if (memchr(json_string_value(item), '\0', json_string_length(item)))
                return fail(err, errlen, "'%s' items must not contain a NUL character", a->name);
        }
        return true;
    }
    default:
        if (!json_is_string(v))
            return fail(err, errlen, "'%s' must be a string", a->name);
        return check_string(a, v, err, errlen);
    }
}

bool toolargs_check(const struct toolarg *spec, json_t *args, json_t **out, size_t out_cap,
                    char *err, size_t errlen)
{
    size_t n = spec_len(spec);
    if (n > out_cap)
        return fail(err, errlen, "internal error: the argument table has %zu entries, room for %zu",
                    n, out_cap);
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v)
    {
        bool known = false;
        for (size_t i = 0; i < n && !known; i++)
            known = strcmp(key, spec[i].name) == 0;
        if (!known)
            return fail(err, errlen, "unknown field '%.64s'", key);
    }
    for (size_t i = 0; i < n; i++) {
        v = json_object_get(args, spec[i].name);
        out[i] = NULL;
        if (v == NULL || json_is_null(v)) {
            if (spec[i].required)
                return fail(err, errlen, "'%s' is required", spec[i].name);
            continue;
        }
        if (!check_one(&spec[i], v, err, errlen))
            return false;
        out[i] = v;
    }
    return true;
}

const char *toolargs_str(json_t *const *out, size_t i)
{
    return out[i] ? json_string_value(out[i]) : NULL;
}
