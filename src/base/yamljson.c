/* yamljson.c — block YAML (libyaml's event parser) to JSON for the settings files (the agents
 * registry, the gateway file): mappings, sequences and scalars, every scalar a string, so each
 * file's own parser decides what a value means. Anchors, aliases, duplicate keys, non-text keys,
 * more than one document and nesting deeper than 16 are refused: a settings file needs none of
 * them and each is a way to make a small file expand or mean two things. */
#include "yamljson.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <yaml.h>

#include "mem.h"

/* A small builder: YAML events → JSON (mappings, sequences, string scalars). */
struct frame {
    json_t *node;
    char *key; /* pending key in a mapping */
};

static bool set_err(char *err, size_t errlen, const yaml_event_t *ev, const char *msg)
{
    snprintf(err, errlen, "line %lu: %s", (unsigned long)ev->start_mark.line + 1, msg);
    return false;
}

json_t *yamljson_parse(const char *text, size_t len, const char *what, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    struct frame stack[16];
    int depth = 0;
    json_t *root = NULL;
    bool ok = true, done = false;

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
        json_t *value = NULL;
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
            json_t *n = ev.type == YAML_SEQUENCE_START_EVENT ? json_array() : json_object();
            stack[depth++] = (struct frame){.node = n, .key = NULL};
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            value = stack[--depth].node;
            free(stack[depth].key);
            break;
        default:
            break;
        }
        if (ok && value) {
            if (depth == 0) {
                root = value;
            } else {
                struct frame *f = &stack[depth - 1];
                if (json_is_array(f->node)) {
                    json_array_append_new(f->node, value);
                } else if (f->key == NULL) {
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
                    } else {
                        json_object_set_new(f->node, f->key, value);
                    }
                    free(f->key);
                    f->key = NULL;
                }
            }
        } else if (!ok) {
            json_decref(value);
        }
        yaml_event_delete(&ev);
    }
    while (depth > 0) {
        depth--;
        free(stack[depth].key);
        json_decref(stack[depth].node);
    }
    yaml_parser_delete(&parser);
    if (ok && root == NULL) {
        snprintf(err, errlen, "%s is empty", what);
        ok = false;
    }
    if (!ok) {
        json_decref(root);
        return NULL;
    }
    return root;
}

