/* Unit tests for src/auth: the tokens file parser (every refusal), expiry dates, the token
 * lookup, and the scope and agent checks. */
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

#include "claimmap.h"
#include "crypto.h"
#include "principal.h"

#define H1 "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae" /* "foo" */
#define H2 "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9" /* "bar" */

static const char good[] = "tokens:\n"
                           "  - name: reader\n"
                           "    sha256: " H1 "\n"
                           "    scopes: [hermes:read]\n"
                           "  - name: hermes-ops.2\n"
                           "    sha256: " H2 "\n"
                           "    scopes: hermes:read, hermes:task gateway:github\n"
                           "    agents: [beta]\n"
                           "    expires: 2030-06-01T12:00:00Z\n"
                           "    limits: {calls_per_min: 30, calls_in_flight: 2}\n";

static struct principals *parse(const char *s, char *err)
{
    return tokens_parse(s, strlen(s), err, 300);
}

static void parses_a_tokens_file(void **state)
{
    char err[300];
    (void)state;
    struct principals *s = parse(good, err);
    assert_non_null(s);
    assert_int_equal(s->n, 2);
    const struct principal *r = &s->v[0], *o = &s->v[1];
    assert_string_equal(r->name, "reader");
    assert_false(r->all);
    assert_int_equal(r->nscopes, 1);
    assert_null(r->agents);
    assert_int_equal(r->expires, 0);
    unsigned char foo[32];
    crypto_sha256("foo", 3, foo);
    assert_memory_equal(r->hash, foo, 32);
    assert_string_equal(o->name, "hermes-ops.2");
    assert_int_equal(o->nscopes, 3);
    assert_string_equal(o->scopes[2], "gateway:github");
    assert_int_equal(o->nagents, 1);
    assert_int_equal(o->expires, 1906545600); /* date -u -d 2030-06-01T12:00:00Z +%s */
    assert_int_equal(r->calls_per_min, 0);    /* no limits: none */
    assert_int_equal(o->calls_per_min, 30);
    assert_int_equal(o->calls_in_flight, 2);
    assert_int_equal(r->calls_in_flight, 0);
    principals_unref(s);

    s = parse("tokens: []\n", err);
    assert_non_null(s);
    assert_int_equal(s->n, 0);
    principals_unref(s);
}

static void refuses_unclear_files(void **state)
{
    static const struct {
        const char *yaml, *why;
    } bad[] = {
        {"", "empty"},
        {"- a\n", "must be a mapping"},
        {"tokens: x\n", "'tokens' must be a list"},
        {"tokens: []\nextra: 1\n", "unknown top-level key 'extra'"},
        {"tokens:\n  - x\n", "entry #1 is not a mapping"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n    role: x\n",
         "entry #1: unknown key 'role'"},
        {"tokens:\n  - sha256: " H1 "\n    scopes: [hermes:read]\n", "'name' must be"},
        {"tokens:\n  - name: -a\n    sha256: " H1 "\n    scopes: [hermes:read]\n",
         "'name' must be"},
        {"tokens:\n  - name: owner\n    sha256: " H1 "\n    scopes: [hermes:read]\n",
         "MCP_AUTH_TOKEN's"},
        {"tokens:\n  - name: a\n    sha256: abc\n    scopes: [hermes:read]\n", "'sha256' must be"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n", "'scopes' is missing"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: []\n", "'scopes' is empty"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:root]\n",
         "unknown scope 'hermes:root'"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [\"gateway:\"]\n", "unknown scope"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [[x]]\n", "must be text"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n    agents: [a b]\n",
         "agent names"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n    expires: soon\n",
         "'expires' must be"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n  - name: a\n"
         "    sha256: " H2 "\n    scopes: [hermes:read]\n",
         "principal 'a' is listed twice"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n  - name: b\n"
         "    sha256: " H1 "\n    scopes: [hermes:task]\n",
         "'a' and 'b' have the same token"},
        {"tokens: &x []\n", "anchors"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n    limits: 5\n",
         "'limits' must be a mapping"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n"
         "    limits: {calls: 5}\n",
         "unknown key 'limits.calls'"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n"
         "    limits: {calls_per_min: -1}\n",
         "'limits.calls_per_min' must be a whole number 0-1000000"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n"
         "    limits: {calls_per_min: 1000001}\n",
         "'limits.calls_per_min' must be"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n"
         "    limits: {calls_per_min: 2x}\n",
         "'limits.calls_per_min' must be"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n"
         "    limits: {calls_per_min: [1]}\n",
         "'limits.calls_per_min' must be"},
        {"tokens:\n  - name: a\n    sha256: " H1 "\n    scopes: [hermes:read]\n"
         "    limits: {calls_in_flight: 10001}\n",
         "'limits.calls_in_flight' must be a whole number 0-10000"},
    };
    char err[300];
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct principals *s = parse(bad[i].yaml, err);
        if (s != NULL || strstr(err, bad[i].why) == NULL)
            fail_msg("case %zu: want '%s', got '%s'", i, bad[i].why, s ? "(accepted)" : err);
        assert_null(strstr(err, H1)); /* a refusal never quotes a hash */
    }
}

