/* Unit tests for approvalscli.c: what the operator reads cannot be rewritten by the request it
 * describes (terminal controls, C1 controls and bidi overrides come out escaped). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

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
    check("a\x1b[2Jb", false, "a\\x1b[2Jb");                                  /* ESC */
    check("a\x7f", false, "a\\x7f");
    check("x\xc2\x9b" "31m", false, "x\\u009B31m");                           /* C1 CSI */
    check("rm \xe2\x80\xae" "txt.exe", false, "rm \\u202Etxt.exe");           /* RLO */
    check("\xe2\x80\xaa\xe2\x81\xa6\xe2\x81\xa9", false, "\\u202A\\u2066\\u2069");
    check("l1\nl2", false, "l1\\x0al2");
    check("l1\nl2", true, "l1\nl2");
    check("", false, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(controls_and_bidi_overrides_are_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
