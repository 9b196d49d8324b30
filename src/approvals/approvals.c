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

#include "buf.h"
#include "crypto.h"
#include "loop.h"
#include "mem.h"

struct pending {
    struct approvals *q;
    char id[APPROVALS_ID_HEX + 1];
    long long queued_at;
    char *principal, *tool, *summary;
    char *full; /* the masked arguments, indented, capped at APPROVALS_FULL_MAX */
    size_t cut; /* bytes of the compact masked arguments the summary leaves out */
    unsigned timeout_s;
    approval_cb *cb;
    void *arg;
    struct loop_timer *timer;
};

struct approvals {
    struct loop *loop;
    unsigned timeout_s;
    const struct approvals_observer *obs;
    void *obs_arg;
    struct pending *items[APPROVALS_MAX_PENDING];
    size_t n;
};

static char *masked_text(const json_t *args, size_t flags);
static void cap_utf8(char *s, size_t cap);

struct approvals *approvals_new(struct loop *l, unsigned timeout_s)
{
    struct approvals *q = xcalloc(1, sizeof *q);
    q->loop = l;
    q->timeout_s = timeout_s ? timeout_s : APPROVALS_DEFAULT_TIMEOUT_S;
    return q;
}

void approvals_set_timeout(struct approvals *q, unsigned timeout_s)
{
    if (q)
        q->timeout_s = timeout_s ? timeout_s : APPROVALS_DEFAULT_TIMEOUT_S;
}

