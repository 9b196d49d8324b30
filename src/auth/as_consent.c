/* as_consent.c — POST /authorize: the owner's answer. Same origin, a one-use CSRF token, the
 * passphrase checked off the loop (verifier.h) under per-address and global limits on wrong
 * guesses; then the code (60 s, single use) and the redirect back. */
#include "as_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "form.h"
#include "httpd.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "passphrase.h"
#include "ratelimit.h"
#include "verifier.h"

static struct code *new_code(struct authserver *as, time_t now)
{
    struct code *slot = &as->codes[0];
    for (size_t i = 0; i < CODES_MAX; i++) {
        if (as->codes[i].expires <= now)
            return &as->codes[i];
        if (as->codes[i].expires < slot->expires)
            slot = &as->codes[i];
    }
    return slot;
}

/* The failures of ip's address in the minute from its first failure: a fresh (or the oldest)
 * slot when it has none. Only wrong passphrases count, so the owner approving several clients
 * in a row is never slowed, while guessing gets CONSENT_FAILS_MAX tries a minute. */
static struct failures *failures_of(struct authserver *as, const char *ip, uint64_t now_ms,
                                    bool create)
{
    char key[48];
    struct failures *slot = NULL;
    ratelimit_key(ip, key, sizeof key);
    for (size_t i = 0; i < FAIL_TABLE; i++) {
        struct failures *f = &as->fails[i];
        if (f->count && strcmp(f->key, key) == 0) {
            if (now_ms - f->since_ms >= 60000)
                f->count = 0, f->since_ms = now_ms;
            return f;
        }
        if (f->count == 0) { /* a free slot beats any taken one */
            if (slot == NULL || slot->count != 0)
                slot = f;
        } else if (slot == NULL || (slot->count != 0 && f->since_ms < slot->since_ms)) {
            slot = f;
        }
    }
    if (!create)
        return NULL;
    memset(slot, 0, sizeof *slot);
    snprintf(slot->key, sizeof slot->key, "%s", key);
    slot->since_ms = now_ms;
    return slot;
}

static bool same_origin(struct authserver *as, struct hreq *r)
{
    const char *origin = hreq_header(r, "Origin");
    /* Browsers send Origin on a form POST; "null" (a sandboxed frame, a data: page) and any
     * other site are a cross-site submission. A client without Origin is not a browser. */
    return origin == NULL || strcmp(origin, as->issuer) == 0;
}

static void expired_page(struct hreq *r)
{
    as_error_page(r, 403, "Expired or forged request",
                  "This consent form is not one this server showed, or it has expired. Start "
                  "again from the application.");
}

/* The wrong passphrases of the current minute, from every address: many addresses guessing a
 * few times each are stopped too (the owner waits a minute then, as a guesser does). */
static unsigned global_failures(struct authserver *as, uint64_t now_ms)
{
    if (now_ms - as->all_fails.since_ms >= 60000)
        as->all_fails.count = 0, as->all_fails.since_ms = now_ms;
    return as->all_fails.count;
}

static void count_wrong_passphrase(struct authserver *as, const char *ip, uint64_t now_ms)
{
    if (global_failures(as, now_ms) + 1 == CONSENT_FAILS_GLOBAL)
        log_warn("oauth: %d wrong consent passphrases this minute from all addresses; refusing "
                 "every consent until the minute is over",
                 CONSENT_FAILS_GLOBAL);
    as->all_fails.count++; /* with a store, its counters took the attempt before the check */
    struct failures *f = failures_of(as, ip, now_ms, true);
    if (++f->count == CONSENT_FAILS_MAX)
        log_warn("oauth: %d wrong consent passphrases from %s this minute; refusing more",
                 CONSENT_FAILS_MAX, ip);
    else
        log_warn("oauth: wrong consent passphrase from %s", ip);
}

/* After the passphrase check: the code and the redirect back, or the page again saying why
 * (with the consent's fresh CSRF token, the one csrf names: as_authorize_post spent the one the
 * form carried). The consent is looked up again by it: it may have expired meanwhile. */
static void consent_checked(struct authserver *as, struct hreq *r, const char *ip, const char *csrf,
                            bool ok, uint64_t now_ms)
{
    time_t now = time(NULL);
    struct consent *c = as_find_consent(as, csrf, now);
    if (!ok) {
        count_wrong_passphrase(as, ip, now_ms);
        if (c)
            as_consent_page(as, r, c, "Wrong passphrase.");
        else
            expired_page(r);
        return;
    }
    if (as->pg)
        as_pg_count_refund(as, ip); /* the right passphrase: its attempt is given back */
    if (c == NULL) {
        expired_page(r);
        return;
    }
    if (as->pg) {
        as_pg_code_issue(as, r, c, now);
        return;
    }
    char code[65];
    struct code *k = new_code(as, now);
    memset(k, 0, sizeof *k);
    if (!crypto_random_hex(code, 32)) {
        as_error_page(r, 500, "Server error", "The random generator failed.");
        return;
    }
    crypto_sha256(code, 64, k->hash);
    snprintf(k->client_id, sizeof k->client_id, "%s", c->client_id);
    snprintf(k->redirect_uri, sizeof k->redirect_uri, "%s", c->redirect_uri);
    k->redirect_sent = c->redirect_sent;
    snprintf(k->challenge, sizeof k->challenge, "%s", c->challenge);
    snprintf(k->scope, sizeof k->scope, "%s", c->scope);
    k->expires = now + AUTHSERVER_CODE_TTL;
    c->expires = 0; /* one consent, one code */
    log_info("oauth: the owner allowed client %s (%s)", k->client_id, k->scope);
    as_redirect_back(as, r, k->redirect_uri, c->state, "code", code, NULL, NULL);
    explicit_bzero(code, sizeof code);
}