static void parses_utc_dates(void **state)
{
    time_t t;
    (void)state;
    assert_true(tokens_parse_time("1970-01-01", &t));
    assert_int_equal(t, 0);
    assert_true(tokens_parse_time("2024-02-29T23:59:59Z", &t));
    assert_int_equal(t, 1709251199);
    assert_true(tokens_parse_time("2000-03-01", &t));
    assert_int_equal(t, 951868800);
    static const char *const bad[] = {
        "2023-02-29", "2024-13-01", "2024-04-31", "2024-01-01T24:00:00Z",     "2024-01-01T12:00:00",
        "2024-1-01",  "1969-12-31", "",           "2024-01-01T12:00:00+01:00"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (tokens_parse_time(bad[i], &t))
            fail_msg("accepted '%s'", bad[i]);
}

static void checks_scopes_and_agents(void **state)
{
    char err[300];
    (void)state;
    assert_true(principal_scope_known("hermes:read"));
    assert_true(principal_scope_known("hermes:admin"));
    assert_true(principal_scope_known("gateway:fs.local"));
    assert_false(principal_scope_known("gateway:.x"));
    assert_false(principal_scope_known("hermes:*"));
    assert_false(
        principal_scope_known("agent:alpha")); /* internal to the agent check, never granted */

    struct principals *s = parse(good, err);
    assert_non_null(s);
    const struct principal *r = &s->v[0], *o = &s->v[1];
    assert_true(principal_has_scope(r, "hermes:read"));
    assert_false(principal_has_scope(r, "hermes:task"));
    assert_false(principal_has_scope(r, "hermes:admin"));
    assert_false(principal_has_scope(r, NULL)); /* a tool without a scope: the owner's alone */
    assert_true(principal_has_scope(o, "gateway:github"));
    assert_false(principal_has_scope(o, "gateway:other"));
    assert_true(principal_agent_allowed(r, "alpha")); /* no agents: list: every agent */
    assert_true(principal_agent_allowed(o, "beta"));
    assert_false(principal_agent_allowed(o, "alpha"));
    assert_true(principal_agent_allowed(r, NULL)); /* every agent: only without a list */
    assert_false(principal_agent_allowed(o, NULL));
    assert_false(principal_expired(o, 1906545599));
    assert_true(principal_expired(o, 1906545600));
    assert_false(principal_expired(r, 4000000000));
    principals_unref(s);
}

static void finds_tokens_with_the_owner_first(void **state)
{
    char err[300], path[] = "/tmp/hm-principal-XXXXXX";
    unsigned char owner[32];
    (void)state;
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, good, strlen(good)), (ssize_t)strlen(good));
    close(fd);
    crypto_sha256("the-owner", 9, owner);

    struct principals *s = principals_load(owner, path, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(s->n, 3);
    const struct principal *p = principals_find(s, "the-owner");
    assert_non_null(p);
    assert_string_equal(p->name, "owner");
    assert_true(p->all);
    assert_true(principal_has_scope(p, NULL));
    assert_true(principal_agent_allowed(p, "anything"));
    assert_string_equal(principals_find(s, "foo")->name, "reader");
    assert_string_equal(principals_find(s, "bar")->name, "hermes-ops.2");
    assert_null(principals_find(s, "fo"));
    assert_null(principals_find(s, ""));
    assert_null(principals_find(s, NULL));
    /* A reference outlives the set's first owner (a request across a reload). */
    struct principals *held = principals_ref(s);
    principals_unref(s);
    assert_string_equal(principals_find(held, "foo")->name, "reader");
    principals_unref(held);

    /* The owner's token in the file is refused: two names for one token. */
    crypto_sha256("foo", 3, owner);
    assert_null(principals_load(owner, path, err, sizeof err));
    assert_non_null(strstr(err, "has MCP_AUTH_TOKEN's token"));

    /* Mode: readable by others is refused, and says how to fix it. */
    chmod(path, 0640);
    assert_null(principals_load(NULL, path, err, sizeof err));
    assert_non_null(strstr(err, "chmod 600"));
    unlink(path);
    assert_null(principals_load(NULL, path, err, sizeof err));
    assert_non_null(strstr(err, "cannot open"));

    /* No file: the owner alone; neither: nobody. */
    s = principals_load(NULL, NULL, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(s->n, 0);
    assert_null(principals_find(s, "foo"));
    principals_unref(s);
    principals_unref(NULL);
}

/* An OAuth access token's principal: the granted scopes, every agent, never the owner's reach. */
static void grants_become_principals(void **state)
{
    (void)state;
    struct principal *p = principal_for_grant("oauth:claude", "  hermes:read  hermes:task ", "tok");
    assert_string_equal(p->name, "oauth:claude");
    assert_false(p->all);
    assert_int_equal(p->nscopes, 2);
    assert_true(principal_has_scope(p, "hermes:task"));
    assert_false(principal_has_scope(p, "hermes:admin"));
    assert_false(principal_has_scope(p, NULL));
    assert_true(principal_agent_allowed(p, "alpha"));
    unsigned char h[32];
    crypto_sha256("tok", 3, h);
    assert_memory_equal(p->hash, h, 32);
    principal_free(p);
    p = principal_for_grant(
        "oauth:https://a-very-long-client-id.example.com/metadata/document.json", "", "t");
    assert_int_equal(strlen(p->name), PRINCIPAL_NAME_MAX);
    assert_int_equal(p->nscopes, 0);
    principal_free(p);
    principal_free(NULL);
}

/* An OAuth client's principal name is what tasks, sealed state, /metrics and the audit log know
 * it by: two clients must never share one. A client_id too long for "oauth:<id>" (a client ID
 * metadata document URL, a 64-character static id) is shortened with a digest of the whole id,
 * so ids that differ only past the cut still get different names. */
static void oauth_names_stay_distinct(void **state)
{
    (void)state;
    char a[PRINCIPAL_NAME_MAX + 1], b[PRINCIPAL_NAME_MAX + 1];
    principal_oauth_name("0123456789abcdef0123456789abcdef", a);
    assert_string_equal(a, "oauth:0123456789abcdef0123456789abcdef");
    char fits[59];
    memset(fits, 'x', 58);
    fits[58] = '\0';
    principal_oauth_name(fits, a);
    assert_int_equal(strlen(a), PRINCIPAL_NAME_MAX);
    assert_string_equal(a + 6, fits);
    const char *one = "https://apps.example.com/hermes/connectors/metadata/client-one.json";
    const char *two = "https://apps.example.com/hermes/connectors/metadata/client-two.json";
    principal_oauth_name(one, a);
    principal_oauth_name(two, b);
    assert_int_equal(strlen(a), PRINCIPAL_NAME_MAX);
    assert_int_equal(strlen(b), PRINCIPAL_NAME_MAX);
    assert_string_not_equal(a, b);
    assert_memory_equal(a, "oauth:https://apps.example.com/hermes/", 38); /* still readable */
    char again[PRINCIPAL_NAME_MAX + 1];
    principal_oauth_name(one, again);
    assert_string_equal(a, again); /* the same client, the same name: it finds its tasks again */
    char sixty_four[65]; /* a static id at its longest: "oauth:" + 64 does not fit either */
    memset(sixty_four, 's', 64);
    sixty_four[64] = '\0';
    principal_oauth_name(sixty_four, a);
    sixty_four[63] = 't';
    principal_oauth_name(sixty_four, b);
    assert_int_equal(strlen(a), PRINCIPAL_NAME_MAX);
    assert_string_not_equal(a, b);
}

/* A rule naming an issuer applies to that issuer's tokens only; one naming an issuer the
 * server does not accept is found before it can silently never apply. */
static void rules_by_issuer(void **state)
{
    (void)state;
    char err[300];
    const char *text = "oidc:\n  rules:\n"
                       "    - issuer: https://b.example/\n      claim: groups\n      value: staff\n"
                       "      agents: [beta]\n"
                       "    - claim: groups\n      value: staff\n      agents: [alpha]\n";
    struct principals *s = tokens_parse(text, strlen(text), err, sizeof err);
    assert_non_null(s);
    assert_null(claimmap_unknown_issuer(s->claims, "https://a.example/ https://b.example/"));
    assert_string_equal(claimmap_unknown_issuer(s->claims, "https://a.example/"),
                        "https://b.example/");
    assert_string_equal(claimmap_unknown_issuer(s->claims, "https://b.example"),
                        "https://b.example/"); /* exact, not a prefix */
    assert_string_equal(claimmap_unknown_issuer(s->claims, NULL), "https://b.example/");
    json_t *claims = json_pack("{s[s]}", "groups", "staff");
    for (int from_b = 0; from_b < 2; from_b++) {
        struct principal p = {0};
        claimmap_apply(s->claims, claims, from_b ? "https://b.example/" : "https://a.example/",
                       "scope", &p);
        assert_int_equal(p.nagents, 1);
        assert_string_equal(p.agents[0], from_b ? "beta" : "alpha");
        free(p.agents[0]);
        free(p.agents);
        free(p.scopes);
    }
    json_decref(claims);
    principals_unref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_a_tokens_file),
        cmocka_unit_test(refuses_unclear_files),
        cmocka_unit_test(parses_utc_dates),
        cmocka_unit_test(checks_scopes_and_agents),
        cmocka_unit_test(finds_tokens_with_the_owner_first),
        cmocka_unit_test(grants_become_principals),
        cmocka_unit_test(oauth_names_stay_distinct),
        cmocka_unit_test(rules_by_issuer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
