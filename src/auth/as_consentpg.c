/* as_consentpg.c — /authorize with STORE_URL: the consent shown is a row of hm_oauth_consent
 * (its page may be answered through any replica), its one-use CSRF token is spent by a
 * compare-and-set, wrong passphrases are counted in hm_oauth_counter (per address and in all,
 * per minute, so that N replicas do not give N times the guesses), the passphrase is read from
 * hm_secret at each consent, and the code is a row of hm_oauth_code. While the consent's
 * passphrase is checked, the consent is kept in this replica's table (the check's answer finds
 * it there, as without a store). */
#include "as_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "form.h"
#include "hex.h"
#include "httpd.h"
#include "log.h"
#include "mem.h"
#include "oauthpg.h"
#include "passphrase.h"
#include "ratelimit.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* A consent's row is found by its CSRF token's SHA-256 (hex): the store never holds a token
 * that could answer a consent. */
static void csrf_key(const char *csrf, char out[65])
{
    unsigned char h[32];
    crypto_sha256(csrf, strlen(csrf), h);
    hex_encode(h, sizeof h, out);
}

static char *consent_doc(const struct consent *c)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:I}", "client_id",
                          c->client_id, "client_name", c->client_name, "client_host",
                          c->client_host, "redirect_uri", c->redirect_uri, "state", c->state,
                          "challenge", c->challenge, "scope", c->scope, "redirect_sent",
                          c->redirect_sent, "addr", c->addr, "expires", (json_int_t)c->expires);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return text;
}

/* The field into out (size outsz); false when missing or too long. */
static bool field(json_t *o, const char *name, char *out, size_t outsz)
{
    const char *v = json_string_value(json_object_get(o, name));
    return v && strlen(v) < outsz && snprintf(out, outsz, "%s", v) >= 0;
}

static bool consent_read(const char *text, struct consent *c)
{
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    bool ok = field(o, "client_id", c->client_id, sizeof c->client_id) &&
              field(o, "client_name", c->client_name, sizeof c->client_name) &&
              field(o, "client_host", c->client_host, sizeof c->client_host) &&
              field(o, "redirect_uri", c->redirect_uri, sizeof c->redirect_uri) &&
              field(o, "state", c->state, sizeof c->state) &&
              field(o, "challenge", c->challenge, sizeof c->challenge) &&
              field(o, "scope", c->scope, sizeof c->scope) &&
              field(o, "addr", c->addr, sizeof c->addr) &&
              json_is_integer(json_object_get(o, "expires"));
    c->redirect_sent = json_is_true(json_object_get(o, "redirect_sent"));
    c->expires = (time_t)json_integer_value(json_object_get(o, "expires"));
    json_decref(o);
    return ok;
}

/* ---- GET /authorize: the consent stored, then its page ---- */

struct showing {
    struct authserver *as;
    struct consent c;
};

static void shown(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n, void *arg)
{
    struct showing *s = arg;
    struct authserver *as = s->as;
    if (r == NULL) {
    } else if (st != PGCONN_OK || n != 3) {
        as_store_page(as, r);
    } else if (PQntuples(res[1]) == 1) {
        as_consent_page(as, r, &s->c, NULL);
    } else if (strcmp(PQgetvalue(res[2], 0, 0), "t") != 0) {
        log_warn("oauth: consent refused: no consent passphrase is set (hermes-mcp oauth passwd)");
        as_error_page(r, 503, "No consent passphrase set",
                      "The owner has not set a consent passphrase, so no application can be "
                      "allowed yet. On the server, run: hermes-mcp oauth passwd");
    } else {
        bool full = strcmp(PQgetvalue(res[2], 0, 1), "t") == 0;
        log_warn("oauth: consent page refused to %s: %s", s->c.addr,
                 full ? "all consent slots are open" : "too many open from this address");
        hreq_add_header(r, "Retry-After", "60");
        as_error_page(r, full ? 503 : 429, full ? "Busy" : "Too many open requests",
                      full ? "Too many applications are waiting for the owner's answer; try "
                             "again in a few minutes."
                           : "Too many authorization requests from this address are waiting for "
                             "an answer; answer or close them, or try again in a few minutes.");
    }
    explicit_bzero(s, sizeof *s);
    free(s);
}