/* Consent POSTs from ip's address whose passphrase is still being checked: each may turn out
 * wrong, so they count against CONSENT_FAILS_MAX before their answer is known. */
static unsigned checking_from(struct authserver *as, const char *key)
{
    unsigned n = 0;
    for (const struct checking *k = as->checking; k; k = k->next)
        n += strcmp(k->key, key) == 0;
    return n;
}

static unsigned checking_count(struct authserver *as)
{
    unsigned n = 0;
    for (const struct checking *k = as->checking; k; k = k->next)
        n++;
    return n;
}

static void checking_unlink(struct authserver *as, struct checking *k)
{
    for (struct checking **p = &as->checking; *p; p = &(*p)->next)
        if (*p == k) {
            *p = k->next;
            return;
        }
}

struct checking *as_checking_hold(struct authserver *as, const char *ip)
{
    struct checking *k = xcalloc(1, sizeof *k);
    k->as = as;
    snprintf(k->ip, sizeof k->ip, "%s", ip);
    ratelimit_key(ip, k->key, sizeof k->key);
    k->next = as->checking;
    as->checking = k;
    return k;
}

void as_checking_release(struct authserver *as, struct checking *k)
{
    if (k == NULL)
        return;
    checking_unlink(as, k);
    explicit_bzero(k, sizeof *k);
    free(k);
}

static void on_client_gone(struct hreq *r, void *arg)
{
    struct checking *k = arg;
    (void)r;
    k->r = NULL; /* the check runs on; its answer is dropped, a wrong guess still counts */
}

static void on_checked(void *ctx, enum verify_result result)
{
    struct checking *k = ctx;
    struct authserver *as = k->as;
    checking_unlink(as, k);
    if (result != VERIFY_CANCELLED && k->r) {
        consent_checked(as, k->r, k->ip, k->csrf, result == VERIFY_OK, loop_now(as->loop));
    } else {
        /* Nobody is left to see the consent's new token: it can never be answered. */
        struct consent *c = as_find_consent(as, k->csrf, time(NULL));
        if (c && as->pg)
            as_pg_consent_drop(as, c->csrf);
        if (c)
            c->expires = 0;
        if (result == VERIFY_WRONG)
            count_wrong_passphrase(as, k->ip, loop_now(as->loop));
    }
    explicit_bzero(k, sizeof *k);
    free(k);
}

/* Hands the passphrase to the worker; the request is answered from on_checked. False when the
 * worker cannot take it (as_authorize_post saw room in its queue, so its thread did not start):
 * the caller checks on the loop then, as without a worker. */
static bool check_later(struct authserver *as, struct hreq *r, const char *ip, const char *csrf,
                        const char *line, const char *pass)
{
    struct checking *k = xcalloc(1, sizeof *k);
    k->as = as;
    k->r = r;
    snprintf(k->ip, sizeof k->ip, "%s", ip);
    ratelimit_key(ip, k->key, sizeof k->key);
    snprintf(k->csrf, sizeof k->csrf, "%s", csrf);
    if (!verifier_submit(as->verifier, line, pass, strlen(pass), on_checked, k)) {
        explicit_bzero(k, sizeof *k);
        free(k);
        return false;
    }
    k->next = as->checking;
    as->checking = k;
    hreq_on_abort(r, on_client_gone, k);
    return true;
}

static void busy_page(struct hreq *r)
{
    hreq_add_header(r, "Retry-After", "1");
    as_error_page(r, 503, "Busy", "Too many consents are being checked; try again in a moment.");
}

