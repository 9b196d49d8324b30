/* oidc_keys.c — each issuer's metadata and key set, fetched in the background (oidc.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "httpc.h"
#include "jwt.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "oidc_internal.h"
#include "weburl.h"

#define METADATA_MAX 65536
#define KEYS_TTL_MIN_S 60    /* a key set is kept at least this long, whatever Cache-Control */
#define KEYS_TTL_MAX_S 86400 /* and refreshed at least daily */
#define KEYS_TTL_DEFAULT_S 3600
#define RETRY_MAX_MS 60000

static void fetch_keys(struct issuer *is);

bool oidc_wait_on(struct oidc *o, struct list *list, struct oidc_wait *w)
{
    if (o->nwaiting >= OIDC_WAITERS_MAX)
        return false;
    o->nwaiting++;
    list_push_back(list, &w->link);
    return true;
}

void oidc_wake(struct oidc *o, struct list *list)
{
    while (!list_empty(list)) {
        struct oidc_wait *w = list_entry(list_first(list), struct oidc_wait, link);
        list_unlink(&w->link);
        o->nwaiting--;
        if (w->count)
            --*w->count;
        oidc_ready_cb *ready = w->ready;
        void *arg = w->arg;
        free(w);
        ready(arg);
    }
}

/* A document an issuer points to: https, or http to a loopback host when the issuer itself is
 * one (tests, a provider beside us); and a remote provider's metadata cannot point our fetches
 * at this machine (a loopback host, by name or address). */
static bool url_ok(const char *u, const char *issuer)
{
    return weburl_pointed_ok(u, issuer, WEBURL_QUERY_OK);
}

static void failed(struct issuer *is, const char *what, const char *reason)
{
    uint64_t now = loop_now(is->o->loop);
    is->failures++;
    is->fetched_ms = now; /* the requests it woke must not refetch at once */
    log_event(EV_OIDC_FETCH_FAILED,
              LOG_FIELDS(LF_S("issuer", is->url), LF_S("what", what), LF_S("reason", reason)),
              "oidc: %s of %s could not be fetched: %s", what, is->url, reason);
    if (is->keys) { /* keep using what we have; try again a little later */
        is->state = ISSUER_READY;
        is->keys_until_ms = now + KEYS_TTL_MIN_S * 1000ull;
    } else {
        is->rfc8414 = false; /* the next try starts with OpenID discovery again */
        unsigned shift = is->failures < 7 ? is->failures : 7;
        uint64_t backoff = 500ull << shift;
        is->state = ISSUER_IDLE;
        is->retry_ms = now + (backoff < RETRY_MAX_MS ? backoff : RETRY_MAX_MS);
    }
    oidc_wake(is->o, &is->waiters);
}

/* Why a fetch gave nothing usable, naming no secret. */
static const char *fetch_error(const struct httpc_result *res, char *buf, size_t len)
{
    if (res->status == 0)
        return res->reason ? res->reason : "no answer";
    if (res->too_big)
        return "the answer is too large";
    snprintf(buf, len, "HTTP %ld", res->status);
    return buf;
}

char *oidc_discovery_url(const char *issuer, bool rfc8414)
{
    size_t len = strlen(issuer);
    if (len && issuer[len - 1] == '/')
        len--;
    if (!rfc8414)
        return xasprintf("%.*s/.well-known/openid-configuration", (int)len, issuer);
    const char *host = strstr(issuer, "://");
    host = host ? host + 3 : issuer;
    const char *path = host + strcspn(host, "/");
    size_t origin = (size_t)(path - issuer);
    return xasprintf("%.*s/.well-known/oauth-authorization-server%.*s", (int)origin, issuer,
                     (int)(len > origin ? len - origin : 0), path);
}

static char *discovery_url(const struct issuer *is)
{
    return oidc_discovery_url(is->url, is->rfc8414);
}

static void fetch_metadata(struct issuer *is);

