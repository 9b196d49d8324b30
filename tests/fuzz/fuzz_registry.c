/* fuzz_registry.c — libFuzzer target for agentsyaml.h. The raw input (not NUL-terminated, as
 * bridge.c reads the file) is parsed with bridge.c's err size. An accepted registry must have the
 * documented shape (default names a listed agent, names unique and well formed, every base_url
 * allowed); a refusal must give a one-line reason that is a NUL-terminated, valid UTF-8 string
 * (bridge.c logs it and sends it as JSON in list_agents). The input as a URL is also checked
 * against what registry_url_allowed promises.
 *
 * FUZZ_REGISTRY_SKIP_ERR_TEXT=1 in the environment skips the checks on the text of a refusal
 * (UTF-8, one line: a known bug, see the check), so the rest can be fuzzed until it is fixed. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agentsyaml.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ERR_LEN 300 /* bridge.c: char err[300] */

static bool name_ok(const char *s, size_t n)
{
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

static bool is_string_array(json_t *a)
{
    size_t i;
    json_t *v;
    if (!json_is_array(a))
        return false;
    json_array_foreach(a, i, v) if (!json_is_string(v)) return false;
    return true;
}

static void check_agent(json_t *a)
{
    static const char *const keys[] = {"name",    "description", "capabilities", "kind",
                                       "profile", "base_url",    "key_env",      "key_file"};
    const char *k;
    json_t *v;

    CHECK(json_is_object(a));
    json_object_foreach(a, k, v)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            known = known || strcmp(k, keys[i]) == 0;
        CHECK(known);
        if (strcmp(k, "capabilities") == 0)
            CHECK(is_string_array(v));
        else
            CHECK(json_is_string(v));
    }
    json_t *name = json_object_get(a, "name");
    CHECK(json_is_string(name));
    CHECK(name_ok(json_string_value(name), json_string_length(name)));
    CHECK(json_is_string(json_object_get(a, "description")));
    CHECK(json_is_array(json_object_get(a, "capabilities")));
    const char *kind = json_string_value(json_object_get(a, "kind"));
    CHECK(kind != NULL && (strcmp(kind, "local") == 0 || strcmp(kind, "remote") == 0));
    json_t *url = json_object_get(a, "base_url");
    CHECK(json_is_string(url));
    CHECK(registry_url_allowed(json_string_value(url)));
}

static void check_registry(json_t *r)
{
    CHECK(json_is_object(r));
    CHECK(json_object_size(r) == 2);
    json_t *dflt = json_object_get(r, "default");
    json_t *agents = json_object_get(r, "agents");
    CHECK(json_is_string(dflt));
    CHECK(json_is_array(agents));
    size_t n = json_array_size(agents);
    CHECK(n >= 1 && n <= REGISTRY_MAX_AGENTS);

    bool found = false;
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(agents, i);
        check_agent(a);
        const char *name = json_string_value(json_object_get(a, "name"));
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(json_string_value(json_object_get(json_array_get(agents, j), "name")),
                         name) != 0);
        found = found || json_equal(json_object_get(a, "name"), dflt);
    }
    CHECK(found);

    /* What list_agents and the log would print must be dumpable (valid UTF-8 throughout). */
    char *text = json_dumps(r, JSON_COMPACT);
    CHECK(text != NULL);
    free(text);
}

static bool env_flag(const char *name)
{
    const char *e = getenv(name);
    return e != NULL && strcmp(e, "1") == 0;
}

static void check_refusal(const char *err)
{
    static int skip_text = -1;
    if (skip_text < 0)
        skip_text = env_flag("FUZZ_REGISTRY_SKIP_ERR_TEXT");
    /* bridge.c hands err (uninitialised) to the log and list_agents: a refusal must write it
     * (it once did not for a file with no YAML document: seeds empty, only_comment). */
    CHECK(memchr(err, '\0', ERR_LEN) != NULL && "registry_parse: err was not written");
    CHECK(err[0] != '\0');
    if (skip_text)
        return;
    /* Known bug: the '%.40s' / '%.64s' that quote a key or the default name can cut a UTF-8
     * sequence in two, and a quoted key may hold a line break (seeds crash-*). */
    CHECK(strchr(err, '\n') == NULL && strchr(err, '\r') == NULL); /* a one-line reason */
    json_t *s = json_string(err);
    CHECK(s != NULL && "registry_parse: err is not valid UTF-8");
    json_decref(s);
}

/* registry_url_allowed on the input as a C string: what it accepts is http(s) with nothing
 * that could move the host (userinfo, backslash, whitespace, query or fragment). */
static void fuzz_url(const uint8_t *data, size_t size)
{
    char *url = malloc(size + 1);
    if (url == NULL)
        abort();
    memcpy(url, data, size);
    url[size] = '\0';
    if (registry_url_allowed(url)) {
        size_t skip = strncasecmp(url, "http://", 7) == 0    ? 7
                      : strncasecmp(url, "https://", 8) == 0 ? 8
                                                             : 0;
        CHECK(skip != 0);
        CHECK(strpbrk(url + skip, "@\\ \t\r\n?#") == NULL);
        CHECK(url[skip] != '\0' && url[skip] != '/' && url[skip] != ':');
    }
    free(url);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[ERR_LEN];
    memset(err, 'Z', sizeof err);
    json_t *r = registry_parse((const char *)data, size, err, sizeof err);
    if (r == NULL) {
        check_refusal(err);
    } else {
        check_registry(r);
        /* The same text gives the same registry. */
        char err2[ERR_LEN];
        json_t *again = registry_parse((const char *)data, size, err2, sizeof err2);
        CHECK(again != NULL && json_equal(again, r));
        json_decref(again);
        json_decref(r);
    }

    /* A small err buffer is never overrun and always terminated. */
    char *small = malloc(16);
    if (small == NULL)
        abort();
    memset(small, 'Z', 16);
    r = registry_parse((const char *)data, size, small, 16);
    if (r == NULL)
        CHECK(memchr(small, '\0', 16) != NULL && small[0] != '\0');
    json_decref(r);
    free(small);

    if (size < 256)
        fuzz_url(data, size);
    return 0;
}