void as_authorize_post(struct authserver *as, struct hreq *r, const char *ip, uint64_t now_ms)
{
    size_t len;
    const char *body = hreq_body(r, &len);
    char csrf[80], action[16], pass[PASSPHRASE_MAX + 1], line[PASSPHRASE_LINE_MAX], err[400];
    char key[48];
    if (strcmp(hreq_method(r), "POST") != 0) {
        as_authorize_fetch(as, r, ip); /* a GET the headers callback left: its client's document */
        return;
    }
    if (body == NULL)
        body = "", len = 0;
    if (!same_origin(as, r)) {
        as_error_page(r, 403, "Refused", "This form was sent from another site.");
        return;
    }
    struct failures *f = failures_of(as, ip, now_ms, false);
    ratelimit_key(ip, key, sizeof key);
    if ((f ? f->count : 0) + checking_from(as, key) >= CONSENT_FAILS_MAX) {
        char retry[16];
        snprintf(retry, sizeof retry, "%u",
                 f && f->count >= CONSENT_FAILS_MAX
                     ? (unsigned)((60000 - (now_ms - f->since_ms)) / 1000 + 1)
                     : 1u);
        hreq_add_header(r, "Retry-After", retry);
        as_error_page(r, 429, "Too many attempts", "Wait a minute, then try again.");
        return;
    }
    unsigned checking = checking_count(as);
    if (global_failures(as, now_ms) + checking >= CONSENT_FAILS_GLOBAL) {
        char retry[16];
        snprintf(retry, sizeof retry, "%u",
                 (unsigned)((60000 - (now_ms - as->all_fails.since_ms)) / 1000 + 1));
        hreq_add_header(r, "Retry-After", retry);
        as_error_page(r, 429, "Too many attempts",
                      "Too many wrong passphrases were tried this "
                      "minute; wait a minute, then try again.");
        return;
    }
    /* The last places in the verifier's queue are kept for an address with no failure and no
     * check running, so a few guessing addresses cannot keep the owner out with Busy. */
    if (checking >= VERIFIER_QUEUE_MAX - VERIFIER_KEEP_FREE &&
        ((f && f->count) || checking_from(as, key))) {
        busy_page(r);
        return;
    }
    if (as->pg) {
        bool no = form_get(body, len, "action", action, sizeof action) == FORM_OK &&
                  strcmp(action, "deny") == 0;
        if (form_get(body, len, "csrf", csrf, sizeof csrf) != FORM_OK || strlen(csrf) != 64)
            expired_page(r);
        else if (!no && as->verifier && verifier_pending(as->verifier) >= VERIFIER_QUEUE_MAX)
            busy_page(r);
        else
            as_pg_consent_post(as, r, ip, csrf, no, now_ms);
        return;
    }
    time_t now = time(NULL);
    struct consent *c = NULL;
    if (form_get(body, len, "csrf", csrf, sizeof csrf) == FORM_OK)
        c = as_find_consent(as, csrf, now);
    if (c == NULL) {
        expired_page(r);
        return;
    }
    bool deny = form_get(body, len, "action", action, sizeof action) == FORM_OK &&
                strcmp(action, "deny") == 0;
    /* A full queue is told before the token is spent, so "try again" with the same form works
     * and the consent does not sit dead in its address's and the table's places. */
    if (!deny && as->verifier && verifier_pending(as->verifier) >= VERIFIER_QUEUE_MAX) {
        busy_page(r);
        return;
    }
    /* One use: the token this POST carries is spent now, whatever the answer. The consent gets
     * a fresh one, known only here until a wrong passphrase shows the page again with it. */
    if (!crypto_random_hex(c->csrf, 32)) {
        c->expires = 0;
        as_error_page(r, 500, "Server error", "The random generator failed.");
        return;
    }
    snprintf(csrf, sizeof csrf, "%s", c->csrf);
    if (deny) {
        char uri[PARAM_MAX + 1], state[PARAM_MAX + 1];
        snprintf(uri, sizeof uri, "%s", c->redirect_uri);
        snprintf(state, sizeof state, "%s", c->state);
        c->expires = 0;
        as_redirect_error(as, r, uri, state, OAUTH_ACCESS_DENIED, NULL);
        return;
    }
    bool have = form_get(body, len, "passphrase", pass, sizeof pass) == FORM_OK &&
                passphrase_load(as->passphrase_path, line, err, sizeof err);
    if (!have || as->verifier == NULL || !check_later(as, r, ip, csrf, line, pass))
        consent_checked(as, r, ip, csrf, have && passphrase_verify(line, pass, strlen(pass)),
                        now_ms);
    explicit_bzero(pass, sizeof pass);
    explicit_bzero(line, sizeof line);
}

void as_consent_verify(struct authserver *as, struct hreq *r, const char *ip, const char *csrf,
                       const char *line, uint64_t now_ms)
{
    size_t len;
    const char *body = hreq_body(r, &len);
    char pass[PASSPHRASE_MAX + 1];
    bool have = line && body && form_get(body, len, "passphrase", pass, sizeof pass) == FORM_OK;
    if (!have || as->verifier == NULL) {
        consent_checked(as, r, ip, csrf, have && passphrase_verify(line, pass, strlen(pass)),
                        now_ms);
    } else if (!check_later(as, r, ip, csrf, line, pass)) {
        /* The queue filled while the store answered: busy, never scrypt on the loop. The
         * consent's token is spent already, so it goes, and its attempt is given back. */
        struct consent *c = as_find_consent(as, csrf, time(NULL));
        if (c) {
            as_pg_consent_drop(as, c->csrf);
            c->expires = 0;
        }
        as_pg_count_refund(as, ip);
        busy_page(r);
    }
    explicit_bzero(pass, sizeof pass);
}