void as_pg_consent_show(struct authserver *as, struct hreq *r, const struct consent *c)
{
    struct showing *s = xcalloc(1, sizeof *s);
    char expires[24], key[65];
    s->as = as;
    s->c = *c;
    char *doc = consent_doc(c);
    csrf_key(c->csrf, key);
    snprintf(expires, sizeof expires, "%lld", (long long)c->expires);
    const char *put[6] = {key,     doc ? doc : "",         s->c.addr,
                          expires, STR(CONSENTS_PER_ADDR), STR(CONSENTS_MAX)};
    const char *why[1] = {STR(CONSENTS_MAX)};
    const char *lock[1] = {OAUTHPG_LOCK_CONSENTS};
    struct pgconn_query q[3] = {
        {"caps_lock", 1, lock}, {"consent_put", 6, put}, {"consent_why", 1, why}};
    oauthpg_call(as->pg, r, q, 3, shown, s);
    free(doc);
}

/* ---- POST /authorize ---- */

struct answering {
    struct authserver *as;
    struct checking *hold; /* counted as a check running from the address until answered */
    char ip[64], key[80], window[24], old[65], fresh[65], csrf[65]; /* old, fresh: csrf_key */
    bool deny;
    uint64_t now_ms;
};

static void too_many(struct hreq *r, bool everyone)
{
    char retry[16];
    snprintf(retry, sizeof retry, "%u", (unsigned)(60 - time(NULL) % 60));
    hreq_add_header(r, "Retry-After", retry);
    as_error_page(r, 429, "Too many attempts",
                  everyone ? "Too many wrong passphrases were tried this minute; wait a minute, "
                             "then try again."
                           : "Wait a minute, then try again.");
}

static void spent(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n, void *arg)
{
    struct answering *a = arg;
    struct authserver *as = a->as;
    struct consent got = {0};
    as_checking_release(as, a->hold);
    if (r == NULL)
        goto out;
    if (st != PGCONN_OK || n != 2 || PQntuples(res[1]) != 1) {
        as_store_page(as, r);
        goto out;
    }
    long long mine = atoll(PQgetvalue(res[1], 0, 0)), all = atoll(PQgetvalue(res[1], 0, 1));
    if (mine > CONSENT_FAILS_MAX || all > CONSENT_FAILS_GLOBAL) {
        too_many(r, mine <= CONSENT_FAILS_MAX);
        goto out;
    }
    if (PQgetisnull(res[1], 0, 2) || !consent_read(PQgetvalue(res[1], 0, 2), &got)) {
        if (!a->deny)
            as_pg_count_refund(as, a->ip); /* nothing is checked */
        as_error_page(r, 403, "Expired or forged request",
                      "This consent form is not one this server showed, or it has expired. "
                      "Start again from the application.");
        goto out;
    }
    if (a->deny) {
        as_pg_consent_drop(as, a->csrf);
        as_redirect_error(as, r, got.redirect_uri, got.state, OAUTH_ACCESS_DENIED, NULL);
        goto out;
    }
    /* Kept here while its passphrase is checked: the check's answer finds it by its token. */
    struct consent *c = NULL;
    time_t now = time(NULL);
    for (size_t i = 0; i < CONSENTS_MAX && c == NULL; i++)
        if (as->consents[i].expires <= now)
            c = &as->consents[i];
    if (c == NULL) {
        as_pg_count_refund(as, a->ip);
        hreq_add_header(r, "Retry-After", "1");
        as_error_page(r, 503, "Busy",
                      "Too many consents are being checked; try again in a moment.");
        goto out;
    }
    *c = got;
    snprintf(c->csrf, sizeof c->csrf, "%s", a->csrf);
    const char *line = PQntuples(res[0]) == 1 ? PQgetvalue(res[0], 0, 0) : NULL;
    if (line == NULL)
        log_warn("oauth: consent refused: no consent passphrase is set (hermes-mcp oauth passwd)");
    as_consent_verify(as, r, a->ip, a->csrf, line, a->now_ms);
out:
    explicit_bzero(&got, sizeof got);
    explicit_bzero(a, sizeof *a);
    free(a);
}

