/* Unit tests for src/auth/oauthtokens.c: tokens issued once, found by hash, kept across a
 * reopen (a restart), revoked alone or by family, pruned when expired; only hashes on disk, mode
 * 600; every file it did not write refused. */
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

#include "oauthtokens.h"
#include "scratch.h"

static char dir[] = "/tmp/hm-tokenstore-XXXXXX";
static char path[300];

SCRATCH_FIXTURES_FILE(dir, path, "oauth-tokens.json")

static char *slurp(const char *p)
{
    FILE *f = fopen(p, "r");
    static char buf[65536];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

static void write_text(const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static const struct token_grant grant = {.kind = TOKEN_ACCESS,
                                         .client_id = "claude",
                                         .scope = "hermes:read hermes:task",
                                         .resource = "https://mcp.example.com/mcp",
                                         .expires = 2000000000};

static void issues_finds_and_survives_a_restart(void **state)
{
    char err[400], token[65], other[65];
    (void)state;
    unlink(path);
    struct tokenstore *ts = tokenstore_open(path, err, sizeof err);
    assert_non_null(ts);
    assert_int_equal(tokenstore_count(ts), 0);
    assert_true(tokenstore_issue(ts, &grant, token, err, sizeof err));
    assert_int_equal(strlen(token), 64);
    assert_int_equal(strspn(token, "0123456789abcdef"), 64);
    assert_true(tokenstore_issue(ts, &grant, other, err, sizeof err));
    assert_string_not_equal(token, other);

    const struct token_grant *g = tokenstore_find(ts, token, 1000);
    assert_non_null(g);
    assert_string_equal(g->client_id, "claude");
    assert_null(tokenstore_find(ts, "0000", 1000));
    assert_null(tokenstore_find(ts, token, 2000000000)); /* expired at its expiry */

    /* On disk: mode 600, the hashes, never the tokens. */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    const char *text = slurp(path);
    assert_null(strstr(text, token));
    assert_null(strstr(text, other));
    assert_non_null(strstr(text, "\"sha256\""));
    tokenstore_free(ts);

    /* A restart: the same tokens, the same grants. */
    ts = tokenstore_open(path, err, sizeof err);
    assert_non_null(ts);
    assert_int_equal(tokenstore_count(ts), 2);
    g = tokenstore_find(ts, token, 1000);
    assert_non_null(g);
    assert_int_equal(g->kind, TOKEN_ACCESS);
    assert_string_equal(g->scope, "hermes:read hermes:task");
    assert_string_equal(g->resource, "https://mcp.example.com/mcp");
    assert_int_equal(g->expires, 2000000000);
    assert_null(g->family);

    /* Revoked: gone now and after the next restart; an unknown token is no error. */
    assert_true(tokenstore_revoke(ts, token, false, err, sizeof err));
    assert_null(tokenstore_find(ts, token, 1000));
    assert_true(tokenstore_revoke(ts, "not-a-token", false, err, sizeof err));
    tokenstore_free(ts);
    ts = tokenstore_open(path, err, sizeof err);
    assert_null(tokenstore_find(ts, token, 1000));
    assert_non_null(tokenstore_find(ts, other, 1000));
    tokenstore_free(ts);
}

static void revokes_a_family_and_prunes_the_expired(void **state)
{
    char err[400], a[65], b[65], c[65], old[65];
    (void)state;
    unlink(path);
    struct tokenstore *ts = tokenstore_open(path, err, sizeof err);
    struct token_grant r = grant;
    r.kind = TOKEN_REFRESH;
    r.family = "fam1";
    assert_true(tokenstore_issue(ts, &r, a, err, sizeof err));
    assert_true(tokenstore_issue(ts, &r, b, err, sizeof err));
    r.family = "fam2";
    assert_true(tokenstore_issue(ts, &r, c, err, sizeof err));
    struct token_grant expired = grant;
    expired.expires = 500;
    assert_true(tokenstore_issue(ts, &expired, old, err, sizeof err));
    assert_int_equal(tokenstore_count(ts), 4);

    /* Reuse of a rotated refresh token revokes its whole family, nothing else. */
    assert_true(tokenstore_revoke(ts, a, true, err, sizeof err));
    assert_null(tokenstore_find(ts, a, 1000));
    assert_null(tokenstore_find(ts, b, 1000));
    assert_non_null(tokenstore_find(ts, c, 1000));
    assert_string_equal(tokenstore_find(ts, c, 1000)->family, "fam2");

    assert_int_equal(tokenstore_prune(ts, 1000), 1);
    assert_int_equal(tokenstore_prune(ts, 1000), 0);
    tokenstore_free(ts);
    ts = tokenstore_open(path, err, sizeof err);
    assert_int_equal(tokenstore_count(ts), 1);
    tokenstore_free(ts);
}

/* A rotated refresh token stays, marked used, across a restart (so its reuse is still seen);
 * a family goes by its name (a replayed code). */
static void marks_used_and_revokes_by_family_name(void **state)
{
    char err[400], a[65], b[65], c[65];
    (void)state;
    unlink(path);
    struct tokenstore *ts = tokenstore_open(path, err, sizeof err);
    struct token_grant r = grant;
    r.kind = TOKEN_REFRESH;
    r.family = "famA";
    assert_true(tokenstore_issue(ts, &r, a, err, sizeof err));
    assert_true(tokenstore_issue(ts, &r, b, err, sizeof err));
    r.family = "famB";
    assert_true(tokenstore_issue(ts, &r, c, err, sizeof err));
    assert_false(tokenstore_find(ts, a, 1000)->used);
    assert_true(tokenstore_mark_used(ts, a, err, sizeof err));
    tokenstore_free(ts);
    ts = tokenstore_open(path, err, sizeof err);
    assert_non_null(ts);
    assert_true(tokenstore_find(ts, a, 1000)->used);
    assert_false(tokenstore_find(ts, b, 1000)->used);
    assert_true(tokenstore_revoke_family(ts, "famA", err, sizeof err));
    assert_null(tokenstore_find(ts, a, 1000));
    assert_null(tokenstore_find(ts, b, 1000));
    assert_non_null(tokenstore_find(ts, c, 1000));
    tokenstore_free(ts);
    ts = tokenstore_open(path, err, sizeof err);
    assert_int_equal(tokenstore_count(ts), 1);
    tokenstore_free(ts);
}

static void refuses_what_it_did_not_write(void **state)
{
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"not json", "not a token store"},
        {"{\"version\":2,\"tokens\":[]}", "not a token store"},
        {"{\"version\":1}", "not a token store"},
        {"{\"version\":1,\"tokens\":[{\"sha256\":\"abc\",\"kind\":\"access\",\"client_id\":\"c\","
         "\"scope\":\"s\",\"resource\":\"r\",\"expires\":1}]}",
         "entry #1"},
        {"{\"version\":1,\"tokens\":[{\"sha256\":\""
         "0000000000000000000000000000000000000000000000000000000000000000"
         "\",\"kind\":\"bearer\",\"client_id\":\"c\",\"scope\":\"s\",\"resource\":\"r\","
         "\"expires\":1}]}",
         "entry #1"},
    };
    char err[400];
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_text(bad[i].text, 0600);
        struct tokenstore *ts = tokenstore_open(path, err, sizeof err);
        if (ts != NULL || strstr(err, bad[i].why) == NULL)
            fail_msg("case %zu: want '%s', got '%s'", i, bad[i].why, ts ? "(opened)" : err);
    }
    write_text("{\"version\":1,\"tokens\":[]}", 0644);
    assert_null(tokenstore_open(path, err, sizeof err));
    assert_non_null(strstr(err, "chmod 600"));
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_null(tokenstore_open(path, err, sizeof err));
    assert_non_null(strstr(err, "not a regular file"));
    unlink(path);
}

