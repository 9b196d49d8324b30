/* Unit tests for hdr.c: list tokens, media types, host[:port], origins, bearer credentials. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hdr.h"

/* ---------- hdr_list_has ---------- */

static void list_finds_tokens(void **state)
{
    (void)state;
    const char *accept = "application/json, text/event-stream";
    assert_true(hdr_list_has(accept, "application/json"));               /* first */
    assert_true(hdr_list_has(accept, "text/event-stream"));              /* after ", " */
    assert_true(hdr_list_has("text/event-stream", "text/event-stream")); /* alone */
    assert_true(hdr_list_has("a,b,c", "c"));                             /* no spaces */
    assert_true(hdr_list_has(" ,\t, close \t", "close"));                /* empty members, blanks */
    assert_false(hdr_list_has(accept, "text/html"));
    assert_false(hdr_list_has("", "close"));
}

static void list_ignores_params_and_case(void **state)
{
    (void)state;
    assert_true(hdr_list_has("text/html;q=0.5, text/event-stream;q=0.9", "text/event-stream"));
    assert_true(hdr_list_has("text/event-stream ; q=0.9", "text/event-stream"));
    assert_true(hdr_list_has("Keep-Alive, UPGRADE", "upgrade"));
    assert_true(hdr_list_has("keep-alive", "Keep-Alive"));
    assert_true(hdr_list_has("APPLICATION/JSON;charset=utf-8", "application/json"));
}

static void list_matches_whole_tokens_only(void **state)
{
    (void)state;
    assert_false(hdr_list_has("text/event-streams", "text/event-stream")); /* longer */
    assert_false(hdr_list_has("application/jso", "application/json"));     /* shorter */
    assert_false(hdr_list_has("keep-alive", "alive"));                     /* inner part */
    assert_false(hdr_list_has("xclose, open", "close"));
    assert_false(hdr_list_has("text/html;x=close", "close")); /* a parameter, not a member */
    assert_false(hdr_list_has("text/html; close", "close"));
    assert_false(hdr_list_has("application/json x", "application/json"));
}

/* ---------- hdr_media_type_is ---------- */

static void media_type_with_parameters(void **state)
{
    (void)state;
    assert_true(hdr_media_type_is("application/json", "application/json"));
    assert_true(hdr_media_type_is("application/json; charset=utf-8", "application/json"));
    assert_true(hdr_media_type_is("application/json;charset=UTF-8", "application/json"));
    assert_true(hdr_media_type_is("Application/JSON ; charset=utf-8", "application/json"));
    assert_true(hdr_media_type_is(" \tapplication/json \t", "application/json"));
}

static void media_type_mismatches(void **state)
{
    (void)state;
    assert_false(hdr_media_type_is("application/jsonp", "application/json"));
    assert_false(hdr_media_type_is("application/json-seq", "application/json"));
    assert_false(hdr_media_type_is("application/jso", "application/json"));
    assert_false(hdr_media_type_is("text/plain", "application/json"));
    assert_false(hdr_media_type_is("text/plain; x=application/json", "application/json"));
    assert_false(hdr_media_type_is("application/json, text/html", "application/json"));
    assert_false(hdr_media_type_is("application/json x", "application/json"));
    assert_false(hdr_media_type_is("", "application/json"));
}

/* ---------- hdr_split_hostport ---------- */

/* Splits s and checks host (as an offset into s), its length and the port. */
static void hostport_is(const char *s, size_t host_off, size_t hlen, long port)
{
    const char *h = NULL;
    size_t n = 12345;
    long p = -7;
    assert_true(hdr_split_hostport(s, &h, &n, &p));
    assert_ptr_equal(h, s + host_off);
    assert_int_equal(n, hlen);
    assert_int_equal(p, port);
}

static void hostport_bad(const char *s)
{
    const char *h = NULL;
    size_t n = 0;
    long p = -7;
    if (hdr_split_hostport(s, &h, &n, &p))
        fail_msg("hdr_split_hostport accepted \"%s\"", s);
}

static void hostport_valid_forms(void **state)
{
    (void)state;
    hostport_is("localhost", 0, 9, -1);
    hostport_is("127.0.0.1:8765", 0, 9, 8765);
    hostport_is("mcp.example.com:443", 0, 15, 443);
    hostport_is("my_host-1.local", 0, 15, -1);
    hostport_is("h:0", 0, 1, 0);
    hostport_is("h:65535", 0, 1, 65535);
    hostport_is("h:00080", 0, 1, 80); /* five digits, leading zeros */
    hostport_is("[::1]:8080", 1, 3, 8080);
    hostport_is("[::1]", 1, 3, -1);
    hostport_is("[2001:DB8::a:1]:443", 1, 13, 443);
    hostport_is("[::ffff:127.0.0.1]:1", 1, 16, 1);
}

static void hostport_bad_ports(void **state)
{
    (void)state;
    hostport_bad("example.com:-1");
    hostport_bad("example.com:65536");
    hostport_bad("example.com:99999");
    hostport_bad("example.com:abc");
    hostport_bad("example.com:80a");
    hostport_bad("example.com:");       /* empty after the colon */
    hostport_bad("example.com:000080"); /* six digits */
    hostport_bad("example.com:100000");
    hostport_bad("example.com:+80");
    hostport_bad("example.com: 80");
    hostport_bad("example.com:80 ");
    hostport_bad("example.com:80:81");
    hostport_bad("[::1]:");
    hostport_bad("[::1]:65536");
    hostport_bad("[::1]:x");
}

