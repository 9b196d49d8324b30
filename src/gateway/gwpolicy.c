/* gwpolicy.c — the argument policies and the confirm guard of an exposed tool (gwpolicy.h).
 * The schema side only tells clients the rules; the call side enforces them, since a client
 * need not read the schema. Decisions for smuggling (README "Gateway"): a dropped or fixed
 * name is refused at any depth of the arguments, compared after ASCII case folding with '_'
 * and '-' ignored, and a tool with drop or fix refuses argument names that are not ASCII (a
 * lookalike such as Cyrillic 'о' in "mоdel" cannot be told from the real one by the upstream's
 * own parser rules, so it is not let through). `confirmed` counts only as the JSON value true
 * at the top level of the arguments; anything else ("true", 1, nested, _meta) is not it. A
 * conditional confirm (policy confirm_when, gwfile.h) asks for it unless the argument is a
 * string that matches none of the values even loosely (ASCII case, spaces, '_' and '-' ignored):
 * missing, null, another type or a string with a NUL asks (fail closed), and so does "CREATE"
 * where the upstream may read it as create. */
#include "gwpolicy.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gwsecret.h"
#include "utf8.h"

#define CONFIRM_TEXT                                                                               \
    "Must be true: this tool is guarded by the gateway and runs only when the caller confirms "    \
    "the action with confirmed: true."
#define MAX_DEPTH 64 /* nesting walked for dropped names and secrets; deeper is refused */

/* ---------- the schema ---------- */

static json_t *properties_of(json_t *schema)
{
    json_t *p = json_object_get(schema, "properties");
    if (!json_is_object(p)) {
        p = json_object();
        json_object_set_new(schema, "properties", p);
    }
    return p;
}

static void unrequire(json_t *schema, const char *name)
{
    json_t *req = json_object_get(schema, "required");
    for (size_t i = json_array_size(req); i-- > 0;)
        if (json_is_string(json_array_get(req, i)) &&
            strcmp(json_string_value(json_array_get(req, i)), name) == 0)
            json_array_remove(req, i);
}

/* properties[name][key] = value (taken), the property created when missing. */
static void constrain(json_t *props, const char *name, const char *key, json_t *value)
{
    json_t *p = json_object_get(props, name);
    if (!json_is_object(p)) {
        p = json_object();
        json_object_set_new(props, name, p);
    }
    json_object_set_new(p, key, value);
}

static void hide(json_t *schema, json_t *props, const char *name)
{
    json_object_del(props, name);
    unrequire(schema, name);
}

/* name in the schema's required list (once). */
static void require(json_t *schema, const char *name)
{
    json_t *req = json_object_get(schema, "required"), *v;
    size_t i;
    if (!json_is_array(req))
        json_object_set_new(schema, "required", req = json_array());
    json_array_foreach(req, i,
                       v) if (json_is_string(v) && strcmp(json_string_value(v), name) == 0) return;
    json_array_append_new(req, json_string(name));
}

/* name required when the argument in when ({argument: [values]}) is one of the values:
 * allOf [{if: {properties: {argument: {enum: values}}, required: [argument]},
 *         then: {required: [name]}}]. */
static void require_when(json_t *schema, const char *name, json_t *when)
{
    const char *arg;
    json_t *values, *all = json_object_get(schema, "allOf");
    if (!json_is_array(all))
        json_object_set_new(schema, "allOf", all = json_array());
    json_object_foreach(when, arg, values) json_array_append_new(
        all, json_pack("{s:{s:{s:{s:O}}, s:[s]}, s:{s:[s]}}", "if", "properties", arg, "enum",
                       values, "required", arg, "then", "required", name));
}

/* The confirmed property's description: when it is needed, e.g. "Must be true when action is
 * create, update or remove (or action is missing): ...". Long value lists are cut. */
