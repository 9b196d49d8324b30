/* agentfile.h — where the agents' addresses and API keys come from. Shared by the bridge (serve)
 * and doctor so that both read the same files the same way: the registry (AGENTS_FILE, default
 * ~/.hermes/agents.yaml), an agent's key_file or key_env, and the synthetic default agent made
 * from HERMES_ENV_PATH (API_SERVER_HOST, API_SERVER_PORT, API_SERVER_KEY).
 * Plain blocking reads of small files; no logging. Messages name files and keys, never a value
 * that could be a secret. */
#ifndef HM_AGENTFILE_H
#define HM_AGENTFILE_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define AGENTCFG_DEFAULT_NAME "hermes" /* the synthetic default agent */
#define AGENTCFG_REGISTRY_MAX (1024 * 1024)

/* AGENTS_FILE (agents_file) or $HOME/.hermes/agents.yaml; a new string. */
char *agentcfg_registry_path(const char *agents_file);

/* Reads and parses the registry (see agentsyaml.h). A file readable by others or larger than
 * 1 MiB is refused. NULL with a one-line reason in err. */
json_t *agentcfg_registry_read(const char *path, char *err, size_t errlen);

/* Reads a dotenv file (refused when over 64 KiB) and parses it; the text is wiped after parsing.
 * NULL with a one-line reason in err. */
json_t *agentcfg_dotenv_read(const char *path, char *err, size_t errlen);

/* key_file: a regular file of mode 600 holding the key alone on its first line. Returns the
 * key (a new string; wipe it before freeing) or NULL with the reason in why, which completes
 * "key_file PATH ..." (e.g. "is readable by others; chmod 600 it"). */
char *agentcfg_key_file(const char *path, char *why, size_t whylen);

/* key_env: the variable from this process's environment, else from the env file env_file (may
 * be NULL), which is parsed once into *env_cache (the caller json_decref's it). Returns a new
 * string or NULL when unset or empty; *from_process (may be NULL) tells where it was found. */
char *agentcfg_key_env(const char *name, const char *env_file, json_t **env_cache,
                       bool *from_process);

/* The synthetic default agent from the parsed HERMES_ENV_PATH file (env; NULL: none):
 * *base_url (a new string) from API_SERVER_HOST and API_SERVER_PORT (default 127.0.0.1:8642),
 * *key from API_SERVER_KEY (a new string, or NULL when absent or empty). */
void agentcfg_default_agent(json_t *env, char **base_url, char **key);
/* HERMES_API_KEY (the process environment, else our env_file): when set, the default agent's
 * key, before API_SERVER_KEY, so the Python server's env file works unchanged.
 * Malloc'd, or NULL. */
char *agentcfg_hermes_api_key(const char *env_file);

/* base_url + path (path starts with '/'), without doubling the slash; a new string. */
char *agentcfg_url(const char *base_url, const char *path);

#endif
