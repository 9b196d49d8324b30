/* Unit tests for client ID metadata documents without the network: which URLs may be a
 * client_id, what a document must hold (clientdoc.c), how long its Cache-Control lets it be
 * kept, and which addresses the fetcher (cimd.c) refuses to connect to. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "authserver.h"
#include "cimd.h"
#include "clientdoc.h"

#define URL "https://app.example/oauth/client.json"

static void client_id_urls(void **state)
{
    (void)state;
    static const char *const good[] = {URL, "https://app.example:8443/c", "https://[2001:db8::1]/c",
                                       "https://app.example/c?v=1"};
    static const char *const bad[] = {
        "http://app.example/c",         "https://app.example",
        "https://app.example/",         "https://app.example/?q",
        "https://u:p@app.example/c",    "https://app.example/c#f",
        "https://app.example/a/../c",   "https://app.example/./c",
        "https://app.example/a b",      "https:///c",
        "https://app.example:x/c",      "https://[::1/c",
        "https://app.example/\xc3\xa9", "HTTPS://app.example/c",
        "https://app\\.example/c",      "https://app.example:1234567/c"};
    const char *why;
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(clientdoc_url_ok(good[i], &why));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_false(clientdoc_url_ok(bad[i], &why));
        assert_non_null(why);
    }
    char host[256];
    assert_true(clientdoc_url_host("https://[2001:db8::1]:8443/c", host, sizeof host));
    assert_string_equal(host, "2001:db8::1");
    assert_true(clientdoc_url_host(URL, host, sizeof host));
    assert_string_equal(host, "app.example");
    assert_true(clientdoc_is_url("http://x/") && clientdoc_is_url(URL));
    assert_false(clientdoc_is_url("0123456789abcdef0123456789abcdef"));
}

static bool parse(const char *text, struct clientdoc *d, char *err, size_t errlen)
{
    return clientdoc_parse(URL, text, strlen(text), authserver_redirect_ok_in, NULL, d, err,
                           errlen);
}

static void documents(void **state)
{
    (void)state;
    struct clientdoc d;
    char err[300];
    assert_true(parse("{\"client_id\":\"" URL "\",\"client_name\":\"App\",\"redirect_uris\":"
                      "[\"https://app.example/cb\",\"claude://cb\"],"
                      "\"token_endpoint_auth_method\":\"none\",\"grant_types\":"
                      "[\"authorization_code\",\"refresh_token\"],\"response_types\":[\"code\"]}",
                      &d, err, sizeof err));
    assert_string_equal(d.name, "App");
    assert_string_equal(d.host, "app.example");
    assert_int_equal(d.nredirects, 2);
    assert_string_equal(d.redirects[1], "claude://cb");
    clientdoc_clear(&d);
    /* No name: the host stands for it. */
    assert_true(parse("{\"client_id\":\"" URL "\",\"redirect_uris\":[\"https://a.example/\"]}", &d,
                      err, sizeof err));
    assert_string_equal(d.name, "app.example");
    clientdoc_clear(&d);
    static const struct {
        const char *doc, *reason;
    } bad[] = {
        {"[1]", "not a JSON object"},
        {"{\"client_id\":", "not valid JSON"},
        {"{\"client_id\":\"https://app.example/other\",\"redirect_uris\":[\"https://a/\"]}",
         "is not the URL"},
        {"{\"client_id\":\"" URL "\",\"client_id\":\"" URL "\",\"redirect_uris\":[\"https://a/\"]}",
         "not valid JSON"}, /* duplicate keys */
        {"{\"client_id\":\"" URL "\"}", "redirect_uris"},
        {"{\"client_id\":\"" URL "\",\"redirect_uris\":[]}", "redirect_uris"},
        {"{\"client_id\":\"" URL "\",\"redirect_uris\":[\"javascript:alert(1)\"]}", "redirect URI"},
        {"{\"client_id\":\"" URL "\",\"redirect_uris\":[\"http://evil.example/\"]}",
         "redirect URI"},
        {"{\"client_id\":\"" URL "\",\"redirect_uris\":[\"https://a/\"],"
         "\"token_endpoint_auth_method\":\"private_key_jwt\"}",
         "private_key_jwt is not supported"},
        {"{\"client_id\":\"" URL "\",\"redirect_uris\":[\"https://a/\"],"
         "\"token_endpoint_auth_method\":\"client_secret_post\"}",
         "must be none"},
        {"{\"client_id\":\"" URL "\",\"redirect_uris\":[\"https://a/\"],\"client_secret\":\"s\"}",
         "client_secret"},
        {"{\"client_id\":\"" URL "\",\"redirect_uris\":[\"https://a/\"],\"grant_types\":"
         "[\"client_credentials\"]}",
         "grant_types"},
        {"{\"client_id\":\"" URL "\",\"redirect_uris\":[\"https://a/\"],\"client_name\":\"a\\nb\"}",
         "client_name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_false(parse(bad[i].doc, &d, err, sizeof err));
        if (strstr(err, bad[i].reason) == NULL)
            fail_msg("case %zu: %s", i, err);
        assert_null(d.name);
    }
    /* Over the cap: refused before it is read. */
    char big[CLIENTDOC_BYTES_MAX + 2];
    memset(big, ' ', sizeof big);
    assert_false(clientdoc_parse(URL, big, sizeof big, authserver_redirect_ok_in, NULL, &d, err,
                                 sizeof err));
    assert_non_null(strstr(err, "larger"));
}

