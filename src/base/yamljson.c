/* yamljson.c — block YAML (libyaml's event parser) to JSON for the settings files (the agents
 * registry, the gateway file): mappings, sequences and scalars, every scalar a string, so each
 * file's own parser decides what a value means; a reader that gives some values their YAML type
 * (the gateway file's fix values) asks for marks too: which scalars were written plain.
 * Anchors, aliases, duplicate keys, non-text keys, more than one document and nesting deeper
 * than 16 are refused: a settings file needs none of them and each is a way to make a small
 * file expand or mean two things. */
#include "yamljson.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

