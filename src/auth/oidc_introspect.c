/* oidc_introspect.c — opaque access tokens asked of the provider (RFC 7662), one question per
 * token at a time, the answer remembered (oidc.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "buf.h"
#include "crypto.h"
#include "httpc.h"
#include "log.h"
#include "mem.h"
#include "oidc_internal.h"
#include "strmap.h"

#define ASKING_MAX 64       /* introspections under way at once */
#define ANSWER_MAX 65536    /* an introspection answer, bytes */
#define NO_EXP_TTL_S 60     /* an active answer without exp is remembered this long */
#define REFUSED_TTL_S 30    /* an inactive one */
#define UNAVAILABLE_TTL_S 5 /* an endpoint that did not answer is asked again after this */

struct introspection {
    struct oidc *o;
    char hash[65];
    struct httpc_req *req;
    struct list waiters;
};

/* application/x-www-form-urlencoded (RFC 6749 appendix B: the Basic credentials too). */
static void form_encode(struct buf *b, const char *s)
{
    static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
    for (; *s; s++) {
        if (strchr(safe, *s))
            buf_append(b, s, 1);
        else
            buf_printf(b, "%%%02X", (unsigned char)*s);
    }
}

static bool issuer_known(const struct oidc *o, const char *iss)
{
    for (size_t i = 0; i < o->niss; i++)
        if (strcmp(o->iss[i].url, iss) == 0)
            return true;
    return false;
}

/* A NumericDate claim as a time (any JSON number, clamped); absent: dflt. */
static time_t date_of(json_t *v, time_t dflt)
{
    if (!json_is_number(v))
        return dflt;
    double d = json_number_value(v);
    return d <= 0 ? 0 : d >= 1e11 ? (time_t)1e11 : (time_t)d;
}

/* The answer's verdict: the claims to remember (a new reference) or NULL, refused. */
static json_t *judge(struct oidc *o, json_t *doc, time_t now)
{
    json_t *exp = json_object_get(doc, "exp"), *nbf = json_object_get(doc, "nbf");
    json_t *iss = json_object_get(doc, "iss");
    const char *type = json_string_value(json_object_get(doc, "token_type"));
    if (!json_is_true(json_object_get(doc, "active")))
        return NULL;
    if ((exp && (!json_is_number(exp) || date_of(exp, 0) <= now)) ||
        (nbf && (!json_is_number(nbf) || date_of(nbf, 0) > now + (time_t)o->skew_s)))
        return NULL;
    /* A refresh token a provider says is active is still no access token (Keycloak names
     * its types; RFC 7662 suggests the token_type_hint values or Bearer). */
    if (type && strcasecmp(type, "access_token") != 0 && strcasecmp(type, "Bearer") != 0 &&
        strcasecmp(type, "urn:ietf:params:oauth:token-type:access_token") != 0)
        return NULL;
    if (iss && (!json_is_string(iss) || !issuer_known(o, json_string_value(iss))))
        return NULL;
    /* RFC 7662 makes iss optional too; with several issuers it says whose the token is, which
     * names the principal and picks the tokens file's rules for it: required then. */
    if (iss == NULL && o->niss > 1)
        return NULL;
    /* RFC 7662 makes aud optional; we do not: a token for another resource must not pass. */
    if (!oidc_audience_ok(o, json_object_get(doc, "aud")))
        return NULL;
    return json_incref(doc);
}

