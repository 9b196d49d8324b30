/* agentsyaml.c — YAML agents registry over libyaml's event parser. */
#include "agentsyaml.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "mem.h"
#include "utf8.h"
#include "yamljson.h"

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

static const char *const agent_keys[] = {"name",    "description", "capabilities", "kind",
                                         "profile", "base_url",    "key_env",      "key_file"};

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
    json_t *doc = yamljson_parse(text, len, "the registry", err, errlen);
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
            if (strcmp(json_string_value(json_object_get(json_array_get(list, k), "name")), name) ==
                0) {
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
        json_t *o =
            json_pack("{s:s, s:s, s:o, s:s, s:s}", "name", name, "description",
                      json_string_value(json_object_get(a, "description"))
                          ? json_string_value(json_object_get(a, "description"))
                          : "",
                      "capabilities", capsout, "kind", kind ? kind : "local", "base_url", url);
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
        found = found || strcmp(json_string_value(json_object_get(json_array_get(list, k), "name")),
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
