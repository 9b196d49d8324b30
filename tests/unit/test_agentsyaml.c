/* Unit tests for agentsyaml.c: the agents file's schema, and every refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "agentsyaml.h"

static const char good[] = "default: alpha\n"
                           "agents:\n"
                           "  - name: alpha\n"
                           "    description: Research and coding agent\n"
                           "    capabilities: [code, research]\n"
                           "    kind: local            # local | remote\n"
                           "    profile: alpha\n"
                           "    base_url: http://127.0.0.1:8642/p/alpha\n"
                           "    key_file: /home/me/.hermes/keys/alpha.key\n"
                           "  - name: beta\n"
                           "    description: Writing agent\n"
                           "    capabilities: [writing]\n"
                           "    kind: remote\n"
                           "    base_url: http://100.101.102.103:8642\n"
                           "    key_env: BETA_API_KEY\n";

static json_t *parse(const char *s, char *err)
{
    return registry_parse(s, strlen(s), err, 300);
}

static void parses_the_seed_example(void **state)
{
    char err[300];
    (void)state;
    json_t *r = parse(good, err);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "default")), "alpha");
    json_t *agents = json_object_get(r, "agents");
    assert_int_equal(json_array_size(agents), 2);
    json_t *a = json_array_get(agents, 0);
    assert_string_equal(json_string_value(json_object_get(a, "profile")), "alpha");
    assert_int_equal(json_array_size(json_object_get(a, "capabilities")), 2);
    json_t *b = json_array_get(agents, 1);
    assert_string_equal(json_string_value(json_object_get(b, "key_env")), "BETA_API_KEY");
    assert_null(json_object_get(b, "key_file"));
    json_decref(r);
}

static void refuses_bad_registries(void **state)
{
    static const struct {
        const char *yaml, *why;
    } bad[] = {
        {"agents: []\n", "non-empty"},
        {"default: x\nagents:\n  - name: a\n    base_url: http://127.0.0.1:1\n", "not in the list"},
        {"agents:\n  - name: a\n    base_url: http://10.0.0.1:8642\n", "loopback or Tailscale"},
        {"agents:\n  - name: a\n    base_url: http://example.com\n", "loopback or Tailscale"},
        {"agents:\n  - name: a\n    base_url: http://user@127.0.0.1\n", "loopback or Tailscale"},
        {"agents:\n  - name: a\n    base_url: file:///etc\n", "loopback or Tailscale"},
        {"agents:\n  - name: a\n    base_url: http://127.0.0.1\n    api_key: x\n", "unknown key"},
        {"agents:\n  - &x {name: a, base_url: 'http://127.0.0.1'}\n  - *x\n", "not allowed"},
        {"agents:\n  - name: a\n    base_url: http://127.0.0.1\n  - name: a\n    base_url: "
         "http://[::1]:1\n",
         "twice"},
        {"agents:\n  - name: ../x\n    base_url: http://127.0.0.1\n", "name"},
        {"agents:\n  - name: a\n    kind: cloud\n    base_url: http://127.0.0.1\n", "kind"},
        {"agents: [\n", "line"},
        {"other: 1\nagents: []\n", "unknown top-level"},
        {"agents:\n  - name: a\n    name: b\n    base_url: http://127.0.0.1\n", "duplicate"},
        {"", "empty"}, /* found by fuzz_registry: err was left unwritten */
        {"# only a comment\n", "empty"},
    };
    char err[300];
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        json_t *r = parse(bad[i].yaml, err);
        if (r != NULL || strstr(err, bad[i].why) == NULL)
            fail_msg("case %zu: got '%s', wanted '%s'", i, err, bad[i].why);
    }
}

static void url_ranges(void **state)
{
    (void)state;
    assert_true(registry_url_allowed("http://127.0.0.1:8642"));
    assert_true(registry_url_allowed("http://127.5.5.5/p/x"));
    assert_true(registry_url_allowed("https://localhost:1/"));
    assert_true(registry_url_allowed("http://[::1]:8642"));
    assert_true(registry_url_allowed("http://100.64.0.1"));
    assert_true(registry_url_allowed("http://100.127.255.254:1"));
    assert_false(registry_url_allowed("http://100.128.0.1"));
    assert_true(registry_url_allowed("http://[fd7a:115c:a1e0::1]:8642"));
    assert_false(registry_url_allowed("http://[fd7a:115c:a1e1::1]:8642"));
    assert_false(registry_url_allowed("http://192.168.1.1"));
    assert_false(registry_url_allowed("http://127.0.0.1.evil.com"));
    assert_false(registry_url_allowed("ftp://127.0.0.1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_the_seed_example),
        cmocka_unit_test(refuses_bad_registries),
        cmocka_unit_test(url_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