static void on_answer(struct httpc_req *r, const struct httpc_result *res, void *arg)
{
    struct introspection *q = arg;
    struct oidc *o = q->o;
    time_t now = time(NULL);
    (void)r;
    q->req = NULL;
    strmap_del(o->asking, q->hash);
    json_t *doc = res->status == 200
                      ? json_loadb(res->body, res->body_len, JSON_REJECT_DUPLICATES, NULL)
                      : NULL;
    if (!json_is_object(doc)) {
        char status[32];
        snprintf(status, sizeof status, "HTTP %ld", res->status);
        log_event(EV_OIDC_FETCH_FAILED, /* issuer= names the endpoint asked */
                  LOG_FIELDS(LF_S("issuer", o->introspection_url), LF_S("what", "introspection"),
                             LF_S("reason", res->status ? status : res->reason)),
                  "oidc: the introspection endpoint gave no answer (%s)",
                  res->status   ? status
                  : res->reason ? res->reason
                                : "no answer");
        oidc_remember(o, q->hash, NULL, true, now + UNAVAILABLE_TTL_S);
    } else {
        json_t *claims = judge(o, doc, now);
        json_t *exp = json_object_get(doc, "exp");
        time_t until = claims ? date_of(exp, now + NO_EXP_TTL_S) : now + REFUSED_TTL_S;
        oidc_remember(o, q->hash, claims, false, until);
    }
    json_decref(doc);
    oidc_wake(o, &q->waiters);
    free(q);
}

static struct introspection *ask(struct oidc *o, const char *token, const char *hash)
{
    struct buf body, cred;
    buf_init(&body, 0);
    buf_init(&cred, 0);
    buf_printf(&body, "token=");
    form_encode(&body, token);
    buf_printf(&body, "&token_type_hint=access_token");
    form_encode(&cred, o->client_id ? o->client_id : "");
    buf_append(&cred, ":", 1);
    form_encode(&cred, o->client_secret ? o->client_secret : "");
    char *b64 = xmalloc(4 * (cred.len + 2) / 3 + 8);
    crypto_b64_encode(false, cred.data, cred.len, b64);
    char *auth = xasprintf("Authorization: Basic %s", b64);
    const char *headers[] = {"Content-Type: application/x-www-form-urlencoded",
                             "Accept: application/json", auth};
    struct introspection *q = xcalloc(1, sizeof *q);
    q->o = o;
    snprintf(q->hash, sizeof q->hash, "%s", hash);
    list_init(&q->waiters);
    q->req = httpc_request(o->http, &(struct httpc_opts){.method = "POST",
                                                         .url = o->introspection_url,
                                                         .headers = headers,
                                                         .nheaders = o->client_id ? 3 : 2,
                                                         .body = body.data,
                                                         .body_len = body.len,
                                                         .deadline_ms = OIDC_FETCH_MS,
                                                         .max_response = ANSWER_MAX,
                                                         .on_done = on_answer,
                                                         .arg = q,
                                                         .user_agent = "hermes-mcp"});
    explicit_bzero(cred.data, cred.len); /* our copies of the secret and the token (httpc wipes
                                            its own) */
    explicit_bzero(body.data, body.len);
    buf_cleanup(&cred);
    buf_cleanup(&body);
    wipe_free(b64);
    wipe_free(auth);
    if (q->req == NULL) {
        free(q);
        return NULL;
    }
    strmap_put(o->asking, q->hash, q);
    return q;
}

json_t *oidc_introspect(struct oidc *o, const char *token, const char *hash, struct oidc_wait *w,
                        enum oidc_verdict *v, const char **why)
{
    if (o->introspection_url == NULL) {
        *v = OIDC_INVALID;
        *why = "not a JWT, and no introspection endpoint is set";
        return NULL;
    }
    struct introspection *q = strmap_get(o->asking, hash);
    if (q == NULL && strmap_count(o->asking) < ASKING_MAX)
        q = ask(o, token, hash);
    if (q == NULL || !oidc_wait_on(o, &q->waiters, w)) {
        *v = OIDC_UNAVAILABLE;
        *why = "too many introspections under way";
        return NULL;
    }
    *v = OIDC_WAIT;
    return NULL;
}

static void stop_one(const char *key, void *value, void *arg)
{
    struct introspection *q = value;
    (void)key, (void)arg;
    httpc_cancel(q->req);
    while (!list_empty(&q->waiters)) {
        struct oidc_wait *w = list_entry(list_first(&q->waiters), struct oidc_wait, link);
        list_unlink(&w->link);
        free(w);
    }
    free(q);
}

void oidc_introspect_stop(struct oidc *o)
{
    strmap_each(o->asking, stop_one, NULL);
}
