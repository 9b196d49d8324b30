/* Unit tests for the pieces of the OAuth authorization server that need no HTTP: the consent
 * passphrase (scrypt hash, verification, its file: atomic, mode 600, refused when readable by
 * others or not ours), the form decoder (escapes, duplicates, caps), which redirect URIs a
 * client may register and how one sent to /authorize matches it, and which token endpoint
 * methods a registration may ask for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "authserver.h"
#include "clientmeta.h"
#include "form.h"
#include "oautherr.h"
#include "passphrase.h"

static void passphrase_round_trip(void **state)
{
    (void)state;
    char line[PASSPHRASE_LINE_MAX], other[PASSPHRASE_LINE_MAX];
    const char *pass = "correct horse battery staple";
    assert_true(passphrase_hash(pass, strlen(pass), line));
    assert_int_equal(strncmp(line, "scrypt$15$8$1$", 14), 0);
    assert_null(strstr(line, "horse"));
    assert_true(passphrase_verify(line, pass, strlen(pass)));
    assert_false(passphrase_verify(line, "correct horse battery stapl", 27));
    assert_false(passphrase_verify(line, "", 0));
    /* A fresh salt each time. */
    assert_true(passphrase_hash(pass, strlen(pass), other));
    assert_string_not_equal(line, other);
    /* Tampered parameters (a cost the attacker picks) or a cut hash are refused. */
    char bad[PASSPHRASE_LINE_MAX];
    snprintf(bad, sizeof bad, "scrypt$20%s", line + 9);
    assert_false(passphrase_verify(bad, pass, strlen(pass)));
    snprintf(bad, sizeof bad, "%.*s", (int)strlen(line) - 2, line);
    assert_false(passphrase_verify(bad, pass, strlen(pass)));
    assert_false(passphrase_verify("plain", pass, strlen(pass)));
}

static void passphrase_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/hm-pass-XXXXXX", line[PASSPHRASE_LINE_MAX], got[PASSPHRASE_LINE_MAX];
    char err[400];
    struct stat st;
    assert_non_null(mkdtemp(dir));
    char envfile[300];
    snprintf(envfile, sizeof envfile, "%s/env", dir);
    char *path = passphrase_path_beside(envfile);
    assert_non_null(strstr(path, "/oauth-passphrase"));
    assert_false(passphrase_load(path, got, err, sizeof err));
    assert_non_null(strstr(err, "hermes-mcp oauth passwd"));
    assert_true(passphrase_hash("twelve chars!", 13, line));
    assert_true(passphrase_save(path, line, err, sizeof err));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_true(passphrase_load(path, got, err, sizeof err));
    assert_string_equal(got, line);
    chmod(path, 0644);
    assert_false(passphrase_load(path, got, err, sizeof err));
    assert_non_null(strstr(err, "chmod 600"));
    unlink(path);
    free(path);
    rmdir(dir);
}

static void form_fields(void **state)
{
    (void)state;
    char out[32];
    const char *f = "a=1&code=x%2By+z&empty=&flag&dup=1&dup=2&bad=%zz&ctl=%0a&long=0123456789";
    assert_int_equal(form_get(f, strlen(f), "code", out, sizeof out), FORM_OK);
    assert_string_equal(out, "x+y z");
    assert_int_equal(form_get(f, strlen(f), "empty", out, sizeof out), FORM_OK);
    assert_string_equal(out, "");
    assert_int_equal(form_get(f, strlen(f), "flag", out, sizeof out), FORM_OK);
    assert_int_equal(form_get(f, strlen(f), "missing", out, sizeof out), FORM_ABSENT);
    assert_int_equal(form_get(f, strlen(f), "dup", out, sizeof out), FORM_BAD);
    assert_string_equal(out, "");
    assert_int_equal(form_get(f, strlen(f), "bad", out, sizeof out), FORM_BAD);
    assert_int_equal(form_get(f, strlen(f), "ctl", out, sizeof out), FORM_BAD);
    assert_int_equal(form_get(f, strlen(f), "long", out, 8), FORM_BAD);
    assert_int_equal(form_get(f, strlen(f), "long", out, 11), FORM_OK);
    /* The length is the caller's: nothing past it is read. */
    assert_int_equal(form_get("code=abc", 6, "code", out, sizeof out), FORM_OK);
    assert_string_equal(out, "a");
    assert_int_equal(form_get("code=%4", 7, "code", out, sizeof out), FORM_BAD);
}

