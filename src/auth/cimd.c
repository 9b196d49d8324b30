/* cimd.c — client ID metadata documents fetched on the event loop (see cimd.h for the rules).
 *
 * The server goes to a URL a stranger chose, so the fetch is the classic SSRF hazard: the URL
 * may name, or resolve to, the operator's own network (a metadata service at 169.254.169.254,
 * an admin port on 127.0.0.1). Three things keep it out: curl may only speak https and follow
 * nothing; no proxy from the environment is used (it would resolve the host for us, out of
 * sight); and the address of every connection curl opens is checked (httpc's addr_ok, which is
 * CURLOPT_OPENSOCKETFUNCTION), after resolution, so the address checked is the one used. The
 * body goes into a fixed buffer of CLIENTDOC_BYTES_MAX: a larger document is cut off as it
 * arrives, nothing grows. The transfers run on http/httpc.c, as the agent client's do. */
#include "cimd.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "httpc.h"
#include "list.h"
#include "log.h"
#include "loop.h"
#include "mem.h"

struct entry { /* a document that passed, while fresh */
    char *url;
    struct clientdoc doc;
    uint64_t expires_ms; /* loop time; 0: free slot */
};

struct cimd {
    struct loop *loop;
    struct httpc *http;
    char *ca_file, *allow_hosts, *schemes;
    clientdoc_redirect_rule *rule;
    unsigned timeout_ms;
    struct list fetches; /* struct cimd_fetch, by link */
    unsigned nfetches;
    struct entry cache[CIMD_CACHE_MAX];
};

struct cimd_fetch {
    struct cimd *c;
    struct list link; /* in c->fetches */
    struct httpc_req *req;
    char url[CLIENTDOC_URL_MAX + 1];
    bool allow_private; /* the host is one the operator listed */
    bool too_big;
    char cache_control[128];
    cimd_cb *cb;
    void *arg;
    size_t len;
    char body[CLIENTDOC_BYTES_MAX];
};

/* ---- addresses ---- */

static bool v4_public(uint32_t a) /* host order */
{
    uint8_t b0 = (uint8_t)(a >> 24), b1 = (uint8_t)(a >> 16), b2 = (uint8_t)(a >> 8);
    return !(b0 == 0 || b0 == 10 || b0 == 127 || b0 >= 224 || /* this, private, loop, mc */
             (b0 == 100 && (b1 & 0xc0) == 64) ||              /* CGNAT 100.64/10 */
             (b0 == 169 && b1 == 254) ||                      /* link-local */
             (b0 == 172 && (b1 & 0xf0) == 16) ||              /* 172.16/12 */
             (b0 == 192 && b1 == 168) ||                      /* 192.168/16 */
             (b0 == 192 && b1 == 0 && b2 == 0) ||             /* IETF 192.0.0/24 */
             (b0 == 198 && (b1 & 0xfe) == 18));               /* benchmarks 198.18/15 */
}

bool cimd_addr_public(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)sa;
        return v4_public(ntohl(s4->sin_addr.s_addr));
    }
    if (sa->sa_family != AF_INET6)
        return false;
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)sa;
    const uint8_t *b = s6->sin6_addr.s6_addr;
    static const uint8_t zero[12];
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b};
    uint32_t v4 = (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15];
    if (memcmp(b, zero, 12) == 0) /* ::, ::1 and the old IPv4-compatible form */
        return false;
    if (memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0)
        return v4_public(v4);
    return !((b[0] & 0xfe) == 0xfc ||                   /* ULA fc00::/7 */
             (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) || /* link-local fe80::/10 */
             (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) || /* site-local fec0::/10 */
             b[0] == 0xff);                             /* multicast */
}

bool cimd_host_listed(const char *host, const char *list)
{
    size_t hlen = strlen(host);
    for (const char *p = list ? list : ""; *p;) {
        p += strspn(p, " ,");
        size_t n = strcspn(p, ", ");
        if (n && n == hlen && strncasecmp(p, host, n) == 0)
            return true;
        p += n;
    }
    return false;
}

/* ---- one fetch ---- */