static json_t *confirm_text(json_t *when)
{
    char text[600];
    size_t n = 0, i, count;
    const char *arg, *sep = "";
    json_t *values, *v;
    if (when == NULL)
        return json_string(CONFIRM_TEXT);
    n += (size_t)snprintf(text, 300, "Must be true");
    json_object_foreach(when, arg, values)
    {
        if (n < 300)
            n += (size_t)snprintf(text + n, 300 - n, "%s when %s is ", sep, arg);
        count = json_array_size(values);
        json_array_foreach(values, i, v) if (n < 300) n +=
            (size_t)snprintf(text + n, 300 - n, "%s%s",
                             i == 0           ? ""
                             : i + 1 == count ? " or "
                                              : ", ",
                             json_string_value(v));
        if (n < 300)
            n += (size_t)snprintf(text + n, 300 - n, " (or %s is missing)", arg);
        sep = ";";
    }
    if (n >= 300)
        n = 299 - 3, memcpy(text + n, "...", 4), n += 3;
    snprintf(text + n, sizeof text - n, "%s",
             ": the gateway guards that action and runs it only when the caller confirms it "
             "with confirmed: true. Not needed otherwise.");
    utf8_line(text);
    return json_string(text);
}

static bool folds_like(const char *key, json_t *list, json_t *map);

/* Keywords whose value is a schema, an array of schemas, or a map of names to schemas. */
static const char *const sub_schema_keys[] = {"items",
                                              "additionalProperties",
                                              "contains",
                                              "not",
                                              "if",
                                              "then",
                                              "else",
                                              "propertyNames",
                                              "unevaluatedItems",
                                              "unevaluatedProperties",
                                              "additionalItems"};
static const char *const schema_list_keys[] = {"allOf", "anyOf", "oneOf", "prefixItems", "items"};
static const char *const schema_map_keys[] = {"$defs", "definitions", "patternProperties",
                                              "dependentSchemas"};

struct hiding {
    json_t *drop, *fix; /* the policy's names */
    bool uncallable;    /* an anyOf or oneOf lost every branch */
};

/* top: the schema applies to the arguments object itself, where a fixed name is always
 * present (the gateway sets it); deeper, a fixed name is refused like a dropped one. */
static void hide_nested(json_t *schema, struct hiding *h, int depth, bool top);

/* Keywords whose subschemas apply to the same object as their schema (not to a member). */
static bool same_instance(const char *key)
{
    static const char *const same[] = {"not",   "if",    "then",  "else",
                                       "allOf", "anyOf", "oneOf", "dependentSchemas"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++)
        if (strcmp(key, same[i]) == 0)
            return true;
    return false;
}

static void hide_in_each(json_t *schemas, struct hiding *h, int depth, bool top)
{
    size_t i;
    const char *k;
    json_t *v;
    json_array_foreach(schemas, i, v) hide_nested(v, h, depth, top);
    if (json_is_object(schemas))
        json_object_foreach(schemas, k, v) hide_nested(v, h, depth, top);
}

/* Whether schema's own required names a name no call can hold there: no call matches it. */
static bool requires_hidden(json_t *schema, const struct hiding *h, bool top)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(schema, "required"), i, v)
    {
        if (json_is_string(v) && folds_like(json_string_value(v), h->drop, top ? NULL : h->fix))
            return true;
    }
    return false;
}

/* Where matching a subschema decides something, one that can never match goes whole (it
 * would lose the name below and match more): a not of it rejects nothing; an if of it never
 * holds, so its then goes and its else always applies (moved into allOf); an anyOf or oneOf
 * branch of it is no choice (with none left the keyword is one no call matches, as before). */
static void drop_unmatchable(json_t *schema, struct hiding *h, bool top)
{
    if (requires_hidden(json_object_get(schema, "not"), h, top))
        json_object_del(schema, "not");
    if (requires_hidden(json_object_get(schema, "if"), h, top)) {
        json_t *els = json_object_get(schema, "else");
        if (els) {
            json_t *all = json_object_get(schema, "allOf");
            if (!json_is_array(all))
                json_object_set_new(schema, "allOf", all = json_array());
            json_array_append(all, els);
        }
        json_object_del(schema, "if");
        json_object_del(schema, "then");
        json_object_del(schema, "else");
    }
    static const char *const choices[] = {"anyOf", "oneOf"};
    for (size_t c = 0; c < 2; c++) {
        json_t *list = json_object_get(schema, choices[c]);
        if (!json_is_array(list) || json_array_size(list) == 0)
            continue;
        for (size_t i = json_array_size(list); i-- > 0;)
            if (requires_hidden(json_array_get(list, i), h, top))
                json_array_remove(list, i);
        if (json_array_size(list) == 0) {
            json_array_append_new(list, json_pack("{s:{}}", "not"));
            h->uncallable = true;
        }
    }
}

