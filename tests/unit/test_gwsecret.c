/* Unit tests for gwsecret.c: each kind of secret is found, also inside other text, random tokens
 * of every usual alphabet and length are (at the measured rate), hex after a credential word is,
 * and the ordinary strings a memory tool stores (prose, paths, commit hashes however they are
 * written, UUIDs, CamelCase names with digits) are not. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
        "secret 3f786850e387550fdab836ed7e6dc881de23001b", /* hex after a credential word */
        "api key: 3f786850e387550fdab836ed7e6dc881de23001b",
        "token=3f786850e387550fdab836ed7e6dc881de23001b",
        "OPENAI_API_KEY=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "{\"password\": \"9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B\"}",
        "auth 0123456789abcdef0123456789abcdef", /* 32 hex: a 128-bit key */
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
        "ThisIsAVeryLongCamelCaseIdentifierNameForTheTest",
        "image sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 pulled",
        "/home/user/src/hermes-mcp/tests/unit/test_gwsecret.c",
        /* CamelCase, dotted and path names with digits */
        "ProcessOrderCommandHandlerV2Async",
        "XMLHttpRequest2EventTargetPrototype",
        "getUserById2FactorAuthTokenHandlerV3",
        "com.example.hermes.gateway.PolicyEngine2Test",
        "AbstractSingletonProxyFactoryBean4SpringBoot",
        "Design_Notes/2026/Q4/ArchitectureReview/MeetingMinutes.md",
        "C:/Users/Alice/AppData/Local/Temp/tmp8X3kQ2.tmp",
        "/nix/store/9x8yz0abcdq1w2e3r4t5y6u7i8o9p0as-Python3-3.11.4/lib/python3.11",
        /* commit hashes as people write them */
        "fixed in commit `3f786850e387550fdab836ed7e6dc881de23001b`",
        "reverted (3f786850e387550fdab836ed7e6dc881de23001b)",
        "pinned to hermes-mcp@3f786850e387550fdab836ed7e6dc881de23001b",
        "git checkout 3f786850e387550fdab836ed7e6dc881de23001b",
        "commits 3f786850e387550fdab836ed7e6dc881de23001b and "
        "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",
        "sha256sum: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "3f786850e387550fdab836ed7e6dc881de23001b",
        "3F786850E387550FDAB836ED7E6DC881DE23001B",
    };
    (void)state;
    unsigned taken = 0;
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (like(plain[i]) && ++taken)
            print_message("case %zu (%s) taken for a secret\n", i, plain[i]);
    assert_int_equal(taken, 0);
}

/* xorshift64*: the same tokens on every run and machine */
static uint64_t next_random(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ULL;
}

/* 10,000 random tokens, half each base62 and base64url of 32-128 characters, alone or inside a
 * sentence: taken for secrets at the rate measured when the word-likeness rule was written (all
 * but 1 of these 10,000, 15 of 300,000 with another seed, all 32-51 characters with few letters
 * of one case). At least 99.5% is asserted: a change that weakens the rule fails here. */
static void finds_random_tokens(void **state)
{
    (void)state;
    static const char b62[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char *const alphabets[] = {b62, b64url};
    uint64_t seed = 0x5eedf00dcafe1234ULL;
    char text[200];
    unsigned missed = 0;
    for (unsigned i = 0; i < 10000; i++) {
        const char *a = alphabets[i % 2];
        size_t na = strlen(a);
        size_t len = 32 + next_random(&seed) % (128 - 32 + 1);
        size_t at = (i & 4) ? (size_t)snprintf(text, sizeof text, "the token is ") : 0;
        for (size_t j = 0; j < len; j++)
            text[at + j] = a[next_random(&seed) % na];
        text[at + len] = '\0';
        if (!like(text) && missed++ < 10)
            print_message("missed: %s\n", text);
    }
    print_message("random tokens missed: %u of 10000\n", missed);
    assert_in_range(missed, 0, 50);
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

static void took_too_long(int sig)
{
    (void)sig;
    static const char msg[] = "test_gwsecret: the scan of a repeated-prefix input did not end "
                              "within 120 s (quadratic)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A 2 MB argument made of one key prefix repeated (no digit, so nothing matches and every
 * position is a candidate) is scanned in linear time: each such input ends within a wide margin
 * (10 s; linear takes milliseconds, the old quadratic scan hours), and an alarm ends the test if
 * one never does. */
static void repeated_prefixes_scan_in_linear_time(void **state)
{
    (void)state;
    static const char *const shapes[] = {"sk-",    "ghp_",  "github_pat_", "xoxb-",
                                         "glpat-", "AIza-", "ghp_ab"};
    enum { SIZE = 2 * 1024 * 1024 };
    char *s = malloc(SIZE + 1);
    assert_non_null(s);
    signal(SIGALRM, took_too_long);
    alarm(120);
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        size_t n = strlen(shapes[k]), len = SIZE - SIZE % n;
        for (size_t i = 0; i < len; i += n)
            memcpy(s + i, shapes[k], n);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        const char *kind = NULL;
        bool found = gw_secret_like(s, len, &kind);
        double took = seconds_since(&t0);
        if (took > 10.0)
            fail_msg("shape %zu took %.1f s", k, took);
        /* the repeated shapes hold no digit: not a key, and one character class short of random */
        assert_false(found);
        s[len - 1] = '7'; /* a digit at the very end makes the first prefix a key */
        assert_true(gw_secret_like(s, len, NULL));
    }
    alarm(0);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_secrets),
        cmocka_unit_test(leaves_ordinary_text),
        cmocka_unit_test(finds_random_tokens),
        cmocka_unit_test(length_bounds_and_nul),
        cmocka_unit_test(repeated_prefixes_scan_in_linear_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
