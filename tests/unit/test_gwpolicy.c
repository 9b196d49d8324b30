/* test_gwpolicy.c — gw_policy_summary: the one line `gateway check` prints per guarded or
 * policed tool names the guard and every policy with its fields, and stays within its buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gwpolicy.h"

static void summary_names_guard_and_each_policy(void **state)
{
    (void)state;
    char out[300];
    json_t *p = json_loads("{\"drop\": [\"model\", \"provider\"], \"fix\": {\"deliver\": \"local\"},"
                           " \"enum\": {\"kind\": [\"a\"]}, \"max_items\": {\"tasks\": 2},"
                           " \"max_length\": {\"note\": 5}, \"reject_secrets\": [\"content\"]}",
                           0, NULL);
    assert_non_null(p);
    gw_policy_summary(GW_GUARD_CONFIRM, p, out, sizeof out);
    assert_string_equal(out, "confirm; drop model, provider; fix deliver; enum kind; "
                             "max_items tasks 2; max_length note 5; reject_secrets content");
    gw_policy_summary(GW_GUARD_APPROVE, NULL, out, sizeof out);
    assert_string_equal(out, "approve");
    gw_policy_summary(GW_GUARD_NONE, NULL, out, sizeof out);
    assert_string_equal(out, "");
    char small[12];
    gw_policy_summary(GW_GUARD_CONFIRM, p, small, sizeof small);
    assert_string_equal(small, "confirm; dr");
    json_decref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(summary_names_guard_and_each_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
