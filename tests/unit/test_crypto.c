/* Unit tests for crypto.c: SHA-256 vectors, random hex shape, constant-time equality. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "crypto.h"

static void sha256_known_vectors(void **state)
{
    static const unsigned char abc[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                          0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
                                          0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
                                          0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    unsigned char out[32];
    (void)state;
    crypto_sha256("abc", 3, out);
    assert_memory_equal(out, abc, 32);
    /* Two blocks (FIPS 180-2, appendix B.2). */
    static const unsigned char two[32] = {0x24, 0x8d, 0x6a, 0x61, 0xd2, 0x06, 0x38, 0xb8,
                                          0xe5, 0xc0, 0x26, 0x93, 0x0c, 0x3e, 0x60, 0x39,
                                          0xa3, 0x3c, 0xe4, 0x59, 0x64, 0xff, 0x21, 0x67,
                                          0xf6, 0xec, 0xed, 0xd4, 0x19, 0xdb, 0x06, 0xc1};
    static const char msg[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    crypto_sha256(msg, sizeof msg - 1, out);
    assert_memory_equal(out, two, 32);
}

static void random_hex_is_hex_and_differs(void **state)
{
    char a[65], b[65];
    (void)state;
    assert_true(crypto_random_hex(a, 32));
    assert_true(crypto_random_hex(b, 32));
    assert_int_equal(strlen(a), 64);
    for (int i = 0; i < 64; i++)
        assert_true(isxdigit((unsigned char)a[i]) && !isupper((unsigned char)a[i]));
    assert_string_not_equal(a, b);
    assert_false(crypto_random_hex(a, 65)); /* more than the helper supports */
}

static void equal_compares_all_bytes(void **state)
{
    (void)state;
    assert_true(crypto_equal("abcd", "abcd", 4));
    assert_false(crypto_equal("abcd", "abce", 4));
    assert_false(crypto_equal("xbcd", "abcd", 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sha256_known_vectors),
        cmocka_unit_test(random_hex_is_hex_and_differs),
        cmocka_unit_test(equal_compares_all_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
