/* agentsyaml.h — the agents registry (AGENTS_FILE, block YAML as the Node bridge's). Pure
 * parsing and validation; fuzzed. Aliases and anchors are refused, as are unknown keys,
 * duplicate agent names, and base URLs outside loopback and Tailscale (127.0.0.0/8, ::1,
 * localhost, 100.64.0.0/10, fd7a:115c:a1e0::/48). */
#ifndef HM_AGENTSYAML_H
#define HM_AGENTSYAML_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define REGISTRY_MAX_AGENTS 64

/* Parses the registry. On success returns {"default": name, "agents": [{name, description,
 * capabilities:[...], kind, profile?, base_url, key_env?, key_file?}]} (new reference); on
 * failure NULL with a one-line reason (naming the agent or line) in err. */
json_t *registry_parse(const char *text, size_t len, char *err, size_t errlen);
/* True for http(s) URLs whose host is loopback or in the Tailscale ranges. */
bool registry_url_allowed(const char *url);

#endif
