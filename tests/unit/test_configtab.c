/* Unit tests for the config key table (configtab.c): every row is complete, and the table's
 * reload column is what config_restart_keys reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"

static void rows_are_complete(void **state)
{
    (void)state;
    bool section_used[CONFIG_SEC_COUNT] = {0};
    assert_true(config_nkeys > 30);
    for (size_t i = 0; i < config_nkeys; i++) {
        const struct config_key *k = &config_keys[i];
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(k->key, config_keys[j].key);
        assert_non_null(k->summary);
        assert_true(k->section < CONFIG_SEC_COUNT);
        section_used[k->section] = true;
        /* A row the engine parses by its type says why it refuses a value. */
        if (!k->parse && (k->type == CONFIG_UINT || k->type == CONFIG_BOOL))
            assert_non_null(k->err);
        if (k->type == CONFIG_UINT) {
            assert_true(k->min <= k->dflt || k->parse);
            assert_true(k->dflt <= k->max);
            assert_true(k->scale >= 1);
            assert_non_null(k->unit);
        }
        if (!(k->flags & CONFIG_BY_OTHER) && k->type != CONFIG_SECRET)
            assert_true(k->field != CONFIG_NO_FIELD);
    }
    for (int s = 0; s < CONFIG_SEC_COUNT; s++)
        assert_true(section_used[s]);
}

static bool load(struct config *c, const char *lines)
{
    char err[256];
    json_t *env = json_object();
    for (const char *p = lines; *p;) {
        char key[64], val[128];
        size_t n = strcspn(p, "\n");
        if (sscanf(p, "%63[^=]=%127[^\n]", key, val) == 2)
            json_object_set_new(env, key, json_string(val));
        p += n + (p[n] == '\n');
    }
    bool ok = config_from_env(c, env, "/tmp/hm-configtab/env", err, sizeof err);
    json_decref(env);
    return ok;
}

/* Each key changed alone: a key marked reloadable is never in the restart list, any other is. */
static void reload_column_matches_restart_keys(void **state)
{
    (void)state;
    static const char base[] = "OAUTH_ISSUER_URL=https://mcp.example.com\n";
    static const struct {
        const char *key, *line;
    } changes[] = {
        {"MCP_PORT", "MCP_PORT=9000\n"},
        {"OAUTH_DCR", "OAUTH_DCR=0\n"},
        {"LOG_LEVEL", "LOG_LEVEL=debug\n"},
        {"MCP_DRAIN_GRACE_S", "MCP_DRAIN_GRACE_S=3\n"},
        {"MCP_PUBLIC_HOSTS", "MCP_PUBLIC_HOSTS=mcp.example.com\n"},
        {"TASKS_MAX", "TASKS_MAX=5\n"},
        {"MCP_HEADER_TIMEOUT_S", "MCP_HEADER_TIMEOUT_S=5\n"},
        {"HERMES_TIMEOUT_S", "HERMES_TIMEOUT_S=5\n"},
        {"OAUTH_CIMD", "OAUTH_CIMD=0\n"},
    };
    struct config now, fresh;
    assert_true(load(&now, base));
    for (size_t i = 0; i < sizeof changes / sizeof *changes; i++) {
        char text[256], out[256];
        snprintf(text, sizeof text, "%s%s", base, changes[i].line);
        assert_true(load(&fresh, text));
        const struct config_key *k = NULL;
        for (size_t j = 0; j < config_nkeys; j++)
            if (strcmp(config_keys[j].key, changes[i].key) == 0)
                k = &config_keys[j];
        assert_non_null(k);
        size_t n = config_restart_keys(&now, &fresh, out, sizeof out);
        if (k->flags & CONFIG_RELOAD) {
            assert_int_equal(n, 0);
        } else {
            assert_int_equal(n, 1);
            assert_string_equal(out, changes[i].key);
        }
        config_cleanup(&fresh);
    }
    config_cleanup(&now);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_are_complete),
        cmocka_unit_test(reload_column_matches_restart_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
