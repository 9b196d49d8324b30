/* approvals.c — the operator's approval queue (see approvals.h). Pending requests are a small
 * array in arrival order (at most APPROVALS_MAX_PENDING), each with its own timeout timer. A
 * request leaves the array before its callback runs and is freed after it returns, so a callback
 * may queue, decide or withdraw other requests. Summaries are built when a request is queued and
 * the arguments are not kept: the queue never holds a secret the caller sent. */
#include "approvals.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "crypto.h"
#include "loop.h"
#include "mem.h"

struct pending {
    struct approvals *q;
    char id[APPROVALS_ID_HEX + 1];
    long long queued_at;
    char *principal, *tool, *summary;
    approval_cb *cb;
    void *arg;
    struct loop_timer *timer;
};

struct approvals {
    struct loop *loop;
    unsigned timeout_s;
    struct pending *items[APPROVALS_MAX_PENDING];
    size_t n;
};

struct approvals *approvals_new(struct loop *l, unsigned timeout_s)
{
    struct approvals *q = xcalloc(1, sizeof *q);
    q->loop = l;
    q->timeout_s = timeout_s ? timeout_s : APPROVALS_DEFAULT_TIMEOUT_S;
    return q;
}

static void pending_free(struct pending *p)
{
    loop_timer_cancel(p->timer);
    free(p->principal);
    free(p->tool);
    free(p->summary);
    free(p);
}

void approvals_free(struct approvals *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->n; i++)
        pending_free(q->items[i]);
    free(q);
}

static ssize_t find(const struct approvals *q, const char *id)
{
    if (!id || strlen(id) != APPROVALS_ID_HEX)
        return -1;
    for (size_t i = 0; i < q->n; i++)
        if (crypto_equal(q->items[i]->id, id, APPROVALS_ID_HEX))
            return (ssize_t)i;
    return -1;
}

/* Takes item i out of the array, keeping arrival order. */
static struct pending *take(struct approvals *q, size_t i)
{
    struct pending *p = q->items[i];
    memmove(&q->items[i], &q->items[i + 1], (q->n - i - 1) * sizeof q->items[0]);
    q->n--;
    loop_timer_cancel(p->timer);
    p->timer = NULL;
    return p;
}

static void on_timeout(struct loop *l, void *arg)
{
    (void)l;
    struct pending *p = arg;
    p->timer = NULL; /* a one-shot timer is gone once it fired */
    struct approvals *q = p->q;
    ssize_t i = find(q, p->id);
    if (i < 0)
        return;
    take(q, (size_t)i);
    p->cb(p->arg, APPROVAL_TIMED_OUT, NULL, NULL);
    pending_free(p);
}

const char *approvals_add(struct approvals *q, const char *principal, const char *tool,
                          const json_t *args, approval_cb *cb, void *arg)
{
    if (q->n >= APPROVALS_MAX_PENDING)
        return NULL;
    struct pending *p = xcalloc(1, sizeof *p);
    if (!crypto_random_hex(p->id, APPROVALS_ID_HEX / 2)) {
        free(p);
        return NULL;
    }
    p->q = q;
    p->queued_at = (long long)time(NULL);
    p->principal = xstrdup(principal ? principal : "-");
    p->tool = xstrdup(tool ? tool : "-");
    p->summary = approvals_summarize(args, APPROVALS_SUMMARY_MAX);
    p->cb = cb;
    p->arg = arg;
    p->timer = loop_timer_add(q->loop, (uint64_t)q->timeout_s * 1000u, on_timeout, p);
    q->items[q->n++] = p;
    return p->id;
}

int approvals_decide(struct approvals *q, const char *id, bool approve, const char *reason,
                     const char *decider)
{
    ssize_t i = find(q, id);
    if (i < 0)
        return -1;
    struct pending *p = take(q, (size_t)i);
    p->cb(p->arg, approve ? APPROVAL_APPROVED : APPROVAL_DENIED, reason, decider);
    pending_free(p);
    return 0;
}

