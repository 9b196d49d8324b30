/* Unit tests for weburl.c: https to any host, http only to loopback; user info, fragments,
 * white space and bad ports refused; paths and queries as the flags say. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "weburl.h"

static void loopback_hosts(void **state)
{
    (void)state;
    assert_true(weburl_loopback_host("localhost"));
    assert_true(weburl_loopback_host("127.0.0.1"));
    assert_true(weburl_loopback_host("127.0.0.2"));
    assert_true(weburl_loopback_host("::1"));
    assert_false(weburl_loopback_host("10.0.0.1"));
    assert_false(weburl_loopback_host("128.0.0.1"));
    assert_false(weburl_loopback_host("localhost.example"));
    assert_false(weburl_loopback_host("[::1]"));
}

static void the_rule(void **state)
{
    (void)state;
    static const char *const good[] = {
        "https://idp.example",     "https://idp.example/",      "https://idp.example:8443/t/v2",
        "http://127.0.0.1:9000/x", "http://localhost/realms/r", "http://[::1]:80/",
        "https://[2001:db8::1]/a",
    };
    static const char *const bad[] = {
        "ftp://idp.example",
        "http://idp.example/",
        "http://10.0.0.1/",
        "https://",
        "https:///x",
        "https://u:p@idp.example/",
        "https://idp.example/#f",
        "https://idp.example/a b",
        "https://idp.example:0/",
        "https://idp.example:65536",
        "https://idp.example:x/",
        "https://idp.example\"/",
        "https://[::1/",
        "http://localhost.evil.example/",
        "https://idp.example?q=1",
        "HTTPS://idp.example",
        "https://[]",
        "https://[a]:1/x",
        "http://[localhost]/",
        "http://[127.0.0.1]:8080/",
        "https://idp\x7f.example/",
        "https://idp\x01.example/",
        "https://idp.example/\xc3\xa9",
        "https://idp.example:080000/",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        if (!weburl_ok(good[i], 0))
            fail_msg("refused: %s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (weburl_ok(bad[i], 0))
            fail_msg("accepted: %s", bad[i]);
}

static void flags(void **state)
{
    (void)state;
    assert_true(weburl_ok("https://idp.example/", WEBURL_ROOT_ONLY));
    assert_true(weburl_ok("http://127.0.0.1:8080", WEBURL_ROOT_ONLY));
    assert_false(weburl_ok("https://idp.example/mcp", WEBURL_ROOT_ONLY));
    assert_false(weburl_ok("https://login.example/t/keys?appid=1", 0));
    assert_true(weburl_ok("https://login.example/t/keys?appid=1", WEBURL_QUERY_OK));
    assert_false(weburl_ok("https://login.example/t/keys?appid=1#x", WEBURL_QUERY_OK));
    assert_true(weburl_is_https("https://x"));
    assert_false(weburl_is_https("http://x"));
    /* what a document may point us to */
    const char *remote = "https://idp.example/tenant", *local = "http://127.0.0.1:9000/realm";
    assert_true(weburl_pointed_ok("https://keys.example/jwks?appid=1", remote, WEBURL_QUERY_OK));
    assert_false(weburl_pointed_ok("https://127.0.0.1:8443/keys", remote, 0));
    assert_false(weburl_pointed_ok("https://localhost/keys", remote, 0));
    assert_false(weburl_pointed_ok("https://[::1]/keys", remote, 0));
    assert_false(weburl_pointed_ok("http://127.0.0.1/keys", remote, 0));
    assert_true(weburl_pointed_ok("http://127.0.0.1:9000/keys", local, 0));
    assert_true(weburl_pointed_ok("https://keys.example/jwks", local, 0));
    assert_false(weburl_pointed_ok("https://keys.example/jwks?x", remote, 0));
    char host[64];
    assert_true(weburl_host("https://[::1]:8443/x", host, sizeof host));
    assert_string_equal(host, "::1");
    assert_true(weburl_host("http://127.0.0.1/keys", host, sizeof host));
    assert_string_equal(host, "127.0.0.1");
    assert_false(weburl_host("ftp://x/", host, sizeof host));
    assert_false(weburl_host("https://a-long-host.example/", host, 8));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loopback_hosts),
        cmocka_unit_test(the_rule),
        cmocka_unit_test(flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