static void hostport_bad_hosts(void **state)
{
    (void)state;
    hostport_bad("");
    hostport_bad(":80"); /* empty host */
    hostport_bad("[]");
    hostport_bad("[]:80");
    hostport_bad("[::1");   /* no "]" */
    hostport_bad("[::1]x"); /* junk after "]" */
    hostport_bad("[::1]8080");
    hostport_bad("[::1]]");
    hostport_bad("[::1] ");
    hostport_bad("[::g]"); /* not hex */
    hostport_bad("[::1%eth0]");
    hostport_bad("[a b]");
    hostport_bad("::1"); /* a bare v6 address is a bad host:port */
    hostport_bad("ex ample.com");
    hostport_bad(" example.com");
    hostport_bad("example.com ");
    hostport_bad("a/b");
    hostport_bad("example.com/");
    hostport_bad("user@example.com");
    hostport_bad("user@example.com:80");
    hostport_bad("a\tb");
    hostport_bad("a\rb");
    hostport_bad("a\nb");
    hostport_bad("a\x01"
                 "b");
    hostport_bad("a\x1f"
                 "b");
    hostport_bad("a\x7f"
                 "b");
    hostport_bad("caf\xc3\xa9.example"); /* non-ASCII */
    hostport_bad("a%2fb");
    hostport_bad("a\\b");
}

/* ---------- hdr_split_origin ---------- */

static void origin_is(const char *s, size_t host_off, size_t hlen, long port)
{
    const char *h = NULL;
    size_t n = 12345;
    long p = -7;
    assert_true(hdr_split_origin(s, &h, &n, &p));
    assert_ptr_equal(h, s + host_off);
    assert_int_equal(n, hlen);
    assert_int_equal(p, port);
}

static void origin_bad(const char *s)
{
    const char *h = NULL;
    size_t n = 0;
    long p = -7;
    if (hdr_split_origin(s, &h, &n, &p))
        fail_msg("hdr_split_origin accepted \"%s\"", s);
}

static void origin_valid_forms(void **state)
{
    (void)state;
    origin_is("http://localhost:8765", 7, 9, 8765);
    origin_is("http://127.0.0.1", 7, 9, -1);
    origin_is("https://mcp.example.com", 8, 15, -1);
    origin_is("https://mcp.example.com/", 8, 15, -1); /* trailing slash */
    origin_is("https://mcp.example.com:8443/", 8, 15, 8443);
    origin_is("http://[::1]:8080", 8, 3, 8080);
    origin_is("http://[::1]/", 8, 3, -1);
    origin_is("HTTPS://Example.COM", 8, 11, -1); /* scheme case-insensitive */
    origin_is("Http://localhost:80", 7, 9, 80);
}

static void origin_refused(void **state)
{
    (void)state;
    origin_bad("null");
    origin_bad("file://");
    origin_bad("file:///etc/passwd");
    origin_bad("ftp://example.com");
    origin_bad("chrome-extension://abcdef");
    origin_bad("localhost:8765"); /* missing scheme */
    origin_bad("//localhost");
    origin_bad("http:/localhost");
    origin_bad("http//localhost");
    origin_bad("");
    origin_bad("http://");
    origin_bad("http:///");
    origin_bad("https://");
    origin_bad("http://localhost//"); /* only one trailing slash */
    origin_bad("http://localhost/path");
    origin_bad("http://user@localhost");
    origin_bad("http://localhost:65536");
    origin_bad("http://localhost:");
    origin_bad("http://[::1]x");
    origin_bad("http://local host");
    origin_bad(" http://localhost");
}

/* ---------- hdr_bearer ---------- */

static void bearer_parses_credentials(void **state)
{
    (void)state;
    const char *v = "Bearer 0123abcd";
    assert_ptr_equal(hdr_bearer(v), v + 7);
    assert_string_equal(hdr_bearer("bearer tok"), "tok");
    assert_string_equal(hdr_bearer("BEARER tok"), "tok");
    assert_string_equal(hdr_bearer("bEaReR tok"), "tok");
    const char *spaced = "Bearer    tok";
    assert_ptr_equal(hdr_bearer(spaced), spaced + 10); /* extra spaces skipped */
    assert_string_equal(hdr_bearer("Bearer a.b-c_d~e+f/g="), "a.b-c_d~e+f/g=");
}

static void bearer_refuses_others(void **state)
{
    (void)state;
    assert_null(hdr_bearer(NULL));
    assert_null(hdr_bearer(""));
    assert_null(hdr_bearer("Bearer"));
    assert_null(hdr_bearer("Bearer "));     /* empty token */
    assert_null(hdr_bearer("Bearer     ")); /* only spaces */
    assert_null(hdr_bearer("Bearertok"));
    assert_null(hdr_bearer("Bearer\ttok")); /* scheme and token are separated by SP */
    assert_null(hdr_bearer("Basic dXNlcjpwYXNz"));
    assert_null(hdr_bearer("Bear tok"));
    assert_null(hdr_bearer("Token tok"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(list_finds_tokens),
        cmocka_unit_test(list_ignores_params_and_case),
        cmocka_unit_test(list_matches_whole_tokens_only),
        cmocka_unit_test(media_type_with_parameters),
        cmocka_unit_test(media_type_mismatches),
        cmocka_unit_test(hostport_valid_forms),
        cmocka_unit_test(hostport_bad_ports),
        cmocka_unit_test(hostport_bad_hosts),
        cmocka_unit_test(origin_valid_forms),
        cmocka_unit_test(origin_refused),
        cmocka_unit_test(bearer_parses_credentials),
        cmocka_unit_test(bearer_refuses_others),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
