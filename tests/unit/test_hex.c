/* Unit tests for hex.c: the encoder against known digests, the decoder's strictness, and the
 * round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "crypto.h"
#include "hex.h"

static void encodes_lowercase(void **state)
{
    (void)state;
    const unsigned char raw[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xcd, 0xef, 0xff};
    char out[2 * sizeof raw + 1];
    memset(out, 'x', sizeof out);
    hex_encode(raw, sizeof raw, out);
    assert_string_equal(out, "00017f80abcdefff");

    char empty[1] = {'x'};
    hex_encode(raw, 0, empty);
    assert_string_equal(empty, "");
}

static void encodes_a_digest(void **state)
{
    (void)state;
    unsigned char d[32];
    char out[65];
    crypto_sha256("abc", 3, d);
    hex_encode(d, sizeof d, out);
    assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void writes_no_more_than_asked(void **state)
{
    (void)state;
    const unsigned char raw[] = {0x12, 0x34, 0x56};
    char out[8] = "zzzzzzz";
    hex_encode(raw, 2, out);
    assert_string_equal(out, "1234");
    assert_int_equal(out[5], 'z');
}

static void decodes_either_case(void **state)
{
    (void)state;
    unsigned char out[4];
    assert_true(hex_decode("00aBcDfF", out, sizeof out));
    assert_memory_equal(out, "\x00\xab\xcd\xff", 4);
}

static void decoder_is_strict(void **state)
{
    (void)state;
    unsigned char out[4];
    assert_false(hex_decode("00abcdf", out, sizeof out));   /* one digit short */
    assert_false(hex_decode("00abcdff0", out, sizeof out)); /* one too many */
    assert_false(hex_decode("00abcdfg", out, sizeof out));  /* not a digit */
    assert_false(hex_decode("00ab cdf", out, sizeof out));  /* white space */
    assert_false(hex_decode("", out, sizeof out));
    assert_true(hex_decode("", out, 0));
}

static void round_trips(void **state)
{
    (void)state;
    unsigned char raw[256], back[256];
    char text[513];
    for (int i = 0; i < 256; i++)
        raw[i] = (unsigned char)i;
    hex_encode(raw, sizeof raw, text);
    assert_int_equal(strlen(text), 512);
    assert_true(hex_decode(text, back, sizeof back));
    assert_memory_equal(raw, back, sizeof raw);
    for (int c = 0; c < 256; c++) {
        int v = hex_digit((char)c);
        if (strchr("0123456789abcdefABCDEF", c) && c != 0)
            assert_true(v >= 0 && v < 16);
        else
            assert_int_equal(v, -1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(encodes_lowercase),         cmocka_unit_test(encodes_a_digest),
        cmocka_unit_test(writes_no_more_than_asked), cmocka_unit_test(decodes_either_case),
        cmocka_unit_test(decoder_is_strict),         cmocka_unit_test(round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
