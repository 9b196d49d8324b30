/* gwinterp.c — placeholder replacement for the gateway file. An unresolved placeholder must
 * stop the server from starting (a child started with an empty token fails later and less
 * clearly), and the error must say where without quoting what: the variable's name is fine,
 * its value never is. Values are not rescanned, so a secret containing "${" stays as it is. */
#include "gwinterp.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"

#define VAR_MAX 128

/* Where a string sits, for the error: its upstream (or NULL) and its key path below it. */
struct where {
    const char *upstream;
    char key[256];
};

static void fail(char *err, size_t errlen, const struct where *w, const char *what)
{
    if (w->upstream)
        snprintf(err, errlen, "upstream %s, key %s: %s", w->upstream, w->key, what);
    else
        snprintf(err, errlen, "key %s: %s", w->key, what);
}

static bool var_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > VAR_MAX || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

/* The string with its placeholders replaced, in out; false with err on a bad one. */
static bool expand(const char *s, gw_lookup_fn *lookup, void *arg, struct buf *out,
                   const struct where *w, char *err, size_t errlen)
{
    char var[VAR_MAX + 1];
    bool room = true;
    while (*s && room) {
        const char *dollar = strstr(s, "${");
        if (dollar == NULL) {
            room = buf_appends(out, s);
            break;
        }
        room = buf_append(out, s, (size_t)(dollar - s));
        const char *name = dollar + 2, *close = strchr(name, '}');
        if (close == NULL) {
            fail(err, errlen, w, "a \"${\" placeholder has no closing \"}\"");
            return false;
        }
        if (strncmp(name, "env:", 4) == 0)
            name += 4;
        size_t n = (size_t)(close - name);
        if (!var_name_ok(name, n)) {
            fail(err, errlen, w,
                 "a placeholder must be ${NAME} or ${env:NAME} with NAME of letters, digits, _");
            return false;
        }
        memcpy(var, name, n);
        var[n] = '\0';
        const char *value = lookup ? lookup(var, arg) : NULL;
        if (value == NULL) {
            char what[200];
            snprintf(what, sizeof what, "${%s} is not set in the env file or the environment", var);
            fail(err, errlen, w, what);
            return false;
        }
        room = room && buf_appends(out, value);
        s = close + 1;
    }
    if (!room) {
        fail(err, errlen, w, "the value is too long");
        return false;
    }
    return true;
}

static bool walk(json_t *node, json_t **replace, gw_lookup_fn *lookup, void *arg, struct where *w,
                 char *err, size_t errlen);

/* Appends a path segment (a key, or an index when seg is NULL) to w->key for the walk below,
 * returning the old length. */
static size_t push(struct where *w, const char *seg, size_t index)
{
    size_t len = strlen(w->key);
    if (seg)
        snprintf(w->key + len, sizeof w->key - len, "%s%s", len ? "." : "", seg);
    else
        snprintf(w->key + len, sizeof w->key - len, "[%zu]", index);
    return len;
}

static bool walk_children(json_t *node, gw_lookup_fn *lookup, void *arg, struct where *w, char *err,
                          size_t errlen)
{
    if (json_is_object(node)) {
        const char *k;
        json_t *v;
        json_object_foreach(node, k, v)
        {
            json_t *fresh = NULL;
            size_t at = push(w, k, 0);
            bool ok = walk(v, &fresh, lookup, arg, w, err, errlen);
            w->key[at] = '\0';
            if (!ok)
                return false;
            if (fresh)
                json_object_set_new(node, k, fresh); /* replaces the value, keeps the key */
        }
    } else if (json_is_array(node)) {
        for (size_t i = 0; i < json_array_size(node); i++) {
            json_t *fresh = NULL;
            size_t at = push(w, NULL, i);
            bool ok = walk(json_array_get(node, i), &fresh, lookup, arg, w, err, errlen);
            w->key[at] = '\0';
            if (!ok)
                return false;
            if (fresh)
                json_array_set_new(node, i, fresh);
        }
    }
    return true;
}

/* A string gets *replace set to its expansion (when it had a placeholder). */
static bool walk(json_t *node, json_t **replace, gw_lookup_fn *lookup, void *arg, struct where *w,
                 char *err, size_t errlen)
{
    if (!json_is_string(node))
        return walk_children(node, lookup, arg, w, err, errlen);
    const char *s = json_string_value(node);
    if (strlen(s) != json_string_length(node)) {
        fail(err, errlen, w, "the value contains a NUL byte");
        return false;
    }
    if (strstr(s, "${") == NULL)
        return true;
    struct buf out;
    buf_init(&out, GW_MAX_STRING);
    bool ok = expand(s, lookup, arg, &out, w, err, errlen);
    if (ok) {
        *replace = json_stringn(out.data ? out.data : "", out.len);
        if (*replace == NULL) {
            fail(err, errlen, w, "the value after replacing placeholders is not UTF-8");
            ok = false;
        }
    }
    buf_cleanup(&out);
    return ok;
}

/* For a disabled upstream: every variable "set", so only the syntax is checked. */
static const char *any_value(const char *var, void *arg)
{
    (void)var, (void)arg;
    return "";
}

bool gwinterp_doc(json_t *doc, gw_lookup_fn *lookup, void *arg, char *err, size_t errlen)
{
    struct where w = {.upstream = NULL};
    json_t *ups;
    const char *k;
    json_t *v;

    if (!json_is_object(doc))
        return true; /* the shape check says what is wrong */
    json_object_foreach(doc, k, v)
    {
        if (strcmp(k, "upstreams") == 0 && json_is_object(v))
            continue; /* below, naming the upstream */
        json_t *fresh = NULL;
        snprintf(w.key, sizeof w.key, "%s", k);
        if (!walk(v, &fresh, lookup, arg, &w, err, errlen))
            return false;
        if (fresh)
            json_object_set_new(doc, k, fresh);
    }
    ups = json_object_get(doc, "upstreams");
    if (!json_is_object(ups))
        return true;
    json_object_foreach(ups, k, v)
    {
        json_t *fresh = NULL;
        w.upstream = k;
        w.key[0] = '\0';
        const char *enabled = json_string_value(json_object_get(v, "enabled"));
        if (enabled && strcmp(enabled, "false") == 0) { /* a YAML scalar is a string here */
            /* perhaps disabled because its secret is not set yet: the placeholders' syntax is
             * checked (on a copy, whose expansions go), none is resolved */
            json_t *copy = json_deep_copy(v);
            bool ok = walk(copy, &fresh, any_value, NULL, &w, err, errlen);
            json_decref(copy);
            json_decref(fresh);
            if (!ok)
                return false;
            continue;
        }
        if (!walk(v, &fresh, lookup, arg, &w, err, errlen))
            return false;
        if (fresh)
            json_object_set_new(ups, k, fresh);
    }
    return true;
}