size_t approvals_deny_all(struct approvals *q, const char *reason, const char *decider)
{
    size_t denied = 0;
    /* At most the requests queued now: a callback that queues another does not loop us. */
    for (size_t left = q ? q->n : 0; left > 0 && q->n > 0; left--, denied++) {
        struct pending *p = take(q, 0);
        p->cb(p->arg, APPROVAL_DENIED, reason, decider);
        pending_free(p);
    }
    return denied;
}

void approvals_withdraw(struct approvals *q, const char *id)
{
    ssize_t i = find(q, id);
    if (i >= 0)
        pending_free(take(q, (size_t)i));
}

size_t approvals_pending(const struct approvals *q)
{
    return q->n;
}

json_t *approvals_list_json(const struct approvals *q)
{
    json_t *out = json_array();
    for (size_t i = 0; i < q->n; i++) {
        const struct pending *p = q->items[i];
        json_array_append_new(out, json_pack("{s:s, s:I, s:s, s:s, s:s}", "id", p->id, "time",
                                             (json_int_t)p->queued_at, "principal", p->principal,
                                             "tool", p->tool, "summary", p->summary));
    }
    return out;
}

/* ---- masking ---- */

bool approvals_key_is_secret(const char *key)
{
    static const char *const words[] = {"key",    "token",         "secret", "password",
                                        "passwd", "authorization", "cookie", "credential"};
    char low[128];
    size_t n = strlen(key);
    if (n >= sizeof low)
        n = sizeof low - 1;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)key[i]);
    low[n] = '\0';
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(low, words[i]))
            return true;
    return false;
}

#define SECRET_MIN_LEN 20
#define SECRET_MIN_BITS_PER_CHAR 3.5

/* A credential: long, one word of token characters, letters and digits mixed, and its characters
 * spread out (Shannon entropy per character), which prose, paths and identifiers rarely are. */
bool approvals_value_looks_secret(const char *s)
{
    size_t n = strlen(s);
    if (n < SECRET_MIN_LEN)
        return false;
    unsigned counts[256] = {0};
    bool alpha = false, digit = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && !strchr("-_+/=.~", c))
            return false;
        alpha |= isalpha(c) != 0;
        digit |= isdigit(c) != 0;
        counts[c]++;
    }
    if (!alpha || !digit)
        return false;
    double bits = 0;
    for (size_t c = 0; c < 256; c++)
        if (counts[c]) {
            double f = (double)counts[c] / (double)n;
            bits -= f * log2(f);
        }
    return bits >= SECRET_MIN_BITS_PER_CHAR;
}

#define MASK "***"
#define MASK_DEPTH 16

/* Replaces, in place, every secret-looking value of v by MASK; returns v or its replacement. */
static json_t *mask_in_place(json_t *v, int depth)
{
    if (depth > MASK_DEPTH || (json_is_string(v) && approvals_value_looks_secret(json_string_value(v)))) {
        json_decref(v);
        return json_string(depth > MASK_DEPTH ? "..." : MASK);
    }
    const char *k;
    json_t *m;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach(v, k, m)
            json_object_set_new(v, k, approvals_key_is_secret(k) ? json_string(MASK)
                                                                : mask_in_place(json_incref(m), depth + 1));
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, m)
            json_array_set_new(v, i, mask_in_place(json_incref(m), depth + 1));
    }
    return v;
}

/* Cuts s to at most cap bytes (ellipsis included) on a UTF-8 character boundary. */
static void cap_utf8(char *s, size_t cap)
{
    static const char ellipsis[] = "...";
    size_t n = strlen(s);
    if (n <= cap || cap < sizeof ellipsis)
        return;
    size_t cut = cap - (sizeof ellipsis - 1);
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    memcpy(s + cut, ellipsis, sizeof ellipsis);
}

char *approvals_summarize(const json_t *args, size_t cap)
{
    if (!args)
        return xstrdup("{}");
    json_t *m = mask_in_place(json_deep_copy(args), 0);
    char *s = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(m);
    if (!s)
        return xstrdup("{}");
    cap_utf8(s, cap);
    return s;
}
