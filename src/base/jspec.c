/* jspec.c — the one validator of settings documents described as tables (jspec.h). */
#include "jspec.h"

#include <stdio.h>
#include <string.h>

#include "utf8.h"

const char jspec_failed[] = "(reported)";

/* The path grows by ".name" (or "name" at the top), the name cut to 40 bytes and cleaned; the
 * old length is returned for the caller to put back. */
static size_t path_push(struct jspec_walk *w, const char *name)
{
    size_t at = strlen(w->path);
    snprintf(w->path + at, sizeof w->path - at, "%s%.40s", at ? "." : "", name);
    utf8_clean(w->path + at);
    return at;
}

bool jspec_fail(struct jspec_walk *w, const char *sub, const char *why)
{
    size_t at = sub ? path_push(w, sub) : strlen(w->path);
    snprintf(w->err, w->errlen, "%skey %s: %s", w->scope, w->path, why);
    w->path[at] = '\0';
    return false;
}

bool jspec_bool(json_t *v, bool dflt, bool *out)
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

bool jspec_uint(json_t *v, unsigned dflt, unsigned lo, unsigned hi, unsigned *out)
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

bool jspec_strings_ok(json_t *a, size_t max)
{
    size_t i;
    json_t *v;
    if (!json_is_array(a) || json_array_size(a) > max)
        return false;
    json_array_foreach(a, i, v) if (!json_is_string(v) || json_string_length(v) == 0) return false;
    return true;
}

static void *field(void *out, const struct jspec_key *k)
{
    return k->at == JSPEC_NOWHERE ? NULL : (char *)out + k->at;
}

static void store_json(void *out, const struct jspec_key *k, json_t *v)
{
    void *f = field(out, k);
    if (f == NULL)
        return;
    if (k->type == JSPEC_STRING)
        *(const char **)f = json_string_value(v);
    else
        *(json_t **)f = v;
}

/* The defaults of a level's keys, as when each is absent (an absent JSPEC_OBJECT's). */
static void defaults(const struct jspec_level *lv, void *out)
{
    for (const struct jspec_key *k = lv->keys; k->name; k++) {
        void *f = field(out, k);
        if (f && k->type == JSPEC_BOOL)
            *(bool *)f = k->dflt != 0;
        else if (f && k->type == JSPEC_UINT)
            *(unsigned *)f = k->dflt;
    }
}

static bool walk_map(struct jspec_walk *w, const struct jspec_key *k, json_t *v, void *out)
{
    const char *name;
    json_t *item;
    if (!json_is_object(v) || (k->max_items && json_object_size(v) > k->max_items))
        return jspec_fail(w, NULL, k->why);
    json_object_foreach(v, name, item)
    {
        size_t at = path_push(w, name);
        const char *why = NULL;
        bool ok = k->level ? jspec_walk(w, k->level, item, out)
                           : (why = k->each(w, v, item, out)) == NULL;
        if (why && why != JSPEC_FAILED)
            jspec_fail(w, NULL, why);
        w->path[at] = '\0';
        if (!ok)
            return false;
    }
    return true;
}

/* One key of the level's mapping o, present (v) or not, at w->path. */
static bool check_key(struct jspec_walk *w, const struct jspec_key *k, json_t *o, json_t *v,
                      void *out)
{
    void *f = field(out, k);
    if (v == NULL) {
        if (k->required)
            return jspec_fail(w, NULL, k->why);
        if (k->absent) {
            v = k->absent(out);
            json_object_set_new(o, k->name, v);
            store_json(out, k, v);
        } else if (k->type == JSPEC_BOOL || k->type == JSPEC_UINT) {
            if (f && k->type == JSPEC_BOOL)
                *(bool *)f = k->dflt != 0;
            else if (f)
                *(unsigned *)f = k->dflt;
        } else if (k->type == JSPEC_OBJECT && k->defaults_when_absent) {
            defaults(k->level, out);
        }
        return true;
    }
    if (k->belongs && !k->belongs(out))
        return jspec_fail(w, NULL, k->not_here);
    bool ok = true;
    switch (k->type) {
    case JSPEC_BOOL: {
        bool b;
        ok = jspec_bool(v, false, &b);
        if (ok && f)
            *(bool *)f = b;
        break;
    }
    case JSPEC_UINT: {
        unsigned n;
        ok = jspec_uint(v, 0, k->lo, k->hi, &n);
        if (ok && f)
            *(unsigned *)f = n;
        break;
    }
    case JSPEC_STRING:
        ok = json_is_string(v) && !(k->nonempty && json_string_length(v) == 0);
        break;
    case JSPEC_STRINGS:
        ok = jspec_strings_ok(v, k->max_items) && json_array_size(v) >= k->min_items;
        break;
    case JSPEC_OBJECT:
        if (!jspec_walk(w, k->level, v, out))
            return false;
        break;
    case JSPEC_MAP:
        if (!walk_map(w, k, v, out))
            return false;
        break;
    default:
        break;
    }
    if (!ok)
        return jspec_fail(w, NULL, k->why);
    if (k->type != JSPEC_BOOL && k->type != JSPEC_UINT)
        store_json(out, k, v);
    const char *why = k->check ? k->check(w, o, v, out) : NULL;
    return why == NULL || why == JSPEC_FAILED ? why == NULL : jspec_fail(w, NULL, why);
}

static const struct jspec_key *lookup(const struct jspec_level *lv, const char *name)
{
    for (const struct jspec_key *k = lv->keys; k->name; k++)
        if (strcmp(k->name, name) == 0)
            return k;
    return NULL;
}

bool jspec_walk(struct jspec_walk *w, const struct jspec_level *lv, json_t *doc, void *out)
{
    const char *name;
    json_t *v;
    if (!json_is_object(doc)) {
        if (w->path[0] || lv->self == NULL)
            return jspec_fail(w, NULL, lv->not_object);
        return jspec_fail(w, lv->self, lv->not_object);
    }
    if (!lv->doc_order)
        json_object_foreach(doc, name, v) if (!lookup(lv, name)) return jspec_fail(
            w, lv->unknown_here ? NULL : name, lv->unknown);
    const char *why = lv->first ? lv->first(w, doc, doc, out) : NULL;
    if (why)
        return why == JSPEC_FAILED ? false : jspec_fail(w, NULL, why);
    if (lv->doc_order) {
        json_object_foreach(doc, name, v)
        {
            const struct jspec_key *k = lookup(lv, name);
            if (k == NULL)
                return jspec_fail(w, lv->unknown_here ? NULL : name, lv->unknown);
            size_t at = path_push(w, name);
            bool ok = check_key(w, k, doc, v, out);
            w->path[at] = '\0';
            if (!ok)
                return false;
        }
        return true;
    }
    for (const struct jspec_key *k = lv->keys; k->name; k++) {
        size_t at = path_push(w, k->name);
        bool ok = check_key(w, k, doc, json_object_get(doc, k->name), out);
        w->path[at] = '\0';
        if (!ok)
            return false;
    }
    return true;
}