static void issues_nothing_it_cannot_keep(void **state)
{
    char err[400], token[65], far[400];
    char lng[TOKENSTORE_FIELD_MAX + 2];
    (void)state;
    snprintf(far, sizeof far, "%s/no-such-dir/oauth-tokens.json", dir);
    struct tokenstore *ts = tokenstore_open(far, err, sizeof err);
    assert_non_null(ts);
    memset(token, 'x', sizeof token);
    assert_false(tokenstore_issue(ts, &grant, token, err, sizeof err));
    assert_non_null(strstr(err, "cannot write"));
    assert_int_equal(tokenstore_count(ts), 0);
    assert_int_equal(token[0], '\0'); /* the token that was not kept is wiped */
    tokenstore_free(ts);

    ts = tokenstore_open(path, err, sizeof err);
    memset(lng, 'a', sizeof lng - 1);
    lng[sizeof lng - 1] = '\0';
    struct token_grant g = grant;
    g.scope = lng;
    assert_false(tokenstore_issue(ts, &g, token, err, sizeof err));
    g.scope = NULL;
    assert_false(tokenstore_issue(ts, &g, token, err, sizeof err));
    tokenstore_free(ts);
}

/* Two openers of one file, as the server and `hermes-mcp oauth tokens revoke` are: what one
 * revokes the other stops finding, and what the other writes next does not bring it back. */
