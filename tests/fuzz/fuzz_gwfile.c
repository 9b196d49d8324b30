/* fuzz_gwfile.c — libFuzzer target for gwfile.h (with gwinterp.c and yamljson.c). The raw input
 * (not NUL-terminated, as gwload.c reads the file) is parsed with a lookup that knows a few
 * variables, one of them a marker "secret". An accepted file must have the documented shape
 * (valid upstream names, exactly one transport, prefixes that can form a valid tool name, no
 * placeholder left, limits in range); a refusal must give a one-line UTF-8 reason that never
 * contains the secret's value (unless the file itself spells it out). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "gwfile.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRET "S3cr3tV4lu3"

static const char *lookup(const char *var, void *arg)
{
    (void)arg;
    if (strcmp(var, "TOKEN") == 0)
        return SECRET;
    if (strcmp(var, "HOME") == 0)
        return "/home/u";
    if (strcmp(var, "LOOP") == 0)
        return "${LOOP}";
    return NULL;
}

static bool no_placeholder_left(json_t *v)
{
    const char *k;
    json_t *c;
    size_t i;
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        /* A value put in is not rescanned, so only LOOP's own text may remain. */
        return strstr(s, "${") == NULL || strstr(s, "${LOOP}") != NULL;
    }
    if (json_is_object(v)) {
        json_object_foreach(v, k, c) if (!no_placeholder_left(c)) return false;
    }
    if (json_is_array(v)) {
        json_array_foreach(v, i, c) if (!no_placeholder_left(c)) return false;
    }
    return true;
}

static void check_upstream(const struct gw_upstream *u)
{
    char name[200];
    CHECK(gw_upstream_name_ok(u->name));
    CHECK((u->kind == GW_STDIO) == (u->command != NULL));
    CHECK((u->kind == GW_HTTP) == (u->url != NULL));
    CHECK(u->prefix != NULL && strlen(u->prefix) <= 63);
    snprintf(name, sizeof name, "%sx", u->prefix);
    CHECK(gw_tool_name_ok(name));
    CHECK(json_is_array(u->args) && json_is_object(u->env) && json_is_object(u->headers));
    CHECK(u->timeout_s >= 1 && u->timeout_s <= 86400);
    CHECK(u->connect_timeout_s >= 1 && u->connect_timeout_s <= 3600);
    CHECK(u->max_in_flight >= 1 && u->max_in_flight <= 1024);
    CHECK(!u->include || json_array_size(u->include) <= GW_MAX_RULES);
    const char *rule;
    enum gw_verdict v = gw_tool_verdict(u, "echo", &rule);
    CHECK(v != GW_DEFAULT_DENY || (!u->include && !u->exclude));
    unsigned per_min, in_flight;
    bool limited = gw_tool_limits(u, "echo", &per_min, &in_flight);
    CHECK(per_min <= GW_MAX_CALLS_PER_MIN && in_flight <= GW_MAX_CALLS_IN_FLIGHT);
    CHECK(limited == (per_min || in_flight));
    CHECK(!u->smoke ||
          (json_array_size(u->smoke) >= 1 && json_array_size(u->smoke) <= GW_MAX_SMOKE));
}

static void no_note(bool warn, const char *line, void *arg)
{
    (void)warn;
    (void)arg;
    CHECK(strlen(line) > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gwfile f;
    char err[300];
    if (gwfile_parse((const char *)data, size, lookup, NULL, &f, err, sizeof err)) {
        CHECK(f.nup <= GW_MAX_UPSTREAMS);
        /* Every placeholder is replaced, but a disabled upstream's (left as written) */
        const char *key;
        json_t *part;
        json_object_foreach(f.doc, key, part) if (strcmp(key, "upstreams"))
            CHECK(no_placeholder_left(part));
        for (size_t i = 0; i < f.nup; i++)
            CHECK(no_placeholder_left(
                json_object_get(json_object_get(f.doc, "upstreams"), f.up[i].name)));
        CHECK(f.nup + f.noff <= GW_MAX_UPSTREAMS);
        for (size_t i = 0; i < f.nup; i++) {
            CHECK(f.up[i].enabled);
            check_upstream(&f.up[i]);
        }
        for (size_t i = 0; i < f.noff; i++) { /* disabled ones are validated the same */
            CHECK(!f.off[i].enabled);
            check_upstream(&f.off[i]);
        }
        gwfile_notes(&f, no_note, NULL);
        gwfile_cleanup(&f);
    } else {
        CHECK(f.doc == NULL && f.up == NULL);
        CHECK(memchr(err, '\0', sizeof err) != NULL);
        CHECK(strchr(err, '\n') == NULL);
        CHECK(utf8_valid(err, strlen(err)));
        /* Unless the file itself spells it (then it is the file's text, not the value). */
        CHECK(strstr(err, SECRET) == NULL || memmem(data, size, SECRET, strlen(SECRET)));
    }
    return 0;
}