static void pending_free(struct pending *p)
{
    loop_timer_cancel(p->timer);
    free(p->principal);
    free(p->tool);
    free(p->summary);
    free(p->full);
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

static struct approval_view view_of(const struct pending *p)
{
    return (struct approval_view){.id = p->id,
                                  .principal = p->principal,
                                  .tool = p->tool,
                                  .summary = p->summary,
                                  .arguments = p->full,
                                  .time = p->queued_at,
                                  .cut = p->cut,
                                  .timeout_s = p->timeout_s};
}

void approvals_each(const struct approvals *q, approvals_each_fn *fn, void *arg)
{
    for (size_t i = 0; q && i < q->n; i++) {
        struct approval_view v = view_of(q->items[i]);
        fn(arg, &v);
    }
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
    if (q->obs && q->obs->gone)
        q->obs->gone(q->obs_arg, p->id);
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

size_t approvals_count_for(const struct approvals *q, const char *principal)
{
    size_t n = 0;
    for (size_t i = 0; i < q->n; i++)
        n += strcmp(q->items[i]->principal, principal ? principal : "-") == 0;
    return n;
}

const char *approvals_add(struct approvals *q, const char *principal, const char *tool,
                          const json_t *args, approval_cb *cb, void *arg)
{
    if (q->n >= APPROVALS_MAX_PENDING ||
        approvals_count_for(q, principal) >= APPROVALS_PER_PRINCIPAL)
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
    p->full = masked_text(args, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    char *compact = masked_text(args, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    size_t whole = strlen(compact), shown = strlen(p->summary);
    if (whole > shown)
        p->cut = whole - (shown >= 3 ? shown - 3 : 0); /* the summary ends in "..." */
    free(compact);
    cap_utf8(p->full, APPROVALS_FULL_MAX);
    p->cb = cb;
    p->arg = arg;
    p->timeout_s = q->timeout_s;
    p->timer = loop_timer_add(q->loop, (uint64_t)q->timeout_s * 1000u, on_timeout, p);
    q->items[q->n++] = p;
    if (q->obs && q->obs->added) {
        struct approval_view v = view_of(p);
        q->obs->added(q->obs_arg, &v);
    }
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

void approvals_observe(struct approvals *q, const struct approvals_observer *o, void *arg)
{
    if (q) {
        q->obs = o;
        q->obs_arg = arg;
    }
}

bool approvals_has(const struct approvals *q, const char *id)
{
    return q && find(q, id) >= 0;
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
        json_t *item =
            json_pack("{s:s, s:I, s:s, s:s, s:s}", "id", p->id, "time", (json_int_t)p->queued_at,
                      "principal", p->principal, "tool", p->tool, "summary", p->summary);
        if (p->cut)
            json_object_set_new(item, "cut", json_integer((json_int_t)p->cut));
        json_array_append_new(out, item);
    }
    return out;
}

json_t *approvals_show_json(const struct approvals *q, const char *id)
{
    ssize_t i = find(q, id);
    if (i < 0)
        return NULL;
    const struct pending *p = q->items[i];
    return json_pack("{s:s, s:I, s:s, s:s, s:s}", "id", p->id, "time", (json_int_t)p->queued_at,
                     "principal", p->principal, "tool", p->tool, "arguments", p->full);
}

/* ---- masking ---- */

bool approvals_key_is_secret(const char *key)
{
    static const char *const words[] = {"key",    "token",         "secret", "password",
                                        "passwd", "authorization", "cookie", "credential"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasestr(key, words[i])) /* the whole key, however long */
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

static bool has_prefix_nocase(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && strncasecmp(s, prefix, k) == 0;
}

/* Known credential shapes by their first bytes: OpenAI/Anthropic (sk-), GitHub (ghp_ and
 * kin), Slack (xox?-), AWS access key ids, Google API keys, GitLab tokens. */
static bool has_key_prefix(const char *t, size_t n)
{
    static const char *const prefixes[] = {"sk-",         "ghp_", "gho_", "ghu_", "ghs_",  "ghr_",
                                           "github_pat_", "AKIA", "ASIA", "AIza", "glpat-"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (n > strlen(prefixes[i]) + 3 && !strncmp(t, prefixes[i], strlen(prefixes[i])))
            return true;
    return n > 5 && !strncmp(t, "xox", 3) && t[4] == '-';
}

/* A path is shown even when a segment of it is random (a hash, a build id). */
static bool looks_like_path(const char *t, size_t n)
{
    return n > 0 && (t[0] == '/' || has_prefix_nocase(t, n, "./") ||
                     has_prefix_nocase(t, n, "../") || has_prefix_nocase(t, n, "~/"));
}

static bool token_looks_secret(const char *t, size_t n)
{
    if (has_key_prefix(t, n))
        return true;
    if (looks_like_path(t, n) || n > 4096)
        return false;
    char *z = xstrndup(t, n);
    bool secret = approvals_value_looks_secret(z);
    free(z);
    return secret;
}

/* Appends token t (n bytes) to out, masking what in it is a credential: the whole token (a key,
 * or the word after Bearer/Basic), a URL's password (or its lone userinfo), the value of
 * NAME=value when NAME says secret. */
static void mask_token(struct buf *out, const char *t, size_t n, bool after_auth_word)
{
    /* A loop, not recursion, and bounded: A=B=C=... may be as long as the string. */
    for (int links = 0;; links++) {
        if (links > 8) {
            buf_append(out, MASK, strlen(MASK));
            return;
        }
        const char *scheme = memmem(t, n, "://", 3);
        const char *at = scheme ? memchr(scheme + 3, '@', n - (size_t)(scheme + 3 - t)) : NULL;
        const char *slash = scheme ? memchr(scheme + 3, '/', n - (size_t)(scheme + 3 - t)) : NULL;
        const char *eq = memchr(t, '=', n);
        size_t name_len = eq ? (size_t)(eq - t) : 0;
        bool named =
            name_len > 0 && name_len + 1 < n && (isalpha((unsigned char)t[0]) || t[0] == '_');
        for (size_t i = 0; named && i < name_len; i++)
            named = isalnum((unsigned char)t[i]) || strchr("_.-", t[i]);
        char *name = named ? xstrndup(t, name_len) : NULL;
        bool secret_name = name && approvals_key_is_secret(name);
        free(name);
        if (after_auth_word) {
            /* "Authorization: Bearer abc" in quotes: the closing quote is not the token's */
            size_t k = n;
            while (k > 1 && strchr("\"'`,;)", t[k - 1]))
                k--;
            buf_append(out, MASK, strlen(MASK));
            buf_append(out, t + k, n - k);
        } else if (secret_name) {
            buf_append(out, t, name_len + 1);
            buf_append(out, MASK, strlen(MASK));
        } else if (token_looks_secret(t, n)) {
            buf_append(out, MASK, strlen(MASK));
        } else if (at && (!slash || at < slash)) {
            /* user:password@ keeps the user; a lone userinfo is a token (https://TOKEN@host) */
            const char *colon = memchr(scheme + 3, ':', (size_t)(at - (scheme + 3)));
            const char *keep_to = colon ? colon + 1 : scheme + 3;
            buf_append(out, t, (size_t)(keep_to - t));
            buf_append(out, MASK, strlen(MASK));
            buf_append(out, at, n - (size_t)(at - t));
        } else if (named) {
            buf_append(out, t, name_len + 1);
            t = eq + 1;
            n -= name_len + 1;
            continue;
        } else {
            buf_append(out, t, n);
        }
        return;
    }
}

/* What earlier tokens of a command line say about the next one. */
struct cmdline {
    bool mysql;      /* a mysql/mysqldump/mariadb word came: -pPASS is a password */
    bool value_next; /* the token before takes a secret value: --password X, sshpass -p X,
                        redis-cli -a X */
    bool user_next;  /* -u / --user: user:password follows */
    bool sshpass, redis;
};

static bool word_is(const char *t, size_t n, const char *word)
{
    const char *slash = memrchr(t, '/', n); /* /usr/bin/mysql too */
    if (slash) {
        n -= (size_t)(slash + 1 - t);
        t = slash + 1;
    }
    return n == strlen(word) && strncmp(t, word, n) == 0;
}

static void mask_user_pass(struct buf *out, const char *t, size_t n, const char *from)
{
    const char *colon = memchr(from, ':', n - (size_t)(from - t));
    if (colon && colon + 1 < t + n) {
        buf_append(out, t, (size_t)(colon + 1 - t));
        buf_append(out, MASK, strlen(MASK));
    } else {
        buf_append(out, t, n);
    }
}

/* Command-line options that carry a password: --NAME=value and `--NAME value` whose NAME says
 * secret, `curl -u user:pass` / `-uuser:pass` / `--user=user:pass` (the part after the colon),
 * `mysql -pPASS` (glued, after a mysql word), `sshpass -p X`, `redis-cli -a X`. True when t
 * was written to out. */
static bool mask_option(struct buf *out, const char *t, size_t n, struct cmdline *cl)
{
    bool value_next = cl->value_next, user_next = cl->user_next;
    cl->value_next = cl->user_next = false;
    if (word_is(t, n, "mysql") || word_is(t, n, "mysqldump") || word_is(t, n, "mysqladmin") ||
        word_is(t, n, "mariadb"))
        cl->mysql = true;
    cl->sshpass |= word_is(t, n, "sshpass");
    cl->redis |= word_is(t, n, "redis-cli");
    if (value_next) {
        buf_append(out, MASK, strlen(MASK));
        return true;
    }
    if (user_next) {
        mask_user_pass(out, t, n, t);
        return true;
    }
    const char *eq = memchr(t, '=', n);
    if (n > 2 && t[0] == '-' && t[1] == '-') {
        char *name = xstrndup(t + 2, eq ? (size_t)(eq - t - 2) : n - 2);
        bool user = strcmp(name, "user") == 0, secret = approvals_key_is_secret(name);
        free(name);
        if (!eq) {
            cl->value_next = secret;
            cl->user_next = user;
            return false;
        }
        if (secret) {
            buf_append(out, t, (size_t)(eq + 1 - t));
            buf_append(out, MASK, strlen(MASK));
            return true;
        }
        if (user) {
            mask_user_pass(out, t, n, eq);
            return true;
        }
        return false;
    }
    if (n == 2 && t[0] == '-') {
        cl->user_next = t[1] == 'u';
        cl->value_next = (t[1] == 'p' && cl->sshpass) || (t[1] == 'a' && cl->redis);
        return false;
    }
    if (n > 2 && t[0] == '-' && t[1] == 'u' && memchr(t, ':', n)) { /* -uuser:pass */
        mask_user_pass(out, t, n, t);
        return true;
    }
    if (n > 2 && t[0] == '-' && t[1] == 'p' && cl->mysql) {
        buf_append(out, "-p", 2);
        buf_append(out, MASK, strlen(MASK));
        return true;
    }
    return false;
}

/* Bytes that separate tokens. A NUL is one too: JSON strings may hold it, the upstream gets
 * what follows it, so the operator must see that text, and a credential after a NUL is still a
 * token of its own. */
static bool is_gap(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0';
}

static size_t span_gap(const char *p, const char *end, bool gap)
{
    size_t n = 0;
    while (p + n < end && is_gap(p[n]) == gap)
        n++;
    return n;
}

/* s (n bytes, NULs included) with each token masked as needed (see mask_token); caller frees. */
char *approvals_mask_textn(const char *s, size_t n, size_t *out_len)
{
    struct buf out;
    buf_init(&out, 0);
    bool after_auth_word = false;
    struct cmdline cl = {0};
    const char *p = s, *end = s + n;
    while (p < end) {
        size_t gap = span_gap(p, end, true);
        buf_append(&out, p, gap);
        p += gap;
        size_t len = span_gap(p, end, false);
        if (!len)
            break;
        /* Quotes and brackets around a token are the shell's or the prose's, not the token's:
         * 'ghp_...' is a key all the same. */
        size_t lead = 0, trail = 0;
        while (lead < len && strchr("\"'`([{", p[lead]))
            lead++;
        while (trail < len - lead && strchr("\"'`)]},;", p[len - 1 - trail]))
            trail++;
        const char *core = p + lead;
        size_t k = len - lead - trail;
        buf_append(&out, p, lead);
        if (k && !mask_option(&out, core, k, &cl))
            mask_token(&out, core, k, after_auth_word);
        buf_append(&out, core + k, trail);
        after_auth_word = (k == 6 && !strncasecmp(core, "bearer", 6)) ||
                          (k == 5 && !strncasecmp(core, "basic", 5));
        p += len;
    }
    return buf_detach(&out, out_len);
}

char *approvals_mask_text(const char *s)
{
    return approvals_mask_textn(s, strlen(s), NULL);
}

/* The whole of string v masked: its length, not its first NUL, says where it ends. */
static json_t *mask_string(const json_t *v)
{
    size_t n = 0;
    char *text = approvals_mask_textn(json_string_value(v), json_string_length(v), &n);
    json_t *j = json_stringn(text, n);
    free(text);
    return j ? j : json_string(MASK);
}

/* Key masked like any text (a key may be a credential: {"ghp_...": "x"}). When that makes it
 * equal to a key already in out, "#index" (its place in the object, unique) is added until it is
 * not, so no argument disappears from view; each added suffix needs a longer planted key to
 * collide again, so the work stays linear in the request's size. */
static char *masked_key(const json_t *out, const char *key, size_t index)
{
    char *k = approvals_mask_text(key);
    while (json_object_get(out, k)) {
        char *longer = xasprintf("%s#%zu", k, index);
        free(k);
        k = longer;
    }
    return k;
}

/* v with every secret-looking key and value replaced by MASK (v itself is released). */
static json_t *mask_in_place(json_t *v, int depth)
{
    if (depth > MASK_DEPTH) {
        json_decref(v);
        return json_string("...");
    }
    if (json_is_string(v)) {
        json_t *m = mask_string(v);
        json_decref(v);
        return m;
    }
    const char *k;
    json_t *m;
    size_t i;
    if (json_is_object(v)) {
        json_t *out = json_object();
        size_t index = 0;
        json_object_foreach(v, k, m)
        {
            char *shown = masked_key(out, k, ++index);
            json_object_set_new(out, shown,
                                approvals_key_is_secret(k)
                                    ? json_string(MASK)
                                    : mask_in_place(json_incref(m), depth + 1));
            free(shown);
        }
        json_decref(v);
        return out;
    }
    if (json_is_array(v)) {
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

/* The masked arguments as JSON text in the given format; caller frees. */
static char *masked_text(const json_t *args, size_t flags)
{
    if (!args)
        return xstrdup("{}");
    json_t *m = mask_in_place(json_deep_copy(args), 0);
    char *s = json_dumps(m, flags);
    json_decref(m);
    return s ? s : xstrdup("{}");
}

char *approvals_summarize(const json_t *args, size_t cap)
{
    char *s = masked_text(args, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    cap_utf8(s, cap);
    return s;
}
