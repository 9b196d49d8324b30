/* Unit tests for report.c: the secrets a report knows of never reach a printed line, in any
 * letter case, cut or not; control characters become '?'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report.h"

static void test_scrub(void **state)
{
    struct report r;
    (void)state;
    report_init(&r, "[secret]", 6);
    report_secret(&r, "abcdef0123");
    report_secret(&r, "short"); /* below min_len: ordinary words stay */
    report_secret(&r, "KEY-XYZ-9");
    report_secret(&r, NULL);
    const char line[] = "token ABCDEF0123 and key-xyz-9\tand short\n";
    char *out = report_scrub(&r, line, strlen(line));
    assert_string_equal(out, "token [secret] and [secret]?and short?");
    free(out);
    out = report_scrub(&r, "", 0);
    assert_string_equal(out, "");
    free(out);
    report_cleanup(&r);
    assert_int_equal(r.nsecrets, 0);
}

static void test_clean_cuts_after_scrubbing(void **state)
{
    struct report r;
    char out[12];
    (void)state;
    report_init(&r, "[redacted]", 1);
    report_secret(&r, "0123456789abcdef");
    /* Cut at 11 bytes, a raw copy would keep "x 012345678", a piece of the secret. */
    report_clean(&r, "x 0123456789ABCDEF y", 20, out, sizeof out);
    assert_string_equal(out, "x [redacted");
    assert_null(strstr(out, "0123"));
    report_cleanup(&r);
}

/* One secret a prefix of another, or overlapping the next: no byte of either survives, in
 * whichever order they were registered. */
static void test_overlapping_secrets(void **state)
{
    struct report r;
    (void)state;
    report_init(&r, "[secret]", 6);
    report_secret(&r, "abcdef");
    report_secret(&r, "abcdefghij");
    report_secret(&r, "XYZ123");
    report_secret(&r, "123QRSTU");
    const char line[] = "a abcdefghij b xyz123qrstu c abcdef.";
    char *out = report_scrub(&r, line, strlen(line));
    assert_string_equal(out, "a [secret] b [secret] c [secret].");
    assert_null(strstr(out, "ghij"));
    assert_null(strstr(out, "QRSTU"));
    assert_null(strstr(out, "qrstu"));
    free(out);
    report_cleanup(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scrub),
        cmocka_unit_test(test_clean_cuts_after_scrubbing),
        cmocka_unit_test(test_overlapping_secrets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