static void redirect_uris(void **state)
{
    (void)state;
    static const char *const good[] = {"https://claude.ai/api/mcp/auth_callback",
                                       "http://127.0.0.1:7777/cb",
                                       "http://localhost/cb",
                                       "http://[::1]:9/cb",
                                       "claude://callback",
                                       "cursor://x"};
    static const char *const bad[] = {"javascript:alert(1)",
                                      "data:text/html,x",
                                      "http://evil.example/cb",
                                      "https://a@evil.example/",
                                      "https://ok.example/#f",
                                      "http://127.0.0.1.evil.example/",
                                      "http://localhost@evil.example/",
                                      "https:///nohost",
                                      "ftp://x/",
                                      "",
                                      "https://ok.example/a b"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(authserver_redirect_ok(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(authserver_redirect_ok(bad[i]));
    /* OAUTH_ALLOWED_REDIRECT_SCHEMES: the listed schemes replace the app defaults, whole names
     * only; https and http on loopback stay. */
    assert_true(authserver_redirect_ok_in("myapp://cb", "claude,myapp"));
    assert_true(authserver_redirect_ok_in("claude://cb", "claude,myapp"));
    assert_false(authserver_redirect_ok_in("cursor://cb", "claude,myapp"));
    assert_false(authserver_redirect_ok_in("myap://cb", "claude,myapp"));
    assert_false(authserver_redirect_ok_in("myappx://cb", "claude,myapp"));
    assert_true(authserver_redirect_ok_in("https://claude.ai/cb", "myapp"));
    assert_true(authserver_redirect_ok_in("http://127.0.0.1:1/cb", "myapp"));
    assert_false(authserver_redirect_ok_in("javascript:alert(1)", "myapp"));
}

/* A registration body's token_endpoint_auth_method: absent or none is a public client,
 * client_secret_post and client_secret_basic confidential ones (issued a secret); any other
 * method, or a value that is not a string, is invalid_client_metadata with a reason. */
static void registration_methods(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        bool ok;
        enum clientmeta_auth auth;
    } cases[] = {
        {"{\"redirect_uris\":[\"https://claude.ai/api/mcp/auth_callback\"]}", true,
         CLIENTMETA_AUTH_NONE},
        {"{\"redirect_uris\":[\"https://a.example/cb\"],\"token_endpoint_auth_method\":\"none\"}",
         true, CLIENTMETA_AUTH_NONE},
        {"{\"redirect_uris\":[\"https://claude.ai/api/mcp/"
         "auth_callback\"],\"token_endpoint_auth_method\":"
         "\"client_secret_post\",\"grant_types\":[\"authorization_code\",\"refresh_token\"],"
         "\"response_types\":[\"code\"],\"client_name\":\"Claude\"}",
         true, CLIENTMETA_AUTH_POST},
        {"{\"redirect_uris\":[\"https://a.example/cb\"],\"token_endpoint_auth_method\":"
         "\"client_secret_basic\"}",
         true, CLIENTMETA_AUTH_BASIC},
        {"{\"redirect_uris\":[\"https://a.example/cb\"],\"token_endpoint_auth_method\":"
         "\"private_key_jwt\"}",
         false, CLIENTMETA_AUTH_NONE},
        {"{\"redirect_uris\":[\"https://a.example/cb\"],\"token_endpoint_auth_method\":\"\"}",
         false, CLIENTMETA_AUTH_NONE},
        {"{\"redirect_uris\":[\"https://a.example/cb\"],\"token_endpoint_auth_method\":7}", false,
         CLIENTMETA_AUTH_NONE},
        {"{\"redirect_uris\":[\"https://a.example/cb\"],\"token_endpoint_auth_method\":"
         "\"CLIENT_SECRET_POST\"}",
         false, CLIENTMETA_AUTH_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *doc = json_loads(cases[i].body, 0, NULL);
        enum oauth_err code = OAUTH_INVALID_CLIENT_METADATA;
        enum clientmeta_auth auth = CLIENTMETA_AUTH_POST;
        const char *why = clientmeta_check_registration(doc, NULL, &code, &auth);
        if (cases[i].ok) {
            assert_null(why);
            assert_int_equal(auth, cases[i].auth);
        } else {
            assert_non_null(why);
            assert_non_null(strstr(why, "token_endpoint_auth_method"));
            assert_int_equal(code, OAUTH_INVALID_CLIENT_METADATA);
        }
        json_decref(doc);
    }
    enum clientmeta_auth a;
    for (int m = CLIENTMETA_AUTH_NONE; m <= CLIENTMETA_AUTH_BASIC; m++) {
        assert_true(clientmeta_auth_parse(clientmeta_auth_name((enum clientmeta_auth)m), &a));
        assert_int_equal(a, m);
    }
    assert_false(clientmeta_auth_parse("client_secret_jwt", &a));
}

/* A redirect URI at /authorize matches the registered one exactly, but for the port of an
 * http://127.0.0.1, http://[::1] or http://localhost URI (RFC 8252 7.3, 8.3); never another
 * host, path or query. */
static void redirect_matching(void **state)
{
    (void)state;
    static const char *const same[][2] = {
        {"https://claude.ai/api/mcp/auth_callback", "https://claude.ai/api/mcp/auth_callback"},
        {"http://127.0.0.1:33418/", "http://127.0.0.1:59656/"},
        {"http://127.0.0.1/", "http://127.0.0.1:59656/"},
        {"http://127.0.0.1:7777/cb?x=1", "http://127.0.0.1:1/cb?x=1"},
        {"http://[::1]:9/cb", "http://[::1]:65535/cb"},
        {"http://127.0.0.1", "http://127.0.0.1:80"},
        {"http://localhost:3335/oauth/callback", "http://localhost:3336/oauth/callback"},
        {"http://localhost/cb", "http://localhost:6274/cb"},
    };
    static const char *const other[][2] = {
        {"http://localhost:3000/cb", "http://localhost:3001/cb/"},
        {"http://localhost:3000/cb", "http://localhost.evil.example:3000/cb"},
        {"http://localhost:3000/cb", "http://localhost:3000@evil.example/cb"},
        {"http://localhost:3000/cb", "http://127.0.0.1:3000/cb"},
        {"http://127.0.0.1:3000/cb", "http://localhost:3000/cb"},
        {"https://localhost:3000/cb", "https://localhost:3001/cb"},
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1:7777/cb/"},
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1:7778/other"},
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1.evil.example:7777/cb"},
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1:7777@evil.example/cb"},
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1:/cb"},
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1:123456/cb"},
        /* a port is 1 to 65535, written without leading zeros */
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1:0/cb"},
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1:65536/cb"},
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1:99999/cb"},
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1:07777/cb"},
        {"http://127.0.0.1:7777/cb", "http://127.0.0.1:00080/cb"},
        {"http://127.0.0.1:0/cb", "http://127.0.0.1:7777/cb"},
        {"http://[::1]:7777/cb", "http://[::1]:65536/cb"},
        {"http://127.0.0.1:7777/cb", "http://[::1]:7777/cb"},
        {"https://a.example:8443/cb", "https://a.example:9443/cb"},
        {"cursor://anysphere.cursor-mcp/oauth/callback",
         "cursor://anysphere.cursor-mcp/oauth/callbac"},
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++)
        assert_true(clientmeta_redirect_matches(same[i][0], same[i][1]));
    for (size_t i = 0; i < sizeof other / sizeof *other; i++)
        assert_false(clientmeta_redirect_matches(other[i][0], other[i][1]));
}

/* The OAuth error table: every code has its RFC name, one name per code, and what it means. */
static void oauth_error_table(void **state)
{
    (void)state;
    for (int e = 0; e < OAUTH_ERR_COUNT; e++) {
        const struct oauth_err_info *i = oauth_err_info((enum oauth_err)e);
        assert_non_null(i);
        assert_non_null(i->name);
        assert_non_null(i->rfc);
        assert_non_null(i->meaning);
        assert_int_equal(strspn(i->name, "abcdefghijklmnopqrstuvwxyz_"), strlen(i->name));
        for (int o = 0; o < e; o++)
            assert_string_not_equal(oauth_err_name((enum oauth_err)o), i->name);
    }
    assert_string_equal(oauth_err_name(OAUTH_INVALID_GRANT), "invalid_grant");
    assert_string_equal(oauth_err_name(OAUTH_INVALID_REDIRECT_URI), "invalid_redirect_uri");
    assert_null(oauth_err_info(OAUTH_ERR_COUNT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(passphrase_round_trip), cmocka_unit_test(oauth_error_table),
        cmocka_unit_test(passphrase_file),       cmocka_unit_test(form_fields),
        cmocka_unit_test(redirect_uris),         cmocka_unit_test(registration_methods),
        cmocka_unit_test(redirect_matching),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
