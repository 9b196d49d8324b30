/* Unit tests for gwsecret.c: each kind of secret is found, also inside other text, and the
 * ordinary strings a memory tool stores (prose, paths, commit hashes, UUIDs) are not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gwsecret.h"

static bool like(const char *s)
{
    const char *kind = "unset";
    bool r = gw_secret_like(s, strlen(s), &kind);
    assert_true(r ? kind != NULL : kind == NULL);
    return r;
}

static void finds_secrets(void **state)
{
    static const char *const secrets[] = {
        "sk-proj-4fJ9kQ2xLm8pR7tV1wZ3yB6nC0dE",
        "the key is sk-ABCDEFGHIJ0123456789abcd, keep it",
        "OPENAI_API_KEY=sk-ABCDEFGHIJ0123456789abcd",
        "ghp_0123456789abcdefghijABCDEFGHIJ012345",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "xoxb-123456789012-abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
        "glpat-abcdefghij0123456789",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
        "-----begin openssh private key-----",
        "Authorization: Bearer abcdefghijklmnop1234",
        "bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0",
        "token: Zr8Qm2Lx9Vb4Tn7Wc1Ky6Hp3Jd5Fs0Ga",
    };
    (void)state;
    for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++)
        if (!like(secrets[i]))
            fail_msg("case %zu not found", i);
}

static void leaves_ordinary_text(void **state)
{
    static const char *const plain[] = {
        "",
        "The user prefers tabs over spaces and short commit messages.",
        "ask-me-something-about-this-project-later-please",
        "task-0123456789abcdefghij",
        "/home/user/src/hermes-mcp/src/gateway/gwcall.c",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
        "550e8400-e29b-41d4-a716-446655440000",
        "sk-short",
        "Bearer token",
        "AKIAlower0123456789x",
        "architecture_decision_record_number_twelve_2026",
    };
    (void)state;
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (like(plain[i]))
            fail_msg("case %zu (%s) taken for a secret", i, plain[i]);
}

static void length_bounds_and_nul(void **state)
{
    (void)state;
    const char key[] = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    assert_false(gw_secret_like(key, 10, NULL)); /* only the first len bytes are read */
    assert_false(gw_secret_like(NULL, 0, NULL));
    const char with_nul[] = "x\0sk-ABCDEFGHIJ0123456789abcd";
    assert_true(gw_secret_like(with_nul, sizeof with_nul - 1, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_secrets),
        cmocka_unit_test(leaves_ordinary_text),
        cmocka_unit_test(length_bounds_and_nul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
