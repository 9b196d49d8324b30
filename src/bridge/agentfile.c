/* agentfile.c — registry file, agent keys and the synthetic default agent, read from disk. */
#include "agentfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentsyaml.h"
#include "dotenv.h"
#include "mem.h"
#include "readfile.h"

#define DOTENV_READ_MAX (64 * 1024)
#define KEY_LINE_MAX 1024
#define KEY_FILE_MAX (64 * 1024)

char *agentcfg_registry_path(const char *agents_file)
{
    if (agents_file)
        return xstrdup(agents_file);
    const char *home = getenv("HOME");
    return xasprintf("%s/.hermes/agents.yaml", home && *home ? home : ".");
}

/* Opens path as a regular file and reads at most max bytes into a new NUL-terminated buffer;
 * *st is its status. A file over max is refused (too_big names the limit). Messages call the
 * file what. */

json_t *agentcfg_registry_read(const char *path, char *err, size_t errlen)
{
    struct stat st;
    size_t len;
    char why[300];

    /* Messages say "the file", not its path: they reach /health, which needs no token. */
    char *text = readfile_capped(path, "the file", AGENTCFG_REGISTRY_MAX, &st, &len, err, errlen);
    if (text == NULL)
        return NULL;
    json_t *reg = NULL;
    /* Refused before parsing: whoever can rewrite it can send our keys where they like. */
    if (st.st_mode & 077)
        snprintf(err, errlen, "the file is readable by others; chmod 600 it");
    else if ((reg = registry_parse(text, len, why, sizeof why)) == NULL)
        snprintf(err, errlen, "%s", why);
    free(text);
    return reg;
}

json_t *agentcfg_dotenv_read(const char *path, char *err, size_t errlen)
{
    struct stat st;
    size_t len;
    char why[200];

    char *text = readfile_capped(path, path, DOTENV_READ_MAX, &st, &len, err, errlen);
    if (text == NULL)
        return NULL;
    json_t *env = dotenv_parse(text, len, why, sizeof why);
    if (env == NULL)
        snprintf(err, errlen, "%s: %s", path, why);
    memset(text, 0, len); /* it holds keys */
    free(text);
    return env;
}

char *agentcfg_key_file(const char *path, char *why, size_t whylen)
{
    struct stat st;
    size_t len;
    char err[300];

    /* The mode is checked on the file that was opened, not on a name that may change. */
    char *text = readfile_capped(path, "it", KEY_FILE_MAX, &st, &len, err, sizeof err);
    if (text == NULL) {
        if (strncmp(err, "cannot open it: ", 16) == 0)
            snprintf(why, whylen, "cannot be read: %s", err + 16);
        else
            snprintf(why, whylen, "%s", strncmp(err, "it ", 3) == 0 ? err + 3 : err);
        return NULL;
    }
    char *k = NULL;
    if (st.st_mode & 077) {
        snprintf(why, whylen, "is readable by others; chmod 600 it");
    } else {
        size_t first = strcspn(text, "\r\n");
        if (first == 0)
            snprintf(why, whylen, "is empty; put the key on its first line");
        else if (first >= KEY_LINE_MAX)
            snprintf(why, whylen, "has a first line longer than %d bytes", KEY_LINE_MAX - 1);
        else
            k = xstrndup(text, first);
    }
    memset(text, 0, len);
    free(text);
    return k;
}

char *agentcfg_key_env(const char *name, const char *env_file, json_t **env_cache,
                       bool *from_process)
{
    char err[300];
    const char *v = getenv(name);
    bool process = v != NULL && *v;

    if (!process && env_file) {
        if (*env_cache == NULL)
            *env_cache = agentcfg_dotenv_read(env_file, err, sizeof err);
        v = json_string_value(json_object_get(*env_cache, name));
    }
    if (from_process)
        *from_process = process;
    return v && *v ? xstrdup(v) : NULL;
}

void agentcfg_default_agent(json_t *env, char **base_url, char **key)
{
    const char *host = "127.0.0.1", *port = "8642", *k = NULL;

    if (json_string_value(json_object_get(env, "API_SERVER_HOST")))
        host = json_string_value(json_object_get(env, "API_SERVER_HOST"));
    if (json_string_value(json_object_get(env, "API_SERVER_PORT")))
        port = json_string_value(json_object_get(env, "API_SERVER_PORT"));
    k = json_string_value(json_object_get(env, "API_SERVER_KEY"));
    bool v6 = strchr(host, ':') != NULL;
    *base_url = xasprintf("http://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    *key = k && *k ? xstrdup(k) : NULL;
}

char *agentcfg_hermes_api_key(const char *env_file)
{
    json_t *cache = NULL;
    char *k = agentcfg_key_env("HERMES_API_KEY", env_file, &cache, NULL);
    json_decref(cache);
    return k;
}

char *agentcfg_url(const char *base_url, const char *path)
{
    size_t n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    return xasprintf("%.*s%s", (int)n, base_url, path);
}
