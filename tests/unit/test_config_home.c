/* Unit tests for $HOME / ${HOME} in the env file's path values (the Node bridge's env files use
 * them): expanded at the start of path-valued keys only, never in other values, and left alone when
 * HOME is not set. */
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
#include "scratch.h"

static char dir[] = "/tmp/hm-config-home-XXXXXX";
static char path[256];

static void write_file(const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    chmod(path, 0600);
}

static void home_expands_in_path_values(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    setenv("HOME", "/home/alice", 1);
    write_file("TASKS_DIR=$HOME/hermes/tasks\n"
               "AUDIT_LOG_PATH=${HOME}/hermes/audit.jsonl\n"
               "AGENTS_FILE=\"$HOME/.hermes/agents.yaml\"\n"
               "HERMES_ENV_PATH=${HOME}/.hermes/.env\n"
               "HERMES_CONTRACT_PATH=$HOME\n"
               "MCP_PUBLIC_HOSTS=$HOME.example.com\n");
    assert_true(config_load(&c, path, err, sizeof err));
    assert_string_equal(c.tasks_dir, "/home/alice/hermes/tasks");
    assert_string_equal(c.audit_path, "/home/alice/hermes/audit.jsonl");
    assert_string_equal(c.agents_file, "/home/alice/.hermes/agents.yaml");
    assert_string_equal(c.hermes_env_path, "/home/alice/.hermes/.env");
    assert_string_equal(c.contract_path, "/home/alice");
    /* Not a path: kept as written. */
    assert_string_equal(c.public_hosts, "$HOME.example.com");
    config_cleanup(&c);
}

static void only_home_and_only_at_the_start(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    setenv("HOME", "/home/alice", 1);
    write_file("TASKS_DIR=/srv/$HOME/tasks\n"
               "AUDIT_LOG_PATH=$HOMEDIR/audit.jsonl\n"
               "AGENTS_FILE=${HOMEX}/agents.yaml\n"
               "HERMES_ENV_PATH='$USER/env'\n"
               "HERMES_CONTRACT_PATH=${HOME}x/contract.md\n");
    assert_true(config_load(&c, path, err, sizeof err));
    assert_string_equal(c.contract_path, "${HOME}x/contract.md"); /* a name, not HOME */
    assert_string_equal(c.tasks_dir, "/srv/$HOME/tasks");
    assert_string_equal(c.audit_path, "$HOMEDIR/audit.jsonl");
    assert_string_equal(c.agents_file, "${HOMEX}/agents.yaml");
    assert_string_equal(c.hermes_env_path, "$USER/env");
    config_cleanup(&c);
}

static void unset_home_is_a_configuration_error(void **state)
{
    struct config c;
    char err[256];
    (void)state;
    unsetenv("HOME");
    write_file("TASKS_DIR=$HOME/tasks\n");
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "TASKS_DIR"));
    assert_non_null(strstr(err, "HOME"));
    setenv("HOME", "relative/dir", 1);
    assert_false(config_load(&c, path, err, sizeof err));
    assert_non_null(strstr(err, "HOME"));
}

SCRATCH_FIXTURES_FILE(dir, path, "env")

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(home_expands_in_path_values),
        cmocka_unit_test(only_home_and_only_at_the_start),
        cmocka_unit_test(unset_home_is_a_configuration_error),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
