/* clientmeta.c — the checks of a client's metadata that every client can send us: a redirect
 * URI and a dynamic registration body. Here, apart from authserver.c, so they are pure and
 * fuzzed (tests/fuzz/fuzz_clientmeta.c); the rule for redirect URIs is the one codes are sent
 * by, so it is strict: no userinfo (a host that reads as another), no fragment, no white space
 * or backslash (parsers disagree on them), http only to the loopback. */
#include "clientmeta.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "authserver.h"

/* A redirect URI we will send codes to: https to a host, http only to the loopback (a native
 * app's local listener, RFC 8252), or a connector app's own scheme. Never userinfo (a host
 * that reads as another), a fragment, javascript: or data:. */
bool authserver_redirect_ok(const char *uri)
{
    return authserver_redirect_ok_in(uri, NULL);
}

/* Whether uri starts with "<one of schemes>:" (schemes comma-separated, checked at start). */
static bool app_scheme(const char *uri, const char *schemes)
{
    size_t u = strcspn(uri, ":");
    if (uri[u] != ':')
        return false;
    for (const char *p = schemes; *p;) {
        size_t n = strcspn(p, ",");
        if (n == u && strncmp(p, uri, n) == 0)
            return true;
        p += n;
        p += *p == ',';
    }
    return false;
}

bool authserver_redirect_ok_in(const char *uri, const char *schemes)
{
    size_t n = strlen(uri);
    if (n == 0 || n > CLIENTMETA_URI_MAX || strchr(uri, '#'))
        return false;
    for (const char *p = uri; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == '\\')
            return false;
    if (app_scheme(uri, schemes ? schemes : AUTHSERVER_DEFAULT_SCHEMES))
        return true;
    const char *auth;
    bool https = strncmp(uri, "https://", 8) == 0;
    if (https)
        auth = uri + 8;
    else if (strncmp(uri, "http://", 7) == 0)
        auth = uri + 7;
    else
        return false;
    size_t alen = strcspn(auth, "/?");
    if (alen == 0 || memchr(auth, '@', alen))
        return false;
    if (https)
        return true;
    static const char *const loopback[] = {"127.0.0.1", "[::1]", "localhost"};
    for (size_t i = 0; i < sizeof loopback / sizeof *loopback; i++) {
        size_t l = strlen(loopback[i]);
        if (strncmp(auth, loopback[i], l) == 0 && (alen == l || auth[l] == ':'))
            return true;
    }
    return false;
}

/* After a loopback host: past ":<port>" if there (1 to 65535, no leading zero: one port has
 * one spelling), to the path, query or end; NULL when anything else follows (a longer host
 * name, userinfo) or the port is no port. */
static const char *past_port(const char *p)
{
    if (*p == ':') {
        size_t d = strspn(p + 1, "0123456789");
        unsigned long port = 0;
        if (d == 0 || d > 5 || p[1] == '0')
            return NULL;
        for (size_t i = 1; i <= d; i++)
            port = port * 10 + (unsigned long)(p[i] - '0');
        if (port > 65535)
            return NULL;
        p += 1 + d;
    }
    return *p == '/' || *p == '?' || *p == '\0' ? p : NULL;
}

bool clientmeta_redirect_matches(const char *registered, const char *requested)
{
    /* localhost too: RFC 8252 8.3 discourages it (it may not resolve to the loopback) but does
     * not forbid it, registration takes it, and mcp-remote and the Inspector use it. */
    static const char *const loopback[] = {"http://127.0.0.1", "http://[::1]", "http://localhost"};
    if (strcmp(registered, requested) == 0)
        return true;
    for (size_t i = 0; i < sizeof loopback / sizeof *loopback; i++) {
        size_t h = strlen(loopback[i]);
        if (strncmp(registered, loopback[i], h) != 0 || strncmp(requested, loopback[i], h) != 0)
            continue;
        const char *a = past_port(registered + h), *b = past_port(requested + h);
        return a && b && strcmp(a, b) == 0;
    }
    return false;
}