/* The names of a dependentRequired (or draft-07 dependencies) entry list lose the hidden ones;
 * an entry keyed by one goes (it never applies); a schema entry is walked. */
static void hide_dependencies(json_t *dep, struct hiding *h, int depth, bool top)
{
    const char *k;
    json_t *v;
    void *tmp;
    size_t i;
    if (!json_is_object(dep))
        return;
    json_object_foreach_safe(dep, tmp, k, v)
    {
        if (folds_like(k, h->drop, h->fix)) {
            json_object_del(dep, k);
            continue;
        }
        if (json_is_object(v))
            hide_nested(v, h, depth + 1, top);
        for (i = json_array_size(v); i-- > 0;)
            if (json_is_string(json_array_get(v, i)) &&
                folds_like(json_string_value(json_array_get(v, i)), h->drop, h->fix))
                json_array_remove(v, i);
    }
}

/* A dropped or fixed name is refused at any depth of a call (no_hidden_names below, compared
 * folded), so a nested schema that still offers or requires one describes calls that can
 * never pass: such names leave every properties, required and dependentRequired of the
 * schema's subschemas (a required left empty goes), and subschemas that required one go where
 * that decides (drop_unmatchable). Walked by keyword, never by value, so a property that
 * happens to be named "properties" or "items" is not taken for one. */
static void hide_nested(json_t *schema, struct hiding *h, int depth, bool top)
{
    const char *k;
    json_t *v, *req;
    size_t i;
    void *tmp;
    if (!json_is_object(schema) || depth > MAX_DEPTH)
        return;
    drop_unmatchable(schema, h, top);
    json_t *props = json_object_get(schema, "properties");
    if (json_is_object(props))
        json_object_foreach_safe(props, tmp, k, v)
        {
            if (folds_like(k, h->drop, h->fix))
                json_object_del(props, k);
            else
                hide_nested(v, h, depth + 1, false);
        }
    req = json_object_get(schema, "required");
    for (i = json_array_size(req); i-- > 0;)
        if (json_is_string(json_array_get(req, i)) &&
            folds_like(json_string_value(json_array_get(req, i)), h->drop, h->fix))
            json_array_remove(req, i);
    if (json_is_array(req) && json_array_size(req) == 0)
        json_object_del(schema, "required"); /* drafts before 2019-09 want at least one */
    hide_dependencies(json_object_get(schema, "dependentRequired"), h, depth, top);
    hide_dependencies(json_object_get(schema, "dependencies"), h, depth, top);
    json_t *dep = json_object_get(schema, "dependentSchemas");
    if (json_is_object(dep))
        json_object_foreach_safe(dep, tmp, k, v)
        {
            if (folds_like(k, h->drop, h->fix))
                json_object_del(dep, k); /* its name is never present: it never applies */
        }
    /* the same object as schema's (top stays), or one inside it */
    for (i = 0; i < sizeof sub_schema_keys / sizeof *sub_schema_keys; i++)
        hide_nested(json_object_get(schema, sub_schema_keys[i]), h, depth + 1,
                    top && same_instance(sub_schema_keys[i]));
    for (i = 0; i < sizeof schema_list_keys / sizeof *schema_list_keys; i++)
        if (json_is_array(json_object_get(schema, schema_list_keys[i])))
            hide_in_each(json_object_get(schema, schema_list_keys[i]), h, depth + 1,
                         top && same_instance(schema_list_keys[i]));
    for (i = 0; i < sizeof schema_map_keys / sizeof *schema_map_keys; i++)
        if (json_is_object(json_object_get(schema, schema_map_keys[i])))
            hide_in_each(json_object_get(schema, schema_map_keys[i]), h, depth + 1,
                         top && same_instance(schema_map_keys[i]));
}

