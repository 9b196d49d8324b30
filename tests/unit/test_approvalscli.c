/* Unit tests for approvalscli.c: what the operator reads cannot be rewritten by the request it
 * describes (controls, format characters, invisible code points and bytes that are not UTF-8 come
 * out escaped). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "approvalscli.h"

static void check(const char *in, bool keep_newlines, const char *want)
{
    char *got = approvalscli_printable(in, keep_newlines);
    assert_string_equal(got, want);
    free(got);
}

static void controls_and_bidi_overrides_are_escaped(void **state)
{
    (void)state;
    check("write_file", false, "write_file");
    check("caf\xc3\xa9 \xe2\x80\x94 ok", false, "caf\xc3\xa9 \xe2\x80\x94 ok"); /* é, em dash */
    check("a\x1b[2Jb", false, "a\\x1b[2Jb");                                    /* ESC */
    check("a\x7f", false, "a\\x7f");
    check("x\xc2\x9b"
          "31m",
          false, "x\\u009B31m"); /* C1 CSI */
    check("rm \xe2\x80\xae"
          "txt.exe",
          false, "rm \\u202Etxt.exe"); /* RLO */
    check("\xe2\x80\xaa\xe2\x81\xa6\xe2\x81\xa9", false, "\\u202A\\u2066\\u2069");
    check("l1\nl2", false, "l1\\x0al2");
    check("l1\nl2", true, "l1\nl2");
    check("", false, "");
}

/* Every code point that draws nothing or rewrites what follows is escaped, one class
 * at a time: Cc, Cf (soft hyphen, Arabic letter mark, Mongolian vowel separator, zero-width and
 * direction marks, word joiner and invisible operators, BOM, interlinear annotations), Zl/Zp,
 * tags, variation selectors (both blocks); bytes that are not UTF-8 come out as \xNN. Visible
 * text, accents and emoji included, is kept. */
static void every_invisible_class_is_escaped(void **state)
{
    (void)state;
    check("a\xc2\xad"
          "b",
          false, "a\\u00ADb");                              /* soft hyphen */
    check("\xd8\x9c\xe1\xa0\x8e", false, "\\u061C\\u180E"); /* ALM, MVS */
    check("\xe2\x80\x8b\xe2\x80\x8c\xe2\x80\x8d\xe2\x80\x8e\xe2\x80\x8f", false,
          "\\u200B\\u200C\\u200D\\u200E\\u200F");
    check("\xe2\x81\xa0\xe2\x81\xa4\xe2\x81\xaf", false, "\\u2060\\u2064\\u206F");
    check("\xef\xbb\xbf"
          "x",
          false, "\\uFEFFx");                                          /* BOM / ZWNBSP */
    check("\xef\xbf\xb9\xef\xbf\xbb", false, "\\uFFF9\\uFFFB");        /* annotations */
    check("l1\xe2\x80\xa8l2\xe2\x80\xa9", true, "l1\\u2028l2\\u2029"); /* Zl, Zp */
    check("rm\xf3\xa0\x80\x81\xf3\xa0\x81\x81\xf3\xa0\x81\xbf", false,
          "rm\\U{E0001}\\U{E0041}\\U{E007F}");                  /* tags */
    check("\xef\xb8\x80\xef\xb8\x8f", false, "\\uFE00\\uFE0F"); /* VS1, VS16 */
    check("\xf3\xa0\x84\x80\xf3\xa0\x87\xaf", false, "\\U{E0100}\\U{E01EF}");
    check("\xe1\xa0\x8b\xe1\xa0\x8f", false, "\\u180B\\u180F"); /* Mongolian FVS */
    check("\xf0\x91\x82\xbd\xf0\x9d\x85\xb3", false, "\\U{110BD}\\U{1D173}");
    check("a\xff"
          "b\xe2\x80",
          false, "a\\xffb\\xe2\\x80");                                 /* not UTF-8 */
    check("\xc0\xaf\xed\xa0\x80", false, "\\xc0\\xaf\\xed\\xa0\\x80"); /* overlong, surrogate */
    check("caf\xc3\xa9 \xf0\x9f\x98\x80 \xe4\xb8\xad \xe2\x80\x94", false,
          "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe4\xb8\xad \xe2\x80\x94"); /* visible */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(controls_and_bidi_overrides_are_escaped),
        cmocka_unit_test(every_invisible_class_is_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
