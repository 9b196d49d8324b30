/* Unit tests for authn.c: a bearer token to a principal (the owner's, an OAuth access token
 * only for this resource), and the challenges of a refusal. The hreq functions authn uses are
 * faked here: a request is its headers and query, and what authn answers is recorded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "authn.h"
#include "crypto.h"
#include "httpd.h"
#include "oauthtokens.h"
#include "principal.h"

struct hreq {
    const char *authorization, *query_token;
    char challenge[600], retry_after[8];
    unsigned status;
    char body[300];
    bool held;
};

const char *hreq_header(const struct hreq *r, const char *name)
{
    return strcasecmp(name, "Authorization") == 0 ? r->authorization : NULL;
}
const char *hreq_query(const struct hreq *r, const char *key)
{
    return strcmp(key, "access_token") == 0 ? r->query_token : NULL;
}
void hreq_add_header(struct hreq *r, const char *name, const char *value)
{
    if (strcasecmp(name, "WWW-Authenticate") == 0)
        snprintf(r->challenge, sizeof r->challenge, "%s", value);
    if (strcasecmp(name, "Retry-After") == 0)
        snprintf(r->retry_after, sizeof r->retry_after, "%s", value);
}
void hreq_hold(struct hreq *r)
{
    r->held = true;
}
void hreq_release(struct hreq *r)
{
    r->held = false;
}
void hreq_on_abort(struct hreq *r, httpd_cb *cb, void *arg)
{
    (void)r, (void)cb, (void)arg;
}
void hreq_reply(struct hreq *r, unsigned status, const char *ct, const char *body, size_t len)
{
    (void)ct;
    r->status = status;
    snprintf(r->body, sizeof r->body, "%.*s", (int)len, body);
}

#define OWNER "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ISSUER "https://mcp.example"

static struct principals *owner_only(void)
{
    unsigned char hash[32];
    char err[200];
    crypto_sha256(OWNER, strlen(OWNER), hash);
    struct principals *p = principals_load(hash, NULL, err, sizeof err);
    assert_non_null(p);
    return p;
}

static void test_off_and_owner(void **state)
{
    struct authn_who w = {0};
    (void)state;
    struct authn *off = authn_new(&(struct authn_opts){.required = false}, owner_only());
    struct hreq r = {0};
    assert_int_equal(authn_request(off, &r, &w), AUTHN_OK);
    assert_null(w.who); /* authentication off: nobody */
    authn_free(off);

    struct authn *a = authn_new(&(struct authn_opts){.required = true}, owner_only());
    assert_int_equal(authn_request(a, &r, &w), AUTHN_NO_TOKEN);
    r.authorization = "Bearer " OWNER;
    assert_int_equal(authn_request(a, &r, &w), AUTHN_OK);
    assert_non_null(w.who);
    assert_true(w.who->all);
    assert_string_equal(authn_caller(&w), w.who->name);
    authn_who_cleanup(&w);
    r.authorization = "Bearer 00";
    assert_int_equal(authn_request(a, &r, &w), AUTHN_BAD_TOKEN); /* no token store */
    authn_free(a);
}

/* An access token counts only when issued for this resource (RFC 8707 audience); its caller is
 * its client plus a digest of its authorization. */
static void test_oauth_audience(void **state)
{
    char dir[] = "/tmp/hm-authn-XXXXXX", path[64], err[200], mine[65], other[65];
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/tokens", dir);
    struct tokenstore *ts = tokenstore_open(path, err, sizeof err);
    assert_non_null(ts);
    time_t later = time(NULL) + 3600;
    struct token_grant g = {.kind = TOKEN_ACCESS,
                            .client_id = "cli",
                            .scope = "hermes:read",
                            .resource = ISSUER "/mcp",
                            .family = "fam",
                            .expires = later};
    assert_true(tokenstore_issue(ts, &g, mine, err, sizeof err));
    g.resource = "https://other/mcp"; /* another server's token */
    g.family = NULL;
    assert_true(tokenstore_issue(ts, &g, other, err, sizeof err));
    struct authn *a = authn_new(
        &(struct authn_opts){
            .required = true, .issuer = ISSUER, .tokens = ts, .resource = ISSUER "/mcp"},
        owner_only());
    char bearer[80];
    struct hreq r = {.authorization = bearer};
    struct authn_who w = {0};
    snprintf(bearer, sizeof bearer, "Bearer %s", other);
    assert_int_equal(authn_request(a, &r, &w), AUTHN_BAD_TOKEN);
    snprintf(bearer, sizeof bearer, "Bearer %s", mine);
    assert_int_equal(authn_request(a, &r, &w), AUTHN_OK);
    assert_non_null(w.grant);
    assert_string_equal(w.client_id, "cli");
    assert_true(principal_has_scope(w.who, "hermes:read"));
    assert_false(principal_has_scope(w.who, "hermes:admin"));
    char prefix[80];
    snprintf(prefix, sizeof prefix, "%s/", w.who->name);
    assert_int_equal(strncmp(authn_caller(&w), prefix, strlen(prefix)), 0);
    assert_int_equal(strlen(authn_caller(&w)), strlen(prefix) + 16);
    authn_who_cleanup(&w);
    authn_free(a);
    tokenstore_free(ts);
    unlink(path);
    rmdir(dir);
}

static void test_challenges(void **state)
{
    (void)state;
    struct authn *plain = authn_new(&(struct authn_opts){.required = true}, owner_only());
    struct hreq r = {0};
    authn_deny(plain, &r, AUTHN_NO_TOKEN, NULL);
    assert_int_equal(r.status, 401);
    assert_string_equal(r.challenge, "Bearer realm=\"hermes-mcp\"");
    r.query_token = "x"; /* without OAuth a query token is not ours to refuse */
    assert_false(authn_refuse_query_token(plain, &r));
    authn_free(plain);

    struct authn *a = authn_new(
        &(struct authn_opts){.required = true,
                             .issuer = ISSUER,
                             .metadata_url = ISSUER "/.well-known/oauth-protected-resource/mcp"},
        owner_only());
    struct hreq e = {0};
    authn_deny(a, &e, AUTHN_EXPIRED, NULL);
    assert_int_equal(e.status, 401);
    assert_non_null(strstr(e.body, "expired"));
    assert_string_equal(e.challenge, "Bearer realm=\"hermes-mcp\", error=\"invalid_token\", "
                                     "scope=\"" AUTHN_DEFAULT_SCOPES "\", "
                                     "resource_metadata=\"" ISSUER
                                     "/.well-known/oauth-protected-resource/mcp\", "
                                     "error_description=\"the token has expired\"");
    struct hreq q = {.query_token = "abc"};
    assert_true(authn_refuse_query_token(a, &q));
    assert_int_equal(q.status, 400);
    assert_non_null(strstr(q.challenge, "error=\"invalid_request\""));
    /* An identity provider that does not answer: not the client's fault, so no challenge. */
    struct hreq u = {0};
    authn_deny(a, &u, AUTHN_UNAVAILABLE, NULL);
    assert_int_equal(u.status, 503);
    assert_string_equal(u.retry_after, "5");
    assert_string_equal(u.challenge, "");
    assert_non_null(strstr(u.body, "auth_unavailable"));
    authn_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_and_owner),
        cmocka_unit_test(test_oauth_audience),
        cmocka_unit_test(test_challenges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
