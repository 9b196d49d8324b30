/* fuzz_clientmeta.c — libFuzzer target for the client metadata any client sends the
 * authorization server (src/auth/clientmeta.c): a dynamic registration body (RFC 7591) and the
 * redirect URIs in it, the rule that decides where codes may be sent. The whole input is tried
 * as a redirect URI (with the default app schemes and with "myapp"): one accepted is at most
 * 512 bytes with no white space, control character, backslash or fragment, and is an app scheme
 * asked for, https with a host and no userinfo, or http to the loopback, never javascript: or
 * data:; and one that matches a registered loopback URI is that URI with at most another port.
 * Then as a registration body: one accepted is a JSON object for a public client or a
 * confidential one (client_secret_post or client_secret_basic, the method read back) with 1
 * to 10 redirect URIs each of which the rule accepts and a printable name; one refused gives a
 * reason. */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "authserver.h"
#include "clientmeta.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The host part of an http:// URI is a loopback name, then a port, a path, a query or nothing. */
static bool loopback_http(const char *uri)
{
    static const char *const names[] = {"127.0.0.1", "[::1]", "localhost"};
    const char *host = uri + 7;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(host, names[i], n) == 0 && strchr(":/?", host[n]) != NULL)
            return true; /* strchr finds the NUL too: the host alone */
    }
    return false;
}

static void check_accepted_uri(const char *uri, const char *schemes)
{
    size_t n = strlen(uri);
    CHECK(n >= 1 && n <= CLIENTMETA_URI_MAX);
    CHECK(strchr(uri, '#') == NULL && strchr(uri, '\\') == NULL);
    for (size_t i = 0; i < n; i++)
        CHECK((unsigned char)uri[i] > 0x20 && uri[i] != 0x7f);
    CHECK(!starts(uri, "javascript:") && !starts(uri, "data:"));
    bool app = false;
    for (const char *p = schemes; *p;) { /* the schemes asked for, each followed by ':' */
        size_t k = strcspn(p, ",");
        app = app || (strncmp(uri, p, k) == 0 && uri[k] == ':');
        p += k + (p[k] == ',');
    }
    if (app)
        return;
    if (starts(uri, "https://")) {
        size_t alen = strcspn(uri + 8, "/?");
        CHECK(alen > 0 && memchr(uri + 8, '@', alen) == NULL);
        return;
    }
    CHECK(starts(uri, "http://") && loopback_http(uri));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *uri = malloc(size + 1);
    if (uri == NULL)
        abort();
    memcpy(uri, data, size);
    uri[size] = '\0'; /* a URI ends at the first NUL, as a JSON string or a query value would */
    if (authserver_redirect_ok_in(uri, NULL))
        check_accepted_uri(uri, AUTHSERVER_DEFAULT_SCHEMES);
    if (authserver_redirect_ok_in(uri, "myapp"))
        check_accepted_uri(uri, "myapp");
    CHECK(authserver_redirect_ok(uri) == authserver_redirect_ok_in(uri, NULL));
    /* Any URI matches itself; as a request against a registered loopback URI, a match is
     * that URI but for the port. */
    CHECK(clientmeta_redirect_matches(uri, uri));
    static const char *const registered[] = {"http://127.0.0.1:7777/cb", "http://[::1]/cb",
                                             "http://localhost:3335/cb"};
    static const char *const hosts[] = {"http://127.0.0.1", "http://[::1]", "http://localhost"};
    for (size_t i = 0; i < sizeof registered / sizeof *registered; i++) {
        if (!clientmeta_redirect_matches(registered[i], uri))
            continue;
        const char *host = hosts[i];
        CHECK(starts(uri, host));
        const char *p = uri + strlen(host);
        if (*p == ':') {
            CHECK(p[1] != '0' && strtoul(p + 1, NULL, 10) <= 65535); /* a port, one spelling */
            p += 1 + strspn(p + 1, "0123456789");
        }
        CHECK(strcmp(p, "/cb") == 0);
    }
    free(uri);

    json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    enum oauth_err code = OAUTH_INVALID_CLIENT_METADATA;
    enum clientmeta_auth auth;
    const char *why = clientmeta_check_registration(doc, NULL, &code, &auth);
    if (why == NULL) {
        CHECK(json_is_object(doc));
        json_t *uris = json_object_get(doc, "redirect_uris"), *u;
        CHECK(json_array_size(uris) >= 1 && json_array_size(uris) <= CLIENTMETA_REDIRECTS_MAX);
        size_t i;
        json_array_foreach(uris, i, u)
        {
            CHECK(json_is_string(u));
            check_accepted_uri(json_string_value(u), AUTHSERVER_DEFAULT_SCHEMES);
        }
        json_t *method = json_object_get(doc, "token_endpoint_auth_method");
        CHECK(method == NULL ? auth == CLIENTMETA_AUTH_NONE
                             : strcmp(json_string_value(method), clientmeta_auth_name(auth)) == 0);
        json_t *name = json_object_get(doc, "client_name");
        CHECK(name == NULL || clientmeta_name_ok(json_string_value(name)));
    } else {
        CHECK(*why != '\0');
        CHECK(code == OAUTH_INVALID_CLIENT_METADATA || code == OAUTH_INVALID_REDIRECT_URI);
    }
    json_decref(doc);
    return 0;
}
