/* registry.c — YAML agents registry over libyaml's event parser. */
#include "registry.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "mem.h"
#include "utf8.h"

static bool host_allowed(const char *host, size_t n)
{
    char h[64];
    struct in_addr a4;
    struct in6_addr a6;

    if (n == 0 || n >= sizeof h)
        return false;
    memcpy(h, host, n);
    h[n] = '\0';
    if (strcasecmp(h, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, h, &a4) == 1) {
        uint32_t ip = ntohl(a4.s_addr);
        return (ip >> 24) == 127 || (ip & 0xffc00000u) == 0x64400000u; /* 100.64.0.0/10 */
    }
    if (inet_pton(AF_INET6, h, &a6) == 1) {
        static const unsigned char ts[6] = {0xfd, 0x7a, 0x11, 0x5c, 0xa1, 0xe0};
        return IN6_IS_ADDR_LOOPBACK(&a6) || memcmp(a6.s6_addr, ts, 6) == 0;
    }
    return false;
}

bool registry_url_allowed(const char *url)
{
    const char *p;
    if (strncasecmp(url, "http://", 7) == 0)
        p = url + 7;
    else if (strncasecmp(url, "https://", 8) == 0)
        p = url + 8;
    else
        return false;
    if (strpbrk(p, "@\\ \t\r\n?#"))
        return false; /* no credentials, no surprises */
    if (*p == '[') {
        const char *close = strchr(p, ']');
        return close && host_allowed(p + 1, (size_t)(close - p - 1)) &&
               (close[1] == '\0' || close[1] == ':' || close[1] == '/');
    }
    return host_allowed(p, strcspn(p, ":/"));
}

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

static json_t *yaml_to_json(const char *text, size_t len, char *err, size_t errlen)
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
        snprintf(err, errlen, "the registry is empty");
        ok = false;
    }
    if (!ok) {
        json_decref(root);
        return NULL;
    }
    return root;
}

static const char *const agent_keys[] = {"name",     "description", "capabilities", "kind",
                                         "profile",  "base_url",    "key_env",      "key_file"};

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              (i > 0 && (c == '-' || c == '_' || c == '.'))))
            return false;
    }
    return true;
}

json_t *registry_parse(const char *text, size_t len, char *err, size_t errlen)
{
    json_t *doc = yaml_to_json(text, len, err, errlen);
    json_t *out = NULL;
    const char *key;
    json_t *v;

    if (doc == NULL) {
        utf8_clean(err);
        return NULL;
    }
    if (!json_is_object(doc)) {
        snprintf(err, errlen, "the registry must be a mapping with 'default' and 'agents'");
        goto out;
    }
    json_object_foreach(doc, key, v) if (strcmp(key, "default") && strcmp(key, "agents"))
    {
        snprintf(err, errlen, "unknown top-level key '%.40s'", key);
        goto out;
    }
    json_t *agents = json_object_get(doc, "agents");
    if (!json_is_array(agents) || json_array_size(agents) == 0) {
        snprintf(err, errlen, "'agents' must be a non-empty list");
        goto out;
    }
    if (json_array_size(agents) > REGISTRY_MAX_AGENTS) {
        snprintf(err, errlen, "at most %d agents", REGISTRY_MAX_AGENTS);
        goto out;
    }
    json_t *list = json_array();
    size_t i;
    json_t *a;
    json_array_foreach(agents, i, a)
    {
        if (!json_is_object(a)) {
            snprintf(err, errlen, "agent #%zu is not a mapping", i + 1);
            json_decref(list);
            goto out;
        }
        json_object_foreach(a, key, v)
        {
            bool known = false;
            for (size_t k = 0; k < sizeof agent_keys / sizeof *agent_keys; k++)
                known = known || strcmp(key, agent_keys[k]) == 0;
            if (!known) {
                snprintf(err, errlen, "agent #%zu: unknown key '%.40s'", i + 1, key);
                json_decref(list);
                goto out;
            }
            if (strcmp(key, "capabilities") &&
                (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)))) {
                snprintf(err, errlen, "agent #%zu: '%s' must be text", i + 1, key);
                json_decref(list);
                goto out;
            }
        }
        const char *name = json_string_value(json_object_get(a, "name"));
        const char *url = json_string_value(json_object_get(a, "base_url"));
        const char *kind = json_string_value(json_object_get(a, "kind"));
        json_t *caps = json_object_get(a, "capabilities");
        if (name == NULL || !name_ok(name)) {
            snprintf(err, errlen, "agent #%zu: 'name' must be 1-64 of [A-Za-z0-9._-]", i + 1);
            json_decref(list);
            goto out;
        }
        for (size_t k = 0; k < json_array_size(list); k++)
            if (strcmp(json_string_value(json_object_get(json_array_get(list, k), "name")),
                       name) == 0) {
                snprintf(err, errlen, "agent '%s' is listed twice", name);
                json_decref(list);
                goto out;
            }
        if (url == NULL || !registry_url_allowed(url)) {
            snprintf(err, errlen,
                     "agent '%s': base_url must be http(s) on loopback or Tailscale "
                     "(127.0.0.1, ::1, 100.64.0.0/10, fd7a:115c:a1e0::/48)",
                     name);
            json_decref(list);
            goto out;
        }
        if (kind && strcmp(kind, "local") && strcmp(kind, "remote")) {
            snprintf(err, errlen, "agent '%s': kind must be local or remote", name);
            json_decref(list);
            goto out;
        }
        json_t *capsout = json_array();
        if (caps) {
            size_t k;
            json_t *c;
            if (!json_is_array(caps)) {
                snprintf(err, errlen, "agent '%s': capabilities must be a list", name);
                json_decref(capsout);
                json_decref(list);
                goto out;
            }
            json_array_foreach(caps, k, c) if (json_is_string(c)) json_array_append(capsout, c);
        }
        json_t *o = json_pack("{s:s, s:s, s:o, s:s, s:s}", "name", name, "description",
                              json_string_value(json_object_get(a, "description"))
                                  ? json_string_value(json_object_get(a, "description"))
                                  : "",
                              "capabilities", capsout, "kind", kind ? kind : "local", "base_url",
                              url);
        static const char *const opt[] = {"profile", "key_env", "key_file"};
        for (size_t k = 0; k < 3; k++)
            if (json_object_get(a, opt[k]))
                json_object_set(o, opt[k], json_object_get(a, opt[k]));
        json_array_append_new(list, o);
    }
    const char *dflt = json_string_value(json_object_get(doc, "default"));
    if (dflt == NULL)
        dflt = json_string_value(json_object_get(json_array_get(list, 0), "name"));
    bool found = false;
    for (size_t k = 0; k < json_array_size(list); k++)
        found = found ||
                strcmp(json_string_value(json_object_get(json_array_get(list, k), "name")),
                       dflt) == 0;
    if (!found) {
        snprintf(err, errlen, "default agent '%.64s' is not in the list", dflt);
        json_decref(list);
        goto out;
    }
    out = json_pack("{s:s, s:o}", "default", dflt, "agents", list);
out:
    json_decref(doc);
    if (out == NULL)
        utf8_clean(err); /* it quotes the file: one valid line whatever the file holds */
    return out;
}