/* Whether every string of list (absent: fine; at most 8 members) is one of allowed[0..n). */
static bool strings_within(json_t *list, const char *const *allowed, size_t n)
{
    size_t i;
    json_t *v;
    if (list == NULL)
        return true;
    if (!json_is_array(list) || json_array_size(list) > 8)
        return false;
    json_array_foreach(list, i, v)
    {
        bool ok = false;
        for (size_t k = 0; k < n && json_is_string(v); k++)
            ok = ok || strcmp(json_string_value(v), allowed[k]) == 0;
        if (!ok)
            return false;
    }
    return true;
}

bool clientmeta_name_ok(const char *name)
{
    if (name == NULL || strlen(name) > CLIENTMETA_NAME_MAX)
        return false;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

const char *clientmeta_redirects_problem(json_t *uris)
{
    if (!json_is_array(uris) || json_array_size(uris) == 0 ||
        json_array_size(uris) > CLIENTMETA_REDIRECTS_MAX)
        return "redirect_uris must list 1 to 10 URIs";
    return NULL;
}

const char *clientmeta_flow_problem(json_t *doc)
{
    static const char *const grants[] = {"authorization_code", "refresh_token"};
    static const char *const responses[] = {"code"};
    json_t *name = json_object_get(doc, "client_name");
    if (!strings_within(json_object_get(doc, "grant_types"), grants, 2) ||
        !strings_within(json_object_get(doc, "response_types"), responses, 1))
        return "grant_types may be authorization_code and refresh_token, response_types code";
    if (name && (!json_is_string(name) || !clientmeta_name_ok(json_string_value(name))))
        return "client_name must be text of at most 200 bytes, without control characters";
    return NULL;
}

static const char *const auth_names[] = {"none", "client_secret_post", "client_secret_basic"};

const char *clientmeta_auth_name(enum clientmeta_auth a)
{
    return auth_names[a];
}

bool clientmeta_auth_parse(const char *name, enum clientmeta_auth *out)
{
    for (size_t i = 0; i < sizeof auth_names / sizeof *auth_names; i++)
        if (strcmp(name, auth_names[i]) == 0) {
            *out = (enum clientmeta_auth)i;
            return true;
        }
    return false;
}

const char *clientmeta_check_registration(json_t *doc, const char *schemes, enum oauth_err *code,
                                          enum clientmeta_auth *auth)
{
    json_t *uris = json_object_get(doc, "redirect_uris");
    json_t *method = json_object_get(doc, "token_endpoint_auth_method");
    const char *why;
    size_t i;
    json_t *u;
    *auth = CLIENTMETA_AUTH_NONE;
    if (!json_is_object(doc))
        return "the body is not a JSON object";
    if ((why = clientmeta_redirects_problem(uris)) != NULL)
        return why;
    if (method &&
        (!json_is_string(method) || !clientmeta_auth_parse(json_string_value(method), auth)))
        return "token_endpoint_auth_method must be none, client_secret_post or "
               "client_secret_basic";
    if ((why = clientmeta_flow_problem(doc)) != NULL)
        return why;
    json_array_foreach(uris, i, u)
    {
        if (!json_is_string(u) || !authserver_redirect_ok_in(json_string_value(u), schemes)) {
            *code = OAUTH_INVALID_REDIRECT_URI;
            return "a redirect URI must be https, http on the loopback, or an app scheme this "
                   "server allows (OAUTH_ALLOWED_REDIRECT_SCHEMES), without userinfo or fragment";
        }
    }
    return NULL;
}

void clientmeta_redirect_host(const char *uri, char *out, size_t outlen)
{
    const char *p = strstr(uri, "://");
    p = p ? p + 3 : uri;
    size_t n = p == uri ? strcspn(p, ":") : strcspn(p, "/?#");
    snprintf(out, outlen, "%.*s", (int)n, p);
}
