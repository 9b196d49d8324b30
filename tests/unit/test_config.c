/* Unit tests for config.c and envfile.c: defaults, validation, modes, atomic token writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "dotenvfile.h"
#include "envfile.h"
#include "scratch.h"

static char dir[] = "/tmp/hm-config-XXXXXX";
static char path[256];

static void write_file(const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static void defaults_without_a_file(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    assert_true(config_load(&c, NULL, err, sizeof err));
    assert_string_equal(c.host, "127.0.0.1");
    assert_int_equal(c.port, 8765);
    assert_false(c.auth);
    assert_false(c.sessions);
    assert_int_equal(c.drain_grace_s, 10);
    config_cleanup(&c);
}

static void token_needs_mode_600_and_64_hex(void **state)
{
    struct config c;
    char err[256];
    const char *tok =
        "MCP_AUTH_TOKEN=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";
    (void)state;
    write_file(tok, 0644);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "chmod 600"));
    assert_null(strstr(err, "0123456789abcdef")); /* never the secret */
    write_file(tok, 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_true(c.auth);
    config_cleanup(&c);
    write_file("MCP_AUTH_TOKEN=short\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "64 hexadecimal"));
    assert_null(strstr(err, "short"));
}

/* The halves doctor uses: reading reports the mode without judging it; validation places the
 * defaults beside the file. */
static void read_then_validate(void **state)
{
    struct config c;
    char err[256];
    unsigned mode = 0;
    (void)state;
    write_file("MCP_AUTH_TOKEN=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
               "MCP_PORT=9000\n",
               0640);
    json_t *env = dotenvfile_read(path, &mode, err, sizeof err);
    assert_non_null(env);
    assert_int_equal(mode, 0640);
    assert_string_equal(json_string_value(json_object_get(env, "MCP_PORT")), "9000");
    assert_true(config_from_env(&c, env, path, err, sizeof err));
    assert_int_equal(c.port, 9000);
    assert_true(c.auth);
    char want[300];
    snprintf(want, sizeof want, "%s/tasks", dir);
    assert_string_equal(c.tasks_dir, want);
    config_cleanup(&c);
    json_object_set_new(env, "MCP_PORT", json_string("70000"));
    assert_false(config_from_env(&c, env, path, err, sizeof err));
    assert_non_null(strstr(err, "MCP_PORT"));
    json_decref(env);
    write_file("NOT A LINE\n", 0600);
    assert_null(dotenvfile_read(path, &mode, err, sizeof err));
    assert_non_null(strstr(err, "line 1"));
    unlink(path);
    assert_null(dotenvfile_read(path, &mode, err, sizeof err));
    assert_non_null(strstr(err, "cannot open"));
}

/* Authentication is on with any way in (the Python server's OAuth-only env file has no
 * MCP_AUTH_TOKEN), off only with none; the owner token is told apart. */
static void auth_without_owner_token(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    write_file("OAUTH_ISSUER_URL=https://mcp.example.com\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_true(c.auth);
    assert_false(c.owner_token);
    config_cleanup(&c);
    write_file("TOKENS_FILE=/nonexistent/tokens.yaml\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_true(c.auth);
    assert_false(c.owner_token);
    config_cleanup(&c);
    write_file("MCP_PORT=0\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_false(c.auth);
    config_cleanup(&c);
    /* The static client's secret makes the file's mode matter without MCP_AUTH_TOKEN too. */
    write_file("OAUTH_ISSUER_URL=https://mcp.example.com\nOAUTH_CLIENT_ID=c\n"
               "OAUTH_CLIENT_SECRET=0123456789abcdef0123456789abcdef\n",
               0644);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "chmod 600"));
    assert_null(strstr(err, "0123456789abcdef"));
}

static void non_loopback_needs_opt_in(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    write_file("MCP_HOST=0.0.0.0\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "MCP_ALLOW_NON_LOOPBACK"));
    write_file("MCP_HOST=0.0.0.0\nMCP_ALLOW_NON_LOOPBACK=1\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    config_cleanup(&c);
}

static void bad_values_are_refused(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    write_file("MCP_PORT=70000\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "MCP_PORT"));
    write_file("MCP_SESSIONS=maybe\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    write_file("MCP_PORT=0\nMCP_SESSIONS=yes\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_int_equal(c.port, 0);
    assert_true(c.sessions);
    config_cleanup(&c);
    write_file("MCP_DRAIN_GRACE_S=3601\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "MCP_DRAIN_GRACE_S"));
    write_file("MCP_DRAIN_GRACE_S=-1\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    write_file("MCP_DRAIN_GRACE_S=0\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_int_equal(c.drain_grace_s, 0);
    config_cleanup(&c);
}

/* REPLICA_NAME: what the proxy's map can match (1-12 of a-z, 0-9, '-'); REPLICAS: 1-64,
 * default 1 (each limit whole). */
static void replica_name_and_count(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    write_file("MCP_PORT=0\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_null(c.replica_name);
    assert_int_equal(c.replicas, 1);
    config_cleanup(&c);
    write_file("REPLICA_NAME=eu-west-1a\nREPLICAS=3\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_string_equal(c.replica_name, "eu-west-1a");
    assert_int_equal(c.replicas, 3);
    config_cleanup(&c);
    const char *bad[] = {"REPLICA_NAME=A\n",   "REPLICA_NAME=a.b\n", "REPLICA_NAME=abcdefghijklm\n",
                         "REPLICA_NAME=a b\n", "REPLICAS=0\n",       "REPLICAS=65\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_file(bad[i], 0600);
        assert_false(config_load(&c, path, err, sizeof err));
        assert_non_null(strstr(err, i < 4 ? "REPLICA_NAME" : "REPLICAS"));
    }
}

/* OAUTH_ISSUER_URL: the public origin, https (http only on loopback), no path; a final '/'
 * is dropped so the metadata URLs built from it have one slash. */
static void oauth_issuer_is_an_origin(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    static const char *const good[] = {"https://mcp.example.com", "https://mcp.example.com:8443/",
                                       "http://127.0.0.1:8765",   "http://localhost",
                                       "http://[::1]:9000",       "https://[2001:db8::1]"};
    static const char *const bad[] = {"http://mcp.example.com",
                                      "ftp://x",
                                      "https://",
                                      "https://a.example/mcp",
                                      "https://user@a.example",
                                      "https://a.example?x=1",
                                      "https://a.example#f",
                                      "https://a.example:99999",
                                      "https://a.example:x",
                                      "http://10.0.0.1",
                                      "https://[::1",
                                      "HTTPS://a.example",
                                      "https://a b"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        if (!config_issuer_ok(good[i]))
            fail_msg("refused %s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (config_issuer_ok(bad[i]))
            fail_msg("accepted %s", bad[i]);
    write_file("OAUTH_ISSUER_URL=https://mcp.example.com/\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_string_equal(c.oauth_issuer, "https://mcp.example.com");
    config_cleanup(&c);
    write_file("OAUTH_ISSUER_URL=http://mcp.example.com\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "OAUTH_ISSUER_URL"));
    write_file("MCP_PORT=1\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_null(c.oauth_issuer); /* unset: no OAuth, the bearer path as it always was */
    config_cleanup(&c);
}

static void envfile_set_replaces_one_key_atomically(void **state)
{
    char err[256], buf[512];
    struct stat st;
    (void)state;
    write_file("# keep me\nMCP_PORT=1234\nMCP_AUTH_TOKEN=old\nOTHER=x\n", 0644);
    assert_true(envfile_set(path, "MCP_AUTH_TOKEN", "new", err, sizeof err));
    FILE *f = fopen(path, "r");
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, "# keep me\nMCP_PORT=1234\nMCP_AUTH_TOKEN=new\nOTHER=x\n");
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    unlink(path);
    assert_true(envfile_set(path, "MCP_AUTH_TOKEN", "fresh", err, sizeof err));
    f = fopen(path, "r");
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, "MCP_AUTH_TOKEN=fresh\n");
}

SCRATCH_FIXTURES_FILE(dir, path, "env")

/* Retention: 30 days and 10,000 tasks unless set; 0 turns a limit off; anything
 * that is not a number in range is refused with the key named. */
static void retention_limits(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    assert_true(config_load(&c, NULL, err, sizeof err));
    assert_int_equal(c.tasks_retention_days, 30);
    assert_int_equal(c.tasks_max, 10000);
    config_cleanup(&c);
    write_file("TASKS_RETENTION_DAYS=0\nTASKS_MAX=5\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_int_equal(c.tasks_retention_days, 0);
    assert_int_equal(c.tasks_max, 5);
    config_cleanup(&c);
    write_file("TASKS_RETENTION_DAYS=-1\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "TASKS_RETENTION_DAYS"));
    write_file("TASKS_MAX=lots\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "TASKS_MAX"));
}

/* BIND_HOST is MCP_HOST under the Python server's name: the same rule, and the two may not
 * disagree. */
static void bind_host_is_mcp_host(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    write_file("BIND_HOST=127.0.0.2\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_string_equal(c.host, "127.0.0.2");
    config_cleanup(&c);
    write_file("BIND_HOST=0.0.0.0\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "BIND_HOST=0.0.0.0 is not a loopback address"));
    write_file("BIND_HOST=127.0.0.1\nMCP_HOST=127.0.0.1\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    config_cleanup(&c);
    write_file("BIND_HOST=127.0.0.2\nMCP_HOST=127.0.0.1\n", 0600);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "MCP_HOST and BIND_HOST"));
}

/* OAuth token lifetimes: 1 h and 30 d unless set; a refresh token outlives its access token. */
static void oauth_token_lifetimes(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    write_file("OAUTH_ISSUER_URL=https://mcp.example.com\n", 0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_int_equal(c.oauth_access_ttl_s, 3600);
    assert_int_equal(c.oauth_refresh_ttl_s, 30 * 24 * 3600);
    config_cleanup(&c);
    write_file("OAUTH_ISSUER_URL=https://mcp.example.com\nOAUTH_ACCESS_TTL_S=300\n"
               "OAUTH_REFRESH_TTL_S=86400\n",
               0600);
    assert_true(config_load(&c, path, err, sizeof err));
    assert_int_equal(c.oauth_access_ttl_s, 300);
    assert_int_equal(c.oauth_refresh_ttl_s, 86400);
    config_cleanup(&c);
    static const char *const bad[] = {
        "OAUTH_ACCESS_TTL_S=0",         "OAUTH_ACCESS_TTL_S=86401",
        "OAUTH_ACCESS_TTL_S=x",         "OAUTH_REFRESH_TTL_S=59",
        "OAUTH_REFRESH_TTL_S=31622401", "OAUTH_ACCESS_TTL_S=7200\nOAUTH_REFRESH_TTL_S=3600"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[200];
        snprintf(text, sizeof text, "OAUTH_ISSUER_URL=https://mcp.example.com\n%s\n", bad[i]);
        write_file(text, 0600);
        if (config_load(&c, path, err, sizeof err))
            fail_msg("accepted %s", bad[i]);
        assert_non_null(strstr(err, "_TTL_S"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_without_a_file),
        cmocka_unit_test(token_needs_mode_600_and_64_hex),
        cmocka_unit_test(read_then_validate),
        cmocka_unit_test(non_loopback_needs_opt_in),
        cmocka_unit_test(bad_values_are_refused),
        cmocka_unit_test(retention_limits),
        cmocka_unit_test(envfile_set_replaces_one_key_atomically),
        cmocka_unit_test(oauth_issuer_is_an_origin),
        cmocka_unit_test(bind_host_is_mcp_host),
        cmocka_unit_test(oauth_token_lifetimes),
        cmocka_unit_test(auth_without_owner_token),
        cmocka_unit_test(replica_name_and_count),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