static void count_one(const struct token_grant *g, void *arg)
{
    assert_non_null(g->client_id);
    (*(size_t *)arg)++;
}

static void shares_the_file_with_another_process(void **state)
{
    char err[400], mine[65], theirs[65], later[65];
    size_t gone = 0, n = 0;
    (void)state;
    unlink(path);
    struct tokenstore *server = tokenstore_open(path, err, sizeof err);
    struct token_grant other = grant;
    other.client_id = "cursor";
    assert_true(tokenstore_issue(server, &grant, mine, err, sizeof err));
    assert_true(tokenstore_issue(server, &other, theirs, err, sizeof err));
    const struct token_grant *g = tokenstore_find(server, mine, 1000);
    assert_non_null(g);
    assert_true(g->issued > 0); /* stamped when issued */

    struct tokenstore *cli = tokenstore_open(path, err, sizeof err);
    assert_int_equal(tokenstore_count(cli), 2);
    assert_true(tokenstore_revoke_matching(cli, NULL, NULL, &gone, err, sizeof err));
    assert_int_equal(gone, 0); /* neither client nor family: nothing, not "the expired" */
    assert_true(tokenstore_revoke_matching(cli, "claude", NULL, &gone, err, sizeof err));
    assert_int_equal(gone, 1);
    tokenstore_free(cli);

    assert_null(tokenstore_find(server, mine, 1000));
    assert_false(tokenstore_mark_used(server, mine, err, sizeof err)); /* no rotation of it */
    assert_non_null(tokenstore_find(server, theirs, 1000));
    assert_true(tokenstore_issue(server, &grant, later, err, sizeof err));
    cli = tokenstore_open(path, err, sizeof err);
    assert_int_equal(tokenstore_count(cli), 2); /* theirs and later; mine stays revoked */
    tokenstore_each(cli, count_one, &n);
    assert_int_equal(n, 2);
    tokenstore_free(cli);
    tokenstore_free(server);
}

/* A client that refreshes in a loop does not grow the store: each rotation keeps the family's
 * newest access tokens and rotated refresh tokens (TOKENSTORE_FAMILY_*), drops older ones. */
static void a_refresh_loop_keeps_the_family_small(void **state)
{
    (void)state;
    char err[300], tok[65], first_access[65] = "", last_used[65] = "", recent_access[65] = "";
    unlink(path); /* a store of its own */
    struct tokenstore *ts = tokenstore_open(path, err, sizeof err);
    assert_non_null(ts);
    struct token_grant a = grant, r = grant;
    a.family = r.family = "fam-loop";
    r.kind = TOKEN_REFRESH;
    char refresh[65];
    assert_true(tokenstore_issue(ts, &r, refresh, err, sizeof err));
    for (int i = 0; i < 40; i++) {
        /* A rotation as /token does it: the old refresh token marked used, then a new pair. */
        assert_true(tokenstore_mark_used(ts, refresh, err, sizeof err));
        memcpy(last_used, refresh, sizeof refresh);
        assert_true(tokenstore_issue(ts, &a, tok, err, sizeof err));
        if (i == 0)
            memcpy(first_access, tok, sizeof tok);
        memcpy(recent_access, tok, sizeof tok);
        assert_true(tokenstore_issue(ts, &r, refresh, err, sizeof err));
    }
    /* The new pair, the newest access tokens and rotated refresh tokens: no more. */
    assert_true(tokenstore_count(ts) <= TOKENSTORE_FAMILY_ACCESS + TOKENSTORE_FAMILY_USED + 1);
    assert_non_null(tokenstore_find(ts, recent_access, 1000));
    assert_non_null(tokenstore_find(ts, refresh, 1000));
    const struct token_grant *u = tokenstore_find(ts, last_used, 1000);
    assert_non_null(u); /* a reuse of the last rotated one is still seen as reuse */
    assert_true(u->used);
    assert_null(tokenstore_find(ts, first_access, 1000));
    tokenstore_free(ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(issues_finds_and_survives_a_restart),
        cmocka_unit_test(revokes_a_family_and_prunes_the_expired),
        cmocka_unit_test(marks_used_and_revokes_by_family_name),
        cmocka_unit_test(refuses_what_it_did_not_write),
        cmocka_unit_test(issues_nothing_it_cannot_keep),
        cmocka_unit_test(shares_the_file_with_another_process),
        cmocka_unit_test(a_refresh_loop_keeps_the_family_small),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