static void on_metadata(struct httpc_req *r, const struct httpc_result *res, void *arg)
{
    struct issuer *is = arg;
    char buf[64];
    (void)r;
    is->req = NULL;
    if (res->status != 200) {
        if (!is->rfc8414 && res->status >= 400 && res->status < 500) {
            is->rfc8414 = true;
            fetch_metadata(is);
            return;
        }
        failed(is, "metadata", fetch_error(res, buf, sizeof buf));
        return;
    }
    json_t *doc = json_loadb(res->body, res->body_len, JSON_REJECT_DUPLICATES, NULL);
    const char *iss = json_string_value(json_object_get(doc, "issuer"));
    const char *jwks = json_string_value(json_object_get(doc, "jwks_uri"));
    const char *why = NULL;
    if (!json_is_object(doc))
        why = "the metadata is not a JSON object";
    else if (iss == NULL || strcmp(iss, is->url) != 0)
        why = "the metadata names another issuer"; /* RFC 8414 section 3.3: mix-up defence */
    else if (jwks == NULL || !url_ok(jwks, is->url))
        why = "no https jwks_uri in the metadata";
    if (why) {
        json_decref(doc);
        failed(is, "metadata", why);
        return;
    }
    free(is->jwks_uri);
    is->jwks_uri = xstrdup(jwks);
    json_decref(doc);
    fetch_keys(is);
}

static void fetch_metadata(struct issuer *is)
{
    static const char *const accept[] = {"Accept: application/json"};
    char *url = discovery_url(is);
    is->state = ISSUER_METADATA;
    is->req = httpc_request(is->o->http, &(struct httpc_opts){.method = "GET",
                                                              .url = url,
                                                              .headers = accept,
                                                              .nheaders = 1,
                                                              .deadline_ms = OIDC_FETCH_MS,
                                                              .max_response = METADATA_MAX,
                                                              .on_done = on_metadata,
                                                              .arg = is,
                                                              .user_agent = "hermes-mcp"});
    free(url);
    if (is->req == NULL)
        failed(is, "metadata", "the request could not be set up");
}

/* Cache-Control: max-age=N (no-store and no-cache: as short as we allow). */
static void on_keys_header(struct httpc_req *r, const char *line, void *arg)
{
    struct issuer *is = arg;
    (void)r;
    if (strncasecmp(line, "cache-control:", 14) != 0)
        return;
    for (const char *p = line + 14; *p; p++) {
        if (strncasecmp(p, "max-age=", 8) == 0 && isdigit((unsigned char)p[8])) {
            unsigned long s = strtoul(p + 8, NULL, 10);
            is->max_age_s = s;
        } else if (strncasecmp(p, "no-store", 8) == 0 || strncasecmp(p, "no-cache", 8) == 0) {
            is->max_age_s = 0;
        }
    }
}

static void on_keys(struct httpc_req *r, const struct httpc_result *res, void *arg)
{
    struct issuer *is = arg;
    char buf[JWT_KID_MAX];
    (void)r;
    is->req = NULL;
    if (res->status != 200) {
        failed(is, "keys", fetch_error(res, buf, sizeof buf));
        return;
    }
    struct jwks *set = jwks_parse(res->body, res->body_len, buf, sizeof buf);
    if (set == NULL || jwks_count(set) == 0) {
        jwks_unref(set);
        failed(is, "keys", set ? "no usable key in the key set" : buf);
        return;
    }
    uint64_t ttl = is->max_age_s;
    ttl = ttl < KEYS_TTL_MIN_S ? KEYS_TTL_MIN_S : ttl > KEYS_TTL_MAX_S ? KEYS_TTL_MAX_S : ttl;
    jwks_unref(is->keys);
    is->keys = set;
    is->state = ISSUER_READY;
    is->fetched_ms = loop_now(is->o->loop); /* the waiters it wakes must not refetch at once */
    is->failures = 0;
    is->keys_until_ms = loop_now(is->o->loop) + ttl * 1000;
    log_event(EV_OIDC_KEYS_LOADED,
              LOG_FIELDS(LF_S("issuer", is->url), LF_N("keys", (long long)jwks_count(set))),
              "oidc: %zu keys of %s", jwks_count(set), is->url);
    oidc_wake(is->o, &is->waiters);
}