static void cache_ttl(void **state)
{
    (void)state;
    assert_int_equal(clientdoc_ttl(NULL), CLIENTDOC_TTL_DEFAULT);
    assert_int_equal(clientdoc_ttl("max-age=60"), 60);
    assert_int_equal(clientdoc_ttl("public, max-age=120"), 120);
    assert_int_equal(clientdoc_ttl("max-age=99999999999999999999"), CLIENTDOC_TTL_MAX);
    assert_int_equal(clientdoc_ttl("no-store"), 0);
    assert_int_equal(clientdoc_ttl("max-age=60, No-Cache"), 0);
    assert_int_equal(clientdoc_ttl("max-age="), CLIENTDOC_TTL_DEFAULT);
}

static bool public4(const char *a)
{
    struct sockaddr_in s = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, a, &s.sin_addr), 1);
    return cimd_addr_public((struct sockaddr *)&s);
}

static bool public6(const char *a)
{
    struct sockaddr_in6 s = {.sin6_family = AF_INET6};
    assert_int_equal(inet_pton(AF_INET6, a, &s.sin6_addr), 1);
    return cimd_addr_public((struct sockaddr *)&s);
}

static void addresses(void **state)
{
    (void)state;
    static const char *const private4[] = {
        "127.0.0.1",       "127.9.9.9",       "10.0.0.1",   "172.16.0.1", "172.31.255.255",
        "192.168.1.1",     "169.254.169.254", "100.64.0.1", "0.0.0.0",    "224.0.0.1",
        "255.255.255.255", "198.18.0.1",      "192.0.0.8"};
    static const char *const public4s[] = {"8.8.8.8",   "172.32.0.1", "100.128.0.1",
                                           "192.0.2.1", "1.1.1.1",    "172.15.0.1"};
    for (size_t i = 0; i < sizeof private4 / sizeof *private4; i++)
        assert_false(public4(private4[i]));
    for (size_t i = 0; i < sizeof public4s / sizeof *public4s; i++)
        assert_true(public4(public4s[i]));
    static const char *const private6[] = {
        "::1",        "::",      "fc00::1",          "fd12:3456::1",    "fe80::1",
        "fec0::1",    "ff02::1", "::ffff:127.0.0.1", "::ffff:10.1.2.3", "64:ff9b::a9fe:a9fe",
        "::127.0.0.1"};
    for (size_t i = 0; i < sizeof private6 / sizeof *private6; i++)
        assert_false(public6(private6[i]));
    assert_true(public6("2606:4700::1111"));
    assert_true(public6("::ffff:8.8.8.8"));
    assert_true(public6("64:ff9b::808:808"));
    struct sockaddr other = {.sa_family = AF_UNIX};
    assert_false(cimd_addr_public(&other));

    assert_true(cimd_host_listed("localhost", "localhost"));
    assert_true(cimd_host_listed("Docs.Internal", "a.example, docs.internal"));
    assert_false(cimd_host_listed("docs.internal.evil", "docs.internal"));
    assert_false(cimd_host_listed("internal", "docs.internal"));
    assert_false(cimd_host_listed("localhost", NULL));
    assert_false(cimd_host_listed("localhost", ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(client_id_urls),
        cmocka_unit_test(documents),
        cmocka_unit_test(cache_ttl),
        cmocka_unit_test(addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
