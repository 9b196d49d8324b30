/* reqstate.c — the requestState of input-required results (MCP 2026-07-28, "MRTR").
 *
 * A handler that needs the user's input mid-request answers input_required with some state of
 * its own; the client sends that state back, byte for byte, with the answers in a new request.
 * Whatever comes back from a client is the client's to change, and the state may decide what
 * the handler does (hermes_reset: "the user confirmed"), so it is sealed: HMAC-SHA-256 under a
 * key made at each start, over the state, an expiry and a digest of the request (method, and
 * params minus _meta and the round's own fields: name, URI, arguments), plus the caller's
 * identity, which the MAC covers but the text does not carry. With a key every replica shares
 * (mcp_set_state_key) the expiry is wall-clock time, so that another replica can judge it. A state
 * that was altered, is late, or comes from another caller or with other arguments opens to nothing.
 * Replay within the lifetime is possible (the spec leaves single use to the server); the states we
 * seal only say what the caller itself answered.
 *
 * Text: base64url(payload JSON) "." base64url(MAC), at most REQSTATE_MAX characters. */
#include "reqstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "loop.h"
#include "mem.h"

#define STATE_TTL_MS (10u * 60u * 1000u)

static uint64_t state_ttl(const struct mcp_server *srv)
{
    return srv->o.state_ttl_ms ? srv->o.state_ttl_ms : STATE_TTL_MS;
}

/* The clock expiries are sealed in: the loop's (monotonic) for a key of this process only. */
static uint64_t state_now(struct mcp_server *srv)
{
    struct timespec ts;
    if (!srv->state_key_shared)
        return loop_now(srv->loop);
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

unsigned mcp_state_ttl_ms(const struct mcp_server *s)
{
    return (unsigned)state_ttl(s);
}

void reqstate_params_digest(const char *method, json_t *params, char out[45])
{
    json_t *p = json_is_object(params) ? json_copy(params) : json_object();
    json_object_del(p, "_meta");
    json_object_del(p, "inputResponses");
    json_object_del(p, "requestState");
    char *text = json_dumps(p, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(p);
    size_t mlen = strlen(method), tlen = text ? strlen(text) : 0;
    char *all = xmalloc(mlen + 1 + tlen + 1);
    memcpy(all, method, mlen);
    all[mlen] = '\n';
    if (text)
        memcpy(all + mlen + 1, text, tlen);
    unsigned char h[32];
    crypto_sha256(all, mlen + 1 + tlen, h);
    crypto_b64_encode(true, h, sizeof h, out);
    free(all);
    free(text);
}

/* The MAC of the payload text for this caller (who is not in the text). */
static void mac_of(struct mcp_server *srv, const char *caller, const char *text, size_t len,
                   char out[45])
{
    size_t clen = strlen(caller);
    char *all = xmalloc(clen + 1 + len);
    memcpy(all, caller, clen);
    all[clen] = '\n';
    memcpy(all + clen + 1, text, len);
    unsigned char mac[32];
    crypto_hmac_sha256(srv->state_key, sizeof srv->state_key, all, clen + 1 + len, mac);
    crypto_b64_encode(true, mac, sizeof mac, out);
    free(all);
}

char *reqstate_seal(struct mcp_server *srv, const char *caller, const char *digest, json_t *state)
{
    json_t *payload =
        json_pack("{s:i, s:s, s:I, s:O}", "v", 1, "d", digest, "e",
                  (json_int_t)(state_now(srv) + state_ttl(srv)), "s", state ? state : json_null());
    char *json = json_dumps(payload, JSON_COMPACT);
    json_decref(payload);
    size_t jlen = json ? strlen(json) : 0;
    /* base64 grows by 4/3; the MAC and the dot take 44 more. */
    if (json == NULL || (jlen + 2) / 3 * 4 + 45 > REQSTATE_MAX) {
        free(json);
        return NULL;
    }
    char *out = xmalloc((jlen + 2) / 3 * 4 + 50);
    size_t n = crypto_b64_encode(true, json, jlen, out);
    free(json);
    out[n] = '.';
    mac_of(srv, caller, out, n, out + n + 1);
    return out;
}

json_t *reqstate_open(struct mcp_server *srv, const char *caller, const char *digest,
                      const char *text, size_t len)
{
    const char *dot = memchr(text, '.', len);
    if (len > REQSTATE_MAX || dot == NULL)
        return NULL;
    size_t plen = (size_t)(dot - text);
    char want[45];
    mac_of(srv, caller, text, plen, want);
    if (len - plen - 1 != strlen(want) || !crypto_equal(dot + 1, want, strlen(want)))
        return NULL;
    /* Ours, unaltered and this caller's from here on: the payload is the JSON we wrote. */
    unsigned char *raw = xmalloc(plen + 4);
    size_t rlen;
    json_t *payload = NULL, *state = NULL;
    if (crypto_b64_decode(true, text, plen, raw, plen + 4, &rlen))
        payload = json_loadb((const char *)raw, rlen, JSON_ALLOW_NUL, NULL); /* as we wrote it */
    free(raw);
    const char *d = json_string_value(json_object_get(payload, "d"));
    json_t *e = json_object_get(payload, "e");
    if (d && strcmp(d, digest) == 0 && json_is_integer(e) &&
        (uint64_t)json_integer_value(e) > state_now(srv))
        state = json_incref(json_object_get(payload, "s"));
    json_decref(payload);
    return state;
}