static void fetch_keys(struct issuer *is)
{
    static const char *const accept[] = {"Accept: application/jwk-set+json, application/json"};
    if (is->state != ISSUER_READY)
        is->state = ISSUER_KEYS;
    is->fetched_ms = loop_now(is->o->loop);
    is->max_age_s = KEYS_TTL_DEFAULT_S; /* until a Cache-Control says otherwise */
    is->o->jwks_fetches++;
    is->req = httpc_request(is->o->http, &(struct httpc_opts){.method = "GET",
                                                              .url = is->jwks_uri,
                                                              .headers = accept,
                                                              .nheaders = 1,
                                                              .deadline_ms = OIDC_FETCH_MS,
                                                              .max_response = JWKS_MAX_LEN,
                                                              .on_header = on_keys_header,
                                                              .on_done = on_keys,
                                                              .arg = is,
                                                              .user_agent = "hermes-mcp"});
    if (is->req == NULL)
        failed(is, "keys", "the request could not be set up");
}

void oidc_issuer_start(struct issuer *is)
{
    if (is->req)
        return;
    if (is->jwks_uri)
        fetch_keys(is);
    else
        fetch_metadata(is);
}

void oidc_issuer_stop(struct issuer *is)
{
    httpc_cancel(is->req);
    is->req = NULL;
    while (!list_empty(&is->waiters)) { /* dropped without a call: the server is going */
        struct oidc_wait *w = list_entry(list_first(&is->waiters), struct oidc_wait, link);
        list_unlink(&w->link);
        free(w);
    }
    jwks_unref(is->keys);
    free(is->jwks_uri);
    free(is->url);
}

static struct jwks *wait_for(struct issuer *is, struct oidc_wait *w, enum oidc_verdict *v)
{
    /* Each issuer may hold a share of the waits: a hanging one leaves room for the others. */
    bool room = is->nwaiters < OIDC_WAITERS_MAX / 2 && oidc_wait_on(is->o, &is->waiters, w);
    if (room) {
        is->nwaiters++;
        w->count = &is->nwaiters;
    }
    *v = room ? OIDC_WAIT : OIDC_UNAVAILABLE;
    return NULL;
}

struct jwks *oidc_issuer_keys(struct issuer *is, bool refetch, struct oidc_wait *w,
                              enum oidc_verdict *v)
{
    uint64_t now = loop_now(is->o->loop);
    switch (is->state) {
    case ISSUER_IDLE:
        if (now < is->retry_ms) {
            *v = OIDC_UNAVAILABLE;
            return NULL;
        }
        oidc_issuer_start(is);
        return is->state == ISSUER_IDLE ? (*v = OIDC_UNAVAILABLE, NULL) : wait_for(is, w, v);
    case ISSUER_METADATA:
    case ISSUER_KEYS:
        return wait_for(is, w, v);
    case ISSUER_READY:
        break;
    }
    if (is->req == NULL && now >= is->keys_until_ms)
        fetch_keys(is); /* expired: refreshed in the background, the old set serves meanwhile */
    if (refetch) {
        if (is->req)
            return wait_for(is, w, v);
        if (now - is->fetched_ms >= is->o->refetch_ms) {
            fetch_keys(is);
            if (is->req)
                return wait_for(is, w, v);
        }
        if (is->failures) { /* the key may exist: the provider cannot tell us now */
            *v = OIDC_UNAVAILABLE;
            return NULL;
        }
    }
    *v = OIDC_OK;
    return is->keys;
}