json_t *gw_policy_schema(json_t *schema, enum gw_guard guard, json_t *policy, bool *uncallable)
{
    json_t *props = properties_of(schema), *v, *list;
    json_t *drop = json_object_get(policy, "drop"), *fix = json_object_get(policy, "fix");
    const char *k;
    size_t i;
    json_array_foreach(drop, i, v) hide(schema, props, json_string_value(v));
    json_object_foreach(fix, k, v) hide(schema, props, k);
    struct hiding h = {.drop = drop, .fix = fix};
    if (drop || fix) /* the fixed values are set at the top only: nested, they are refused */
        hide_nested(schema, &h, 0, true);
    if (uncallable)
        *uncallable = h.uncallable;
    json_object_foreach(json_object_get(policy, "enum"), k, list)
    {
        constrain(props, k, "type", json_string("string"));
        constrain(props, k, "enum", json_deep_copy(list));
    }
    json_object_foreach(json_object_get(policy, "max_items"), k, v)
        constrain(props, k, "maxItems", json_incref(v));
    json_object_foreach(json_object_get(policy, "max_length"), k, v)
        constrain(props, k, "maxLength", json_incref(v));
    json_t *req = json_object_get(policy, "require");
    json_array_foreach(req, i, v) require(schema, json_string_value(v));
    json_object_foreach(req, k, v) require_when(schema, k, v);
    if (guard == GW_GUARD_CONFIRM) {
        json_t *when = json_object_get(policy, "confirm_when");
        json_object_set_new(
            props, "confirmed",
            json_pack("{s:s, s:o}", "type", "boolean", "description", confirm_text(when)));
        if (when)
            require_when(schema, "confirmed", when);
        else
            require(schema, "confirmed");
    }
    return schema;
}

/* ---------- the call ---------- */

struct verdict {
    enum toolerr *code;
    char *msg;
    size_t size;
};

/* The message is before + the field's name (capped, made valid UTF-8) + after. */
static bool refuse(struct verdict *v, enum toolerr code, const char *before, const char *field,
                   const char *after)
{
    char shown[65];
    utf8_shown(shown, sizeof shown, field);
    *v->code = code;
    snprintf(v->msg, v->size, "%s%s%s", before, shown, after);
    return false;
}

/* ASCII case folded, '_' and '-' left out: "Base-URL" and "base_url" fold alike. */
static void fold(const char *s, char *out, size_t size)
{
    size_t n = 0;
    for (; *s && n + 1 < size; s++)
        if (*s != '_' && *s != '-')
            out[n++] = (char)((*s >= 'A' && *s <= 'Z') ? *s + 32 : *s);
    out[n] = '\0';
}

static bool ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return false;
    return true;
}

/* Whether key folds like a name in list (an array) or a key of map (an object). */
static bool folds_like(const char *key, json_t *list, json_t *map)
{
    char a[256], b[256];
    size_t i;
    const char *k;
    json_t *v;
    fold(key, a, sizeof a);
    json_array_foreach(list, i, v)
    {
        fold(json_string_value(v), b, sizeof b);
        if (strcmp(a, b) == 0)
            return true;
    }
    json_object_foreach(map, k, v)
    {
        fold(k, b, sizeof b);
        if (strcmp(a, b) == 0)
            return true;
    }
    return false;
}

/* No dropped or fixed name (or a non-ASCII name) anywhere in value. */
static bool no_hidden_names(json_t *value, json_t *drop, json_t *fix, int depth, struct verdict *v)
{
    const char *k;
    json_t *x;
    size_t i;
    if (depth > MAX_DEPTH)
        return refuse(v, TE_INVALID_ARGUMENTS, "the arguments are nested too deeply", "", "");
    if (json_is_object(value))
        json_object_foreach(value, k, x)
        {
            if (!ascii(k))
                return refuse(v, TE_INVALID_ARGUMENTS,
                              "argument names must be ASCII for this tool (got '", k, "')");
            if (folds_like(k, drop, NULL))
                return refuse(v, TE_INVALID_ARGUMENTS, "argument '", k,
                              "' is not allowed for this tool");
            if (folds_like(k, NULL, fix))
                return refuse(v, TE_INVALID_ARGUMENTS, "argument '", k,
                              "' is set by the gateway and cannot be given");
            if (!no_hidden_names(x, drop, fix, depth + 1, v))
                return false;
        }
    json_array_foreach(value, i, x) if (!no_hidden_names(x, drop, fix, depth + 1, v)) return false;
    return true;
}

