/* yamljson.c — block YAML (libyaml's event parser) to JSON for the settings files (the agents
 * registry, the gateway file): mappings, sequences and scalars, every scalar a string, so each
 * file's own parser decides what a value means; a reader that gives some values their YAML type
 * (the gateway file's fix values) asks for marks too: which scalars were written plain, and
 * types those with yamljson_plain_value.
 * Anchors, aliases, duplicate keys, non-text keys, more than one document and nesting deeper
 * than 16 are refused: a settings file needs none of them and each is a way to make a small
 * file expand or mean two things. */
#include "yamljson.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "mem.h"

/* A small builder: YAML events → JSON (mappings, sequences, string scalars). */
struct frame {
    json_t *node;
    json_t *mirror; /* the same shape, scalars true where plain (yamljson_parse_marked), or NULL */
    char *key;      /* pending key in a mapping */
};

static bool set_err(char *err, size_t errlen, const yaml_event_t *ev, const char *msg)
{
    snprintf(err, errlen, "line %lu: %s", (unsigned long)ev->start_mark.line + 1, msg);
    return false;
}

/* A node's mark added to its parent's mirror (at key in a mapping), when marks are wanted. */
static void mirror_add(json_t *mirror, const char *key, json_t *mark)
{
    if (mirror == NULL)
        json_decref(mark);
    else if (key)
        json_object_set_new(mirror, key, mark);
    else
        json_array_append_new(mirror, mark);
}

json_t *yamljson_parse(const char *text, size_t len, const char *what, char *err, size_t errlen)
{
    return yamljson_parse_marked(text, len, what, err, errlen, NULL);
}

json_t *yamljson_parse_marked(const char *text, size_t len, const char *what, char *err,
                              size_t errlen, json_t **plain)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    struct frame stack[16];
    int depth = 0;
    json_t *root = NULL, *root_mark = NULL;
    bool ok = true, done = false;

    if (plain)
        *plain = NULL;

    if (!yaml_parser_initialize(&parser)) {
        snprintf(err, errlen, "cannot initialise the YAML parser");
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (ok && !done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            snprintf(err, errlen, "line %lu: %s", (unsigned long)parser.problem_mark.line + 1,
                     parser.problem ? parser.problem : "invalid YAML");
            ok = false;
            break;
        }
        json_t *value = NULL, *mark = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (root)
                ok = set_err(err, errlen, &ev, "only one YAML document is allowed");
            break;
        case YAML_ALIAS_EVENT:
            ok = set_err(err, errlen, &ev, "aliases are not allowed");
            break;
        case YAML_SCALAR_EVENT:
            if (ev.data.scalar.anchor) {
                ok = set_err(err, errlen, &ev, "anchors are not allowed");
                break;
            }
            value = json_stringn((const char *)ev.data.scalar.value, ev.data.scalar.length);
            if (value == NULL)
                ok = set_err(err, errlen, &ev, "text is not UTF-8");
            else if (plain) /* `!!str 5` is tagged, so not plain however it is written */
                mark = json_boolean(ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                                    ev.data.scalar.plain_implicit);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            const unsigned char *anchor = ev.type == YAML_SEQUENCE_START_EVENT
                                              ? ev.data.sequence_start.anchor
                                              : ev.data.mapping_start.anchor;
            if (anchor) {
                ok = set_err(err, errlen, &ev, "anchors are not allowed");
                break;
            }
            if (depth >= 16) {
                ok = set_err(err, errlen, &ev, "nested too deeply");
                break;
            }
            bool seq = ev.type == YAML_SEQUENCE_START_EVENT;
            stack[depth++] = (struct frame){.node = seq ? json_array() : json_object(),
                                            .mirror = !plain ? NULL
                                                      : seq  ? json_array()
                                                             : json_object()};
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            value = stack[--depth].node;
            mark = stack[depth].mirror;
            free(stack[depth].key);
            break;
        default:
            break;
        }
        if (ok && value) {
            if (depth == 0) {
                root = value;
                root_mark = mark;
            } else {
                struct frame *f = &stack[depth - 1];
                if (json_is_array(f->node)) {
                    json_array_append_new(f->node, value);
                    mirror_add(f->mirror, NULL, mark);
                } else if (f->key == NULL) {
                    json_decref(mark);
                    if (!json_is_string(value)) {
                        json_decref(value);
                        ok = set_err(err, errlen, &ev, "mapping keys must be plain text");
                    } else {
                        f->key = xstrdup(json_string_value(value));
                        json_decref(value);
                    }
                } else {
                    if (json_object_get(f->node, f->key)) {
                        ok = set_err(err, errlen, &ev, "duplicate key");
                        json_decref(value);
                        json_decref(mark);
                    } else {
                        json_object_set_new(f->node, f->key, value);
                        mirror_add(f->mirror, f->key, mark);
                    }
                    free(f->key);
                    f->key = NULL;
                }
            }
        } else {
            json_decref(value);
            json_decref(mark);
        }
        yaml_event_delete(&ev);
    }
    while (depth > 0) {
        depth--;
        free(stack[depth].key);
        json_decref(stack[depth].node);
        json_decref(stack[depth].mirror);
    }
    yaml_parser_delete(&parser);
    if (ok && root == NULL) {
        snprintf(err, errlen, "%s is empty", what);
        ok = false;
    }
    if (!ok) {
        json_decref(root);
        json_decref(root_mark);
        return NULL;
    }
    if (plain)
        *plain = root_mark;
    return root;
}

/* ---------- a plain scalar's type ---------- */

static bool all_digits(const char *s)
{
    if (*s < '0' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9')
        s++;
    return *s == '\0';
}

/* A YAML 1.2 core-schema float: [-+]?(.D+|D+(.D*)?)([eE][-+]?D+)? */
static bool float_text(const char *s)
{
    const char *p = s + (*s == '-' || *s == '+');
    bool digits = false;
    while (*p >= '0' && *p <= '9')
        p++, digits = true;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, digits = true;
    }
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p += 1 + (p[1] == '-' || p[1] == '+');
        if (!all_digits(p))
            return false;
        return true;
    }
    return *p == '\0';
}

/* What a plain scalar means in YAML 1.2's core schema (booleans, null, decimal integers and
 * floats); NULL when it is a string after all. *range is set when it is a number JSON can carry
 * only with a loss: an integer beyond +-(2^53 - 1), which JavaScript and most JSON readers
 * round, or a float out of a double's range. */
json_t *yamljson_plain_value(const char *s, bool *range)
{
    static const char *const trues[] = {"true", "True", "TRUE"},
                             *const falses[] = {"false", "False", "FALSE"},
                             *const nulls[] = {"null", "Null", "NULL", "~", ""};
    for (size_t i = 0; i < 3; i++) {
        if (strcmp(s, trues[i]) == 0)
            return json_true();
        if (strcmp(s, falses[i]) == 0)
            return json_false();
    }
    for (size_t i = 0; i < 5; i++)
        if (strcmp(s, nulls[i]) == 0)
            return json_null();
    const char *digits = s + (*s == '-' || *s == '+');
    char *end;
    errno = 0;
    if (all_digits(digits)) {
        long long n = strtoll(s, &end, 10);
        const long long exact = (1LL << 53) - 1;
        if (errno == ERANGE || *end || n > exact || n < -exact)
            return *range = true, NULL;
        return json_integer((json_int_t)n);
    }
    if (float_text(s)) {
        double x = strtod(s, &end);
        if (errno == ERANGE || *end || !isfinite(x))
            return *range = true, NULL;
        return json_real(x);
    }
    return NULL;
}
