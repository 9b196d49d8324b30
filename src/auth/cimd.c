/* cimd.c — client ID metadata documents fetched on the event loop (see cimd.h for the rules).
 *
 * The server goes to a URL a stranger chose, so the fetch is the classic SSRF hazard: the URL
 * may name, or resolve to, the operator's own network (a metadata service at 169.254.169.254,
 * an admin port on 127.0.0.1). Three things keep it out: curl may only speak https and follow
 * nothing; no proxy from the environment is used (it would resolve the host for us, out of
 * sight); and the address of every connection curl opens is checked in CURLOPT_OPENSOCKETFUNCTION,
 * after resolution, so the address checked is the one used. The body goes into a fixed buffer
 * of CLIENTDOC_BYTES_MAX: a larger document is cut off as it arrives, nothing grows.
 *
 * The glue to the loop follows bridge/agent.c (curl's ephiperfifo pattern), much reduced: a
 * fetch ends in check_done, outside curl's callbacks, where its handle can be removed. */
#include "cimd.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

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
    CURLM *multi;
    struct loop_timer *timer;
    char *ca_file, *allow_hosts, *schemes;
    clientdoc_redirect_rule *rule;
    unsigned timeout_ms;
    struct cimd_fetch *fetches;
    unsigned nfetches;
    struct entry cache[CIMD_CACHE_MAX];
};

struct cimd_fetch {
    struct cimd *c;
    struct cimd_fetch *prev, *next;
    CURL *easy;
    char url[CLIENTDOC_URL_MAX + 1];
    bool allow_private;  /* the host is one the operator listed */
    bool refused_addr;   /* a connection to a private address was refused */
    bool too_big;
    char cache_control[128];
    cimd_cb *cb;
    void *arg;
    size_t len;
    char body[CLIENTDOC_BYTES_MAX];
    char errbuf[CURL_ERROR_SIZE];
};

struct sockw {
    struct loop_watch *w;
};

/* ---- addresses ---- */

static bool v4_public(uint32_t a) /* host order */
{
    uint8_t b0 = (uint8_t)(a >> 24), b1 = (uint8_t)(a >> 16), b2 = (uint8_t)(a >> 8);
    return !(b0 == 0 || b0 == 10 || b0 == 127 || b0 >= 224 ||      /* this, private, loop, mc */
             (b0 == 100 && (b1 & 0xc0) == 64) ||                     /* CGNAT 100.64/10 */
             (b0 == 169 && b1 == 254) ||                             /* link-local */
             (b0 == 172 && (b1 & 0xf0) == 16) ||                     /* 172.16/12 */
             (b0 == 192 && b1 == 168) ||                             /* 192.168/16 */
             (b0 == 192 && b1 == 0 && b2 == 0) ||                    /* IETF 192.0.0/24 */
             (b0 == 198 && (b1 & 0xfe) == 18));                      /* benchmarks 198.18/15 */
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
    return !((b[0] & 0xfe) == 0xfc ||                  /* ULA fc00::/7 */
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

/* ---- the loop glue ---- */

static void check_done(struct cimd *c);

static void curl_action(struct cimd *c, curl_socket_t fd, int mask)
{
    int running;
    curl_multi_socket_action(c->multi, fd, mask, &running);
    check_done(c);
}

static void on_fd(struct loop *l, int fd, uint32_t events, void *arg)
{
    int mask = 0;
    (void)l;
    if (events & EPOLLIN)
        mask |= CURL_CSELECT_IN;
    if (events & EPOLLOUT)
        mask |= CURL_CSELECT_OUT;
    if (events & (EPOLLERR | EPOLLHUP))
        mask |= CURL_CSELECT_ERR;
    curl_action(arg, fd, mask);
}

static int socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct cimd *c = userp;
    struct sockw *sw = socketp;
    uint32_t ev = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (sw) {
            loop_watch_del(sw->w);
            free(sw);
            curl_multi_assign(c->multi, s, NULL);
        }
    } else if (sw == NULL) {
        sw = xcalloc(1, sizeof *sw);
        sw->w = loop_watch_add(c->loop, s, ev, on_fd, c);
        curl_multi_assign(c->multi, s, sw);
    } else {
        loop_watch_mod(sw->w, ev);
    }
    return 0;
}

static void on_timer(struct loop *l, void *arg)
{
    struct cimd *c = arg;
    (void)l;
    c->timer = NULL;
    curl_action(c, CURL_SOCKET_TIMEOUT, 0);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct cimd *c = userp;
    (void)multi;
    loop_timer_cancel(c->timer);
    c->timer = NULL;
    if (timeout_ms >= 0) /* never into curl from here: 0 ms runs on the next iteration */
        c->timer = loop_timer_add(c->loop, (uint64_t)timeout_ms, on_timer, c);
    return 0;
}

/* ---- one fetch ---- */

static size_t write_cb(char *p, size_t size, size_t nmemb, void *userp)
{
    struct cimd_fetch *f = userp;
    size_t n = size * nmemb;
    if (n > sizeof f->body - f->len) {
        f->too_big = true;
        return 0; /* aborts the transfer */
    }
    memcpy(f->body + f->len, p, n);
    f->len += n;
    return n;
}

static size_t header_cb(char *p, size_t size, size_t nmemb, void *userp)
{
    struct cimd_fetch *f = userp;
    size_t n = size * nmemb;
    if (n > 14 && n < sizeof f->cache_control + 14 && strncasecmp(p, "Cache-Control:", 14) == 0) {
        snprintf(f->cache_control, sizeof f->cache_control, "%.*s", (int)(n - 14), p + 14);
        f->cache_control[strcspn(f->cache_control, "\r\n")] = '\0';
    }
    return n;
}

