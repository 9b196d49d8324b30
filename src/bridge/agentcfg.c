/* agentcfg.c — registry file, agent keys and the synthetic default agent, read from disk. */
#include "agentcfg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dotenv.h"
#include "mem.h"
#include "registry.h"

#define DOTENV_READ_MAX (64 * 1024)
#define KEY_LINE_MAX 1024

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
static char *read_regular(const char *path, const char *what, size_t max, const char *too_big,
                          struct stat *st, size_t *len, char *err, size_t errlen)
{
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer (fstat refuses it next). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", what, strerror(errno));
        return NULL;
    }
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", what);
        close(fd);
        return NULL;
    }
    if ((size_t)st->st_size > max) {
        snprintf(err, errlen, "%s is larger than %s", what, too_big);
        close(fd);
        return NULL;
    }
    char *text = xmalloc(max + 1);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, text + n, max - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "cannot read %s: %s", what, strerror(errno));
            close(fd);
            memset(text, 0, n);
            free(text);
            return NULL;
        }
        if (r == 0 || (n += (size_t)r) == max)
            break;
    }
    close(fd);
    text[n] = '\0';
    *len = n;
    return text;
}

json_t *agentcfg_registry_read(const char *path, char *err, size_t errlen)
{
    struct stat st;
    size_t len;
    char why[300];

    /* Messages say "the file", not its path: they reach /health, which needs no token. */
    char *text =
        read_regular(path, "the file", AGENTCFG_REGISTRY_MAX, "1 MiB", &st, &len, err, errlen);
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

    char *text = read_regular(path, path, DOTENV_READ_MAX, "64 KiB", &st, &len, err, errlen);
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
    char line[KEY_LINE_MAX];

    if (stat(path, &st) < 0) {
        snprintf(why, whylen, "cannot be read: %s", strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "is not a regular file");
        return NULL;
    }
    if (st.st_mode & 077) {
        snprintf(why, whylen, "is readable by others; chmod 600 it");
        return NULL;
    }
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        snprintf(why, whylen, "cannot be read: %s", strerror(errno));
        return NULL;
    }
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got) {
        snprintf(why, whylen, "is empty; put the key on its first line");
        return NULL;
    }
    line[strcspn(line, "\r\n")] = '\0';
    char *k = line[0] ? xstrdup(line) : NULL;
    memset(line, 0, sizeof line);
    if (k == NULL)
        snprintf(why, whylen, "is empty; put the key on its first line");
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

char *agentcfg_url(const char *base_url, const char *path)
{
    size_t n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    return xasprintf("%.*s%s", (int)n, base_url, path);
}