/* Characters of a JSON string, all of it: a "\u0000" inside must not end the count early. */
static size_t codepoints(json_t *string)
{
    const char *s = json_string_value(string);
    size_t n = 0, len = json_string_length(string);
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

static bool when_holds(json_t *args, json_t *when);

/* A required argument is present and not null; with when ({argument: [values]}) only when that
 * holds (when_holds: an absent or odd argument counts as holding, so leaving out `action` does
 * not skip the requirement). */
static bool given(json_t *args, const char *name, json_t *when, struct verdict *v)
{
    bool applies = when == NULL || when_holds(args, when);
    json_t *value = json_object_get(args, name);
    if (applies && (value == NULL || json_is_null(value)))
        return refuse(v, TE_INVALID_ARGUMENTS, "argument '", name,
                      when ? "' is required for this action" : "' is required for this tool");
    return true;
}

/* require, enum, max_items, max_length on the top-level arguments. */
static bool within_limits(json_t *args, json_t *policy, struct verdict *v)
{
    const char *k;
    json_t *lim, *list, *x;
    size_t i;
    bool found;
    json_t *req = json_object_get(policy, "require");
    json_array_foreach(req, i, x) if (!given(args, json_string_value(x), NULL, v)) return false;
    json_object_foreach(req, k, x) if (!given(args, k, x, v)) return false;
    json_object_foreach(json_object_get(policy, "enum"), k, list)
    {
        if ((x = json_object_get(args, k)) == NULL)
            continue;
        found = false; /* json_equal compares strings over their length, NULs included */
        json_array_foreach(list, i, lim) found |= json_is_string(x) && json_equal(x, lim);
        if (!found)
            return refuse(v, TE_INVALID_ARGUMENTS, "argument '", k,
                          "' must be one of the values its schema lists");
    }
    json_object_foreach(json_object_get(policy, "max_items"), k, lim)
    {
        if ((x = json_object_get(args, k)) == NULL)
            continue;
        if (!json_is_array(x) || (json_int_t)json_array_size(x) > json_integer_value(lim))
            return refuse(v, TE_INVALID_ARGUMENTS, "argument '", k,
                          "' must be an array within its maxItems");
    }
    json_object_foreach(json_object_get(policy, "max_length"), k, lim)
    {
        if ((x = json_object_get(args, k)) == NULL)
            continue;
        if (!json_is_string(x) || (json_int_t)codepoints(x) > json_integer_value(lim))
            return refuse(v, TE_INVALID_ARGUMENTS, "argument '", k,
                          "' must be a string within its maxLength");
    }
    return true;
}

/* Any string in value (keys too) secret-like? */
static bool holds_secret(json_t *value, int depth)
{
    const char *k;
    json_t *x;
    size_t i, klen;
    if (depth > MAX_DEPTH)
        return true;
    if (json_is_string(value)) /* all of it: a NUL inside must not hide what follows */
        return gw_secret_like(json_string_value(value), json_string_length(value), NULL);
    json_object_keylen_foreach(value, k, klen, x) if (gw_secret_like(k, klen, NULL) ||
                                                      holds_secret(x, depth + 1)) return true;
    json_array_foreach(value, i, x) if (holds_secret(x, depth + 1)) return true;
    return false;
}

static bool no_secrets(json_t *args, json_t *policy, struct verdict *v)
{
    size_t i;
    json_t *name;
    json_array_foreach(json_object_get(policy, "reject_secrets"), i, name)
    {
        const char *field = json_string_value(name);
        if (holds_secret(json_object_get(args, field), 0))
            return refuse(v, TE_INVALID_ARGUMENTS, "argument '", field,
                          "' looks like it contains a secret (an API key, private key, "
                          "bearer token or random token); it was not sent");
    }
    return true;
}

/* Byte c is left out when values are compared loosely. */
static bool ignorable(unsigned char c)
{
    return c == '_' || c == '-' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* a (alen bytes) and b alike after ASCII case folding, with ignorable bytes left out. */
static bool loosely_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t i = 0, j = 0;
    for (;;) {
        while (i < alen && ignorable((unsigned char)a[i]))
            i++;
        while (j < blen && ignorable((unsigned char)b[j]))
            j++;
        if (i == alen || j == blen)
            return i == alen && j == blen;
        if (lower((unsigned char)a[i++]) != lower((unsigned char)b[j++]))
            return false;
    }
}

/* Whether a condition (when: {argument: [values]}: a conditional confirm or require) holds,
 * failing closed: when any argument is absent or not a string, holds a NUL (a C reader would see
 * only what comes before it), or is loosely one of its values. */
static bool when_holds(json_t *args, json_t *when)
{
    const char *arg;
    json_t *values, *v;
    size_t i;
    json_object_foreach(when, arg, values)
    {
        json_t *given = json_object_get(args, arg);
        if (!json_is_string(given) ||
            memchr(json_string_value(given), '\0', json_string_length(given)))
            return true;
        json_array_foreach(values, i,
                           v) if (loosely_equal(json_string_value(given), json_string_length(given),
                                                json_string_value(v),
                                                json_string_length(v))) return true;
    }
    return false;
}

json_t *gw_policy_args(enum gw_guard guard, json_t *policy, json_t *args, enum toolerr *code,
                       char *msg, size_t size)
{
    struct verdict v = {code, msg, size};
    json_t *drop = json_object_get(policy, "drop"), *fix = json_object_get(policy, "fix");
    const char *k;
    json_t *x;
    if (args != NULL && !json_is_object(args)) {
        refuse(&v, TE_INVALID_ARGUMENTS, "the arguments must be an object", "", "");
        return NULL;
    }
    json_t *when = json_object_get(policy, "confirm_when");
    if (guard == GW_GUARD_CONFIRM && (when == NULL || when_holds(args, when)) &&
        !json_is_true(json_object_get(args, "confirmed"))) {
        refuse(&v, TE_CONFIRMATION_REQUIRED,
               when ? "this action is guarded: call it again with confirmed: true (the boolean) "
                      "to confirm it"
                    : "this tool is guarded: call it again with confirmed: true (the boolean) "
                      "to confirm the action",
               "", "");
        return NULL;
    }
    if (args && (drop || fix) && !no_hidden_names(args, drop, fix, 0, &v))
        return NULL;
    json_t *none = args ? NULL : json_object(); /* no arguments: a required one is missing */
    bool admitted =
        within_limits(args ? args : none, policy, &v) && (!args || no_secrets(args, policy, &v));
    json_decref(none);
    if (!admitted)
        return NULL;
    json_t *sent = args ? json_copy(args) : json_object(); /* shallow: only the top changes */
    if (guard == GW_GUARD_CONFIRM)
        json_object_del(sent, "confirmed");
    json_object_foreach(fix, k, x) json_object_set(sent, k, x);
    return sent;
}

/* "; KEY a, b" for a policy whose value lists names, or maps names to something. */
static size_t summary_part(char *out, size_t size, size_t n, const char *key, json_t *value,
                           bool with_number)
{
    if (value == NULL || n >= size)
        return n;
    n += (size_t)snprintf(out + n, size - n, "%s%s", n ? "; " : "", key);
    const char *sep = " ";
    size_t i;
    const char *k;
    json_t *v;
    if (json_is_array(value)) {
        json_array_foreach(value, i, v)
        {
            if (n < size)
                n += (size_t)snprintf(out + n, size - n, "%s%s", sep, json_string_value(v));
            sep = ", ";
        }
        return n;
    }
    json_object_foreach(value, k, v)
    {
        if (n >= size)
            break;
        if (with_number && json_is_integer(v))
            n += (size_t)snprintf(out + n, size - n, "%s%s %lld", sep, k,
                                  (long long)json_integer_value(v));
        else
            n += (size_t)snprintf(out + n, size - n, "%s%s", sep, k);
        sep = ", ";
    }
    return n;
}

void gw_policy_summary(enum gw_guard guard, json_t *policy, char *out, size_t size)
{
    size_t n = 0;
    if (size == 0)
        return;
    out[0] = '\0';
    if (guard != GW_GUARD_NONE)
        n = (size_t)snprintf(out, size, "%s", guard == GW_GUARD_CONFIRM ? "confirm" : "approve");
    if (guard == GW_GUARD_CONFIRM) { /* "confirm when action create, update" */
        const char *arg, *join = " when ";
        json_t *values, *v;
        size_t i;
        json_object_foreach(json_object_get(policy, "confirm_when"), arg, values)
        {
            if (n < size)
                n += (size_t)snprintf(out + n, size - n, "%s%s ", join, arg);
            json_array_foreach(values, i, v) if (n < size) n +=
                (size_t)snprintf(out + n, size - n, "%s%s", i ? ", " : "", json_string_value(v));
            join = " or when ";
        }
    }
    n = summary_part(out, size, n, "drop", json_object_get(policy, "drop"), false);
    n = summary_part(out, size, n, "fix", json_object_get(policy, "fix"), false);
    n = summary_part(out, size, n, "enum", json_object_get(policy, "enum"), false);
    n = summary_part(out, size, n, "max_items", json_object_get(policy, "max_items"), true);
    n = summary_part(out, size, n, "max_length", json_object_get(policy, "max_length"), true);
    n = summary_part(out, size, n, "reject_secrets", json_object_get(policy, "reject_secrets"),
                     false);
    summary_part(out, size, n, "require", json_object_get(policy, "require"), false);
    utf8_line(out); /* names are the file's text; a cut may split a character */
}

static const char *guard_name(enum gw_guard g)
{
    return g == GW_GUARD_APPROVE ? "approve" : g == GW_GUARD_CONFIRM ? "confirm" : "none";
}

/* Whether a rule's value (a list of names, or an object keyed by them) names field. */
static bool rule_names(json_t *rule, const char *field)
{
    size_t i;
    json_t *v;
    if (json_is_object(rule))
        return json_object_get(rule, field) != NULL;
    json_array_foreach(rule, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), field) == 0)
            return true;
    }
    return false;
}

