/* clientdoc.c — client ID metadata documents, the pure part (see clientdoc.h): a client that
 * has no relationship with this server names itself by an https URL, and we take from the
 * document there only what the consent page and the code flow need. Everything here reads text
 * from a client (the URL) or from a host the client chose (the document), so every rule is
 * strict and every size capped; fetching (cimd.c) is kept apart so this can be fuzzed. */
#include "clientdoc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clientmeta.h"
#include "mem.h"

bool clientdoc_is_url(const char *s)
{
    return strncmp(s, "https://", 8) == 0 || strncmp(s, "http://", 7) == 0;
}

/* Whether path (up to its query) has a "." or ".." segment. */
static bool dot_segment(const char *path)
{
    while (*path == '/') {
        path++;
        size_t n = strcspn(path, "/?");
        if ((n == 1 && path[0] == '.') || (n == 2 && path[0] == '.' && path[1] == '.'))
            return true;
        path += n;
    }
    return false;
}

/* The authority (host[:port]) of an https URL: where it starts and how long it is. */
static const char *authority(const char *url, size_t *len)
{
    const char *a = url + 8;
    *len = strcspn(a, "/?#");
    return a;
}

bool clientdoc_url_ok(const char *url, const char **why)
{
    const char *dummy;
    size_t alen, n = strlen(url);
    if (why == NULL)
        why = &dummy;
    *why = NULL;
    if (strncmp(url, "https://", 8) != 0)
        *why = "the client_id URL must use https";
    else if (n > CLIENTDOC_URL_MAX)
        *why = "the client_id URL is too long";
    for (const char *p = url; *why == NULL && *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '\\')
            *why = "the client_id URL holds a character a URL cannot";
    if (*why)
        return false;
    const char *a = authority(url, &alen);
    char host[256];
    if (memchr(a, '@', alen))
        *why = "the client_id URL must not carry a user name or password";
    else if (strchr(url, '#'))
        *why = "the client_id URL must not have a fragment";
    else if (!clientdoc_url_host(url, host, sizeof host))
        *why = "the client_id URL has no valid host";
    else if (a[alen] != '/' || a[alen + 1] == '\0' || a[alen + 1] == '?')
        *why = "the client_id URL must have a path (not just /)";
    else if (dot_segment(a + alen))
        *why = "the client_id URL must not have . or .. path segments";
    return *why == NULL;
}

bool clientdoc_url_host(const char *url, char *out, size_t outlen)
{
    size_t alen, hlen;
    if (strncmp(url, "https://", 8) != 0)
        return false;
    const char *a = authority(url, &alen), *h = a, *rest;
    if (*a == '[') {
        const char *close = memchr(a, ']', alen);
        if (close == NULL)
            return false;
        h = a + 1;
        hlen = (size_t)(close - h);
        rest = close + 1;
    } else {
        const char *colon = memchr(a, ':', alen);
        hlen = colon ? (size_t)(colon - a) : alen;
        rest = a + hlen;
    }
    size_t rlen = alen - (size_t)(rest - a);
    /* After the host only ":port", digits. */
    if (rlen &&
        (rest[0] != ':' || rlen < 2 || rlen > 6 || strspn(rest + 1, "0123456789") < rlen - 1))
        return false;
    if (hlen == 0 || hlen >= outlen ||
        strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:_") < hlen)
        return false;
    memcpy(out, h, hlen);
    out[hlen] = '\0';
    return true;
}

/* The first rule the document breaks, as a sentence; NULL when it keeps them all. */
static const char *doc_problem(const char *url, json_t *doc, clientdoc_redirect_rule *rule,
                               const char *schemes)
{
    json_t *id = json_object_get(doc, "client_id");
    json_t *uris = json_object_get(doc, "redirect_uris");
    json_t *method = json_object_get(doc, "token_endpoint_auth_method");
    const char *why;
    size_t i;
    json_t *u;
    if (!json_is_object(doc))
        return "the client metadata document is not a JSON object";
    if (!json_is_string(id) || strcmp(json_string_value(id), url) != 0)
        return "the document's client_id is not the URL it was fetched from";
    if (json_object_get(doc, "client_secret") || json_object_get(doc, "client_secret_expires_at"))
        return "a client metadata document must not hold a client_secret";
    if (method && !json_is_string(method))
        return "token_endpoint_auth_method must be a string";
    if (method && strcmp(json_string_value(method), "private_key_jwt") == 0)
        return "token_endpoint_auth_method private_key_jwt is not supported here: this server "
               "takes public clients (none) only";
    if (method && strcmp(json_string_value(method), "none") != 0)
        return "token_endpoint_auth_method must be none (shared secrets cannot be published)";
    if ((why = clientmeta_flow_problem(doc)) != NULL ||
        (why = clientmeta_redirects_problem(uris)) != NULL)
        return why;
    json_array_foreach(
        uris, i,
        u) if (!json_is_string(u) ||
               !rule(json_string_value(u),
                     schemes)) return "a redirect URI in the document must be https, http on the "
                                      "loopback, or an app "
                                      "scheme this server allows, without userinfo or fragment";
    return NULL;
}

bool clientdoc_parse(const char *url, const char *text, size_t len, clientdoc_redirect_rule *rule,
                     const char *schemes, struct clientdoc *out, char *err, size_t errlen)
{
    const char *why;
    memset(out, 0, sizeof *out);
    if (!clientdoc_url_ok(url, &why)) {
        snprintf(err, errlen, "%s", why);
        return false;
    }
    if (len > CLIENTDOC_BYTES_MAX) {
        snprintf(err, errlen, "the client metadata document is larger than %d bytes",
                 CLIENTDOC_BYTES_MAX);
        return false;
    }
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    why = doc ? doc_problem(url, doc, rule, schemes)
              : "the client metadata document is not "
                "valid JSON";
    if (why) {
        json_decref(doc);
        snprintf(err, errlen, "%s", why);
        return false;
    }
    const char *a = url + 8;
    snprintf(out->host, sizeof out->host, "%.*s", (int)strcspn(a, "/?"), a); /* with the port */
    json_t *name = json_object_get(doc, "client_name");
    out->name = xstrdup(name ? json_string_value(name) : out->host);
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(doc, "redirect_uris"), i, u)
        out->redirects[out->nredirects++] = xstrdup(json_string_value(u));
    json_decref(doc);
    return true;
}

void clientdoc_clear(struct clientdoc *d)
{
    free(d->name);
    for (size_t i = 0; i < d->nredirects; i++)
        free(d->redirects[i]);
    memset(d, 0, sizeof *d);
}

unsigned clientdoc_ttl(const char *cc)
{
    unsigned ttl = CLIENTDOC_TTL_DEFAULT;
    if (cc == NULL)
        return ttl;
    for (const char *p = cc; *p;) {
        p += strspn(p, " \t,");
        size_t n = strcspn(p, ",");
        if ((n >= 8 && strncasecmp(p, "no-store", 8) == 0) ||
            (n >= 8 && strncasecmp(p, "no-cache", 8) == 0))
            return 0;
        if (n > 8 && strncasecmp(p, "max-age=", 8) == 0) {
            unsigned long v = 0;
            size_t k = 8;
            for (; k < n && p[k] >= '0' && p[k] <= '9'; k++)
                v = v > CLIENTDOC_TTL_MAX ? v : v * 10 + (unsigned long)(p[k] - '0');
            if (k > 8)
                ttl = v > CLIENTDOC_TTL_MAX ? CLIENTDOC_TTL_MAX : (unsigned)v;
        }
        p += n;
    }
    return ttl;
}