/* The body into the fixed buffer: past it the transfer is aborted. */
static bool on_body(struct httpc_req *r, const char *p, size_t n, void *arg)
{
    struct cimd_fetch *f = arg;
    (void)r;
    if (n > sizeof f->body - f->len) {
        f->too_big = true;
        return false;
    }
    memcpy(f->body + f->len, p, n);
    f->len += n;
    return true;
}

static void on_header(struct httpc_req *r, const char *line, void *arg)
{
    struct cimd_fetch *f = arg;
    size_t n = strlen(line);
    (void)r;
    if (n > 14 && n - 14 < sizeof f->cache_control && strncasecmp(line, "Cache-Control:", 14) == 0)
        memcpy(f->cache_control, line + 14, n - 14 + 1);
}

/* Every connection curl opens: refused when its address is private and the host is not
 * listed. This is where DNS rebinding would land, so it is checked here, not on the name. */
static bool addr_allowed(const struct sockaddr *sa, void *arg)
{
    const struct cimd_fetch *f = arg;
    return f->allow_private || cimd_addr_public(sa);
}

static void fetch_free(struct cimd_fetch *f)
{
    struct cimd *c = f->c;
    list_unlink(&f->link);
    c->nfetches--;
    free(f);
}

bool cimd_busy(const struct cimd *c)
{
    return c->nfetches >= CIMD_FETCHES_MAX;
}

void cimd_cancel(struct cimd_fetch *f)
{
    if (f) {
        httpc_cancel(f->req);
        fetch_free(f);
    }
}

/* Where url's document goes: its own entry, else a free or stale one, else the one that would
 * expire first. */
static struct entry *cache_slot(struct cimd *c, const char *url, uint64_t now)
{
    struct entry *slot = &c->cache[0];
    for (size_t i = 0; i < CIMD_CACHE_MAX; i++) {
        struct entry *e = &c->cache[i];
        if (e->url && strcmp(e->url, url) == 0)
            return e;
        if (slot->expires_ms <= now)
            continue; /* a free or stale slot beats any live one */
        if (e->expires_ms <= now || e->expires_ms < slot->expires_ms)
            slot = e;
    }
    return slot;
}

static void entry_clear(struct entry *e)
{
    free(e->url);
    clientdoc_clear(&e->doc);
    memset(e, 0, sizeof *e);
}

const struct clientdoc *cimd_cached(struct cimd *c, const char *url)
{
    uint64_t now = loop_now(c->loop);
    for (size_t i = 0; i < CIMD_CACHE_MAX; i++) {
        struct entry *e = &c->cache[i];
        if (e->url && e->expires_ms > now && strcmp(e->url, url) == 0)
            return &e->doc;
    }
    return NULL;
}

/* What went wrong with a finished transfer, as a sentence; NULL when the body can be read. */
static const char *transfer_problem(const struct cimd_fetch *f, const struct httpc_result *res,
                                    char *tmp, size_t n)
{
    if (res->addr_refused)
        return "the client_id host resolves to a private, loopback or link-local address, "
               "which this server does not fetch from (OAUTH_CIMD_ALLOW_HOSTS can name hosts "
               "that may)";
    if (f->too_big)
        return "the client metadata document is larger than 5120 bytes";
    if (res->timed_out)
        return "the client metadata document did not arrive in time";
    if (res->tls_failed)
        return "the client_id host's TLS certificate is not trusted";
    if (res->reason) {
        snprintf(tmp, n, "the client metadata document could not be fetched (%s)", res->reason);
        return tmp;
    }
    if (res->status >= 300 && res->status < 400)
        return "the client_id URL answered with a redirect; redirects are not followed";
    if (res->status != 200) {
        snprintf(tmp, n, "the client_id URL answered HTTP %ld, not 200", res->status);
        return tmp;
    }
    return NULL;
}

/* A transfer ended: check the document, cache it, tell the caller, free the fetch (httpc frees
 * its request once this returns). */