void as_pg_consent_post(struct authserver *as, struct hreq *r, const char *ip, const char *csrf,
                        bool deny, uint64_t now_ms)
{
    struct answering *a = xcalloc(1, sizeof *a);
    char addr[48];
    a->as = as;
    a->deny = deny;
    a->now_ms = now_ms;
    snprintf(a->ip, sizeof a->ip, "%s", ip);
    ratelimit_key(ip, addr, sizeof addr);
    snprintf(a->key, sizeof a->key, "consent:%s", addr);
    csrf_key(csrf, a->old);
    if (!crypto_random_hex(a->csrf, 32)) {
        free(a);
        as_error_page(r, 500, "Server error", "The random generator failed.");
        return;
    }
    csrf_key(a->csrf, a->fresh);
    snprintf(a->window, sizeof a->window, "%lld", (long long)(time(NULL) / 60));
    const char *secret[1] = {"passphrase"};
    const char *spend[7] = {a->old,
                            a->fresh,
                            a->key,
                            a->window,
                            STR(CONSENT_FAILS_MAX),
                            STR(CONSENT_FAILS_GLOBAL),
                            deny ? "0" : "1"};
    struct pgconn_query q[2] = {{"secret_get", 1, secret}, {"consent_spend", 7, spend}};
    a->hold = as_checking_hold(as, ip);
    oauthpg_call(as->pg, r, q, 2, spent, a);
}

void as_pg_count_refund(struct authserver *as, const char *ip)
{
    char addr[48], key[80], window[24];
    ratelimit_key(ip, addr, sizeof addr);
    snprintf(key, sizeof key, "consent:%s", addr);
    snprintf(window, sizeof window, "%lld", (long long)(time(NULL) / 60));
    const char *params[2] = {key, window};
    struct pgconn_query q[1] = {{"count_refund", 2, params}};
    oauthpg_send(as->pg, q, 1, NULL, NULL);
}

void as_pg_consent_drop(struct authserver *as, const char *csrf)
{
    char key[65];
    csrf_key(csrf, key);
    const char *params[1] = {key};
    struct pgconn_query q[1] = {{"consent_drop", 1, params}};
    oauthpg_send(as->pg, q, 1, NULL, NULL);
}

/* ---- the code ---- */

struct coding {
    struct authserver *as;
    char code[65], redirect_uri[PARAM_MAX + 1], state[PARAM_MAX + 1];
};

static void coded(struct hreq *r, enum pgconn_status st, PGresult *const *res, size_t n, void *arg)
{
    struct coding *k = arg;
    (void)res, (void)n;
    if (r && st != PGCONN_OK)
        as_store_page(k->as, r);
    else if (r)
        as_redirect_back(k->as, r, k->redirect_uri, k->state, "code", k->code, NULL, NULL);
    explicit_bzero(k, sizeof *k);
    free(k);
}

void as_pg_code_issue(struct authserver *as, struct hreq *r, struct consent *c, time_t now)
{
    struct coding *k = xcalloc(1, sizeof *k);
    unsigned char h[32];
    char hash[65], expires[24], csrf[65];
    k->as = as;
    if (!crypto_random_hex(k->code, 32)) {
        free(k);
        as_error_page(r, 500, "Server error", "The random generator failed.");
        return;
    }
    crypto_sha256(k->code, 64, h);
    hex_encode(h, sizeof h, hash);
    snprintf(k->redirect_uri, sizeof k->redirect_uri, "%s", c->redirect_uri);
    snprintf(k->state, sizeof k->state, "%s", c->state);
    csrf_key(c->csrf, csrf);
    snprintf(expires, sizeof expires, "%lld", (long long)(now + AUTHSERVER_CODE_TTL));
    json_t *o = json_pack("{s:s, s:s, s:b, s:s, s:s}", "client_id", c->client_id, "redirect_uri",
                          c->redirect_uri, "redirect_sent", c->redirect_sent, "challenge",
                          c->challenge, "scope", c->scope);
    char *doc = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    log_info("oauth: the owner allowed client %s (%s)", c->client_id, c->scope);
    c->expires = 0; /* one consent, one code */
    const char *put[3] = {hash, doc ? doc : "", expires}, *drop[1] = {csrf};
    struct pgconn_query q[2] = {{"code_put", 3, put}, {"consent_drop", 1, drop}};
    oauthpg_call(as->pg, r, q, 2, coded, k);
    free(doc);
}