/* Whether list (an enum's values) has a value that was does not. */
static bool enum_widened(json_t *was, json_t *list)
{
    size_t i, k;
    json_t *v, *w;
    json_array_foreach(list, i, v)
    {
        bool known = false;
        json_array_foreach(was, k, w) known |= json_equal(v, w);
        if (!known)
            return true;
    }
    return false;
}

json_t *gw_policy_loosened(enum gw_guard was_guard, json_t *was, enum gw_guard now_guard,
                           json_t *now)
{
    static const char *const kinds[] = {
        "drop", "fix", "enum", "max_items", "max_length", "reject_secrets", "require"};
    json_t *lines = json_array();
    if (now_guard < was_guard)
        json_array_append_new(
            lines, json_sprintf("guard %s -> %s", guard_name(was_guard), guard_name(now_guard)));
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        json_t *old = json_object_get(was, kinds[k]), *cur = json_object_get(now, kinds[k]), *v;
        size_t n = json_is_array(old) ? json_array_size(old) : json_object_size(old);
        void *it = json_is_object(old) ? json_object_iter(old) : NULL;
        for (size_t i = 0; i < n; i++) {
            const char *field = json_is_object(old) ? json_object_iter_key(it)
                                                    : json_string_value(json_array_get(old, i));
            v = json_is_object(old) ? json_object_iter_value(it) : NULL;
            it = it ? json_object_iter_next(old, it) : NULL;
            if (field == NULL)
                continue;
            json_t *nv = json_is_object(cur) ? json_object_get(cur, field) : NULL;
            if (!rule_names(cur, field))
                json_array_append_new(lines, json_sprintf("args %s %s -> none", kinds[k], field));
            else if (json_is_integer(v) && json_is_integer(nv) &&
                     json_integer_value(nv) > json_integer_value(v))
                json_array_append_new(lines, json_sprintf("args %s %s %lld -> %lld", kinds[k],
                                                          field, (long long)json_integer_value(v),
                                                          (long long)json_integer_value(nv)));
            else if (strcmp(kinds[k], "enum") == 0 && enum_widened(v, nv))
                json_array_append_new(lines, json_sprintf("args enum %s widened", field));
        }
    }
    return lines;
}