static void fetch_done(struct httpc_req *r, const struct httpc_result *res, void *arg)
{
    struct cimd_fetch *f = arg;
    struct cimd *c = f->c;
    char tmp[200], err[300];
    const char *why = transfer_problem(f, res, tmp, sizeof tmp);
    struct clientdoc doc = {0};
    (void)r;
    if (why == NULL &&
        !clientdoc_parse(f->url, f->body, f->len, c->rule, c->schemes, &doc, err, sizeof err))
        why = err;
    if (why) {
        log_warn("oauth: client metadata document %s refused: %s", f->url, why);
        f->cb(f->arg, NULL, why);
        fetch_free(f);
        return;
    }
    uint64_t now = loop_now(c->loop);
    unsigned ttl = clientdoc_ttl(f->cache_control[0] ? f->cache_control : NULL);
    struct entry *e = cache_slot(c, f->url, now);
    entry_clear(e);
    e->url = xstrdup(f->url);
    e->doc = doc;
    e->expires_ms = ttl ? now + ttl * 1000ull : 0; /* no-store: used for this request only */
    log_info("oauth: client metadata document %s fetched", f->url);
    f->cb(f->arg, &e->doc, NULL);
    if (ttl == 0)
        entry_clear(e);
    fetch_free(f);
}

static struct httpc_req *request_for(struct cimd *c, struct cimd_fetch *f)
{
    struct httpc_opts o = {
        .method = "GET",
        .url = f->url,
        .connect_timeout_ms = c->timeout_ms,
        .deadline_ms = c->timeout_ms,
        .on_data = on_body,
        .on_header = on_header,
        .on_done = fetch_done,
        .arg = f,
        .https_only = true,
        .no_env_proxy = true,
        .addr_ok = addr_allowed,
        .ca_file = c->ca_file,
        .user_agent = "hermes-mcp (client metadata)",
    };
    return httpc_request(c->http, &o);
}

struct cimd_fetch *cimd_fetch(struct cimd *c, const char *url, cimd_cb *cb, void *arg, char *err,
                              size_t errlen)
{
    const char *why;
    char host[256];
    if (!clientdoc_url_ok(url, &why) || !clientdoc_url_host(url, host, sizeof host)) {
        snprintf(err, errlen, "%s", why ? why : "the client_id URL has no valid host");
        return NULL;
    }
    if (c->nfetches >= CIMD_FETCHES_MAX) {
        snprintf(err, errlen,
                 "too many client metadata documents are being fetched; try again "
                 "in a moment");
        return NULL;
    }
    struct cimd_fetch *f = xcalloc(1, sizeof *f);
    f->c = c;
    snprintf(f->url, sizeof f->url, "%s", url);
    f->allow_private = cimd_host_listed(host, c->allow_hosts);
    f->cb = cb;
    f->arg = arg;
    f->req = request_for(c, f);
    if (f->req == NULL) {
        free(f);
        snprintf(err, errlen, "the HTTP client cannot start a transfer");
        return NULL;
    }
    list_push_front(&c->fetches, &f->link);
    c->nfetches++;
    return f; /* curl starts it from its timer, on the loop: cb never runs from here */
}

struct cimd *cimd_new(struct loop *l, const struct cimd_opts *o)
{
    struct cimd *c = xcalloc(1, sizeof *c);
    list_init(&c->fetches);
    c->loop = l;
    c->http = httpc_new(l, CIMD_FETCHES_MAX); /* one origin may use every slot, as before */
    c->ca_file = o->ca_file && *o->ca_file ? xstrdup(o->ca_file) : NULL;
    c->allow_hosts = o->allow_hosts ? xstrdup(o->allow_hosts) : NULL;
    c->schemes = o->schemes ? xstrdup(o->schemes) : NULL;
    c->rule = o->rule;
    c->timeout_ms = o->timeout_ms ? o->timeout_ms : CIMD_TIMEOUT_MS;
    return c;
}

void cimd_free(struct cimd *c)
{
    if (c == NULL)
        return;
    httpc_free(c->http); /* cancels the transfers: no callback */
    while (!list_empty(&c->fetches))
        fetch_free(list_entry(list_first(&c->fetches), struct cimd_fetch, link));
    for (size_t i = 0; i < CIMD_CACHE_MAX; i++)
        entry_clear(&c->cache[i]);
    free(c->ca_file);
    free(c->allow_hosts);
    free(c->schemes);
    free(c);
}