/* Every connection curl opens: refused when its address is private and the host is not
 * listed. This is where DNS rebinding would land, so it is checked here, not on the name. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct cimd_fetch *f = clientp;
    if (purpose != CURLSOCKTYPE_IPCXN || (!f->allow_private && !cimd_addr_public(&a->addr))) {
        f->refused_addr = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static void fetch_free(struct cimd_fetch *f)
{
    struct cimd *c = f->c;
    if (f->easy) {
        curl_multi_remove_handle(c->multi, f->easy);
        curl_easy_cleanup(f->easy);
    }
    if (f->prev)
        f->prev->next = f->next;
    else
        c->fetches = f->next;
    if (f->next)
        f->next->prev = f->prev;
    c->nfetches--;
    free(f);
}

bool cimd_busy(const struct cimd *c)
{
    return c->nfetches >= CIMD_FETCHES_MAX;
}

void cimd_cancel(struct cimd_fetch *f)
{
    if (f)
        fetch_free(f);
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
static const char *transfer_problem(struct cimd_fetch *f, CURLcode code, char *tmp, size_t n)
{
    long status = 0;
    curl_easy_getinfo(f->easy, CURLINFO_RESPONSE_CODE, &status);
    if (f->refused_addr)
        return "the client_id host resolves to a private, loopback or link-local address, "
               "which this server does not fetch from (OAUTH_CIMD_ALLOW_HOSTS can name hosts "
               "that may)";
    if (f->too_big || code == CURLE_FILESIZE_EXCEEDED)
        return "the client metadata document is larger than 5120 bytes";
    if (code == CURLE_OPERATION_TIMEDOUT)
        return "the client metadata document did not arrive in time";
    if (code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
        code == CURLE_SSL_CONNECT_ERROR)
        return "the client_id host's TLS certificate is not trusted";
    if (code != CURLE_OK) {
        snprintf(tmp, n, "the client metadata document could not be fetched (%s)",
                 curl_easy_strerror(code));
        return tmp;
    }
    if (status >= 300 && status < 400)
        return "the client_id URL answered with a redirect; redirects are not followed";
    if (status != 200) {
        snprintf(tmp, n, "the client_id URL answered HTTP %ld, not 200", status);
        return tmp;
    }
    return NULL;
}

/* A transfer ended: check the document, cache it, tell the caller, free the fetch. */
static void fetch_done(struct cimd_fetch *f, CURLcode code)
{
    struct cimd *c = f->c;
    char tmp[200], err[300];
    const char *why = transfer_problem(f, code, tmp, sizeof tmp);
    struct clientdoc doc = {0};
    if (why == NULL && !clientdoc_parse(f->url, f->body, f->len, c->rule, c->schemes, &doc, err,
                                        sizeof err))
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

static void check_done(struct cimd *c)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct cimd_fetch *f = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&f);
        fetch_done(f, m->data.result);
    }
}

static bool multi_ready(struct cimd *c)
{
    if (c->multi)
        return true;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) /* counted: agent.c may do it too */
        return false;
    c->multi = curl_multi_init();
    if (c->multi == NULL) {
        curl_global_cleanup();
        return false;
    }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    return true;
}

static CURL *easy_for(struct cimd *c, struct cimd_fetch *f)
{
    CURL *e = curl_easy_init();
    if (e == NULL)
        return NULL;
    curl_easy_setopt(e, CURLOPT_URL, f->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* not the environment's: it would resolve for us */
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, f);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE, (long)CLIENTDOC_BYTES_MAX);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, f);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    /* A transfer cancelled or timed out during its DNS lookup must not make the event loop
     * wait for libcurl's resolver thread (it joins it unless told to leave it behind). */
    curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "hermes-mcp (client metadata)");
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, f->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, f);
    if (c->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file); /* with the system's CA directory */
    return e;
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
        snprintf(err, errlen, "too many client metadata documents are being fetched; try again "
                              "in a moment");
        return NULL;
    }
    if (!multi_ready(c)) {
        snprintf(err, errlen, "the HTTP client cannot be set up");
        return NULL;
    }
    struct cimd_fetch *f = xcalloc(1, sizeof *f);
    f->c = c;
    snprintf(f->url, sizeof f->url, "%s", url);
    f->allow_private = cimd_host_listed(host, c->allow_hosts);
    f->cb = cb;
    f->arg = arg;
    f->easy = easy_for(c, f);
    if (f->easy == NULL || curl_multi_add_handle(c->multi, f->easy) != CURLM_OK) {
        if (f->easy)
            curl_easy_cleanup(f->easy);
        free(f);
        snprintf(err, errlen, "the HTTP client cannot start a transfer");
        return NULL;
    }
    f->next = c->fetches;
    if (f->next)
        f->next->prev = f;
    c->fetches = f;
    c->nfetches++;
    return f; /* curl starts it from its timer, on the loop: cb never runs from here */
}

struct cimd *cimd_new(struct loop *l, const struct cimd_opts *o)
{
    struct cimd *c = xcalloc(1, sizeof *c);
    c->loop = l;
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
    while (c->fetches)
        fetch_free(c->fetches);
    for (size_t i = 0; i < CIMD_CACHE_MAX; i++)
        entry_clear(&c->cache[i]);
    loop_timer_cancel(c->timer);
    if (c->multi) {
        curl_multi_cleanup(c->multi);
        curl_global_cleanup();
    }
    free(c->ca_file);
    free(c->allow_hosts);
    free(c->schemes);
    free(c);
}
