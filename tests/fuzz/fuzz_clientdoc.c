/* fuzz_clientdoc.c — libFuzzer target for client ID metadata documents (src/auth/clientdoc.c),
 * which reads a client_id URL from any client and a document from any host that client names.
 * The input's first line is taken as the URL, the rest as the document. A URL found good keeps
 * the rules (https, a host, a path, no userinfo, fragment or control character, capped); a
 * document that parses names its client with printable text only, lists 1 to 10 redirect URIs
 * each of which the rule accepted, and came with a client_id equal to the URL. Every input also
 * goes through the Cache-Control reader, whose answer stays within its bounds. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clientdoc.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A stand-in for authserver_redirect_ok_in (not linked here): https URIs only. */
static bool rule(const char *uri, const char *schemes)
{
    (void)schemes;
    return strncmp(uri, "https://", 8) == 0 && strlen(uri) <= 512;
}

static void check_text(const char *s, size_t max)
{
    size_t n = strlen(s);
    CHECK(n <= max);
    for (size_t i = 0; i < n; i++)
        CHECK((unsigned char)s[i] >= 0x20 && s[i] != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    size_t ulen = nl ? (size_t)(nl - text) : size;
    char *url = malloc(ulen + 1), *cc = malloc(size + 1);
    if (url == NULL || cc == NULL)
        abort();
    memcpy(url, text, ulen);
    url[ulen] = '\0';
    const char *why = NULL;
    bool url_good = clientdoc_url_ok(url, &why); /* url ends at the first NUL, if any */
    CHECK(url_good ? why == NULL : why != NULL);
    char host[256];
    if (url_good) {
        CHECK(strncmp(url, "https://", 8) == 0 && strlen(url) <= CLIENTDOC_URL_MAX);
        CHECK(strchr(url, '#') == NULL && strchr(url + 8, '/') != NULL);
        CHECK(clientdoc_url_host(url, host, sizeof host));
        CHECK(host[0] != '\0');
        check_text(url, CLIENTDOC_URL_MAX);
    }
    struct clientdoc d;
    char err[300];
    const char *doc = nl ? nl + 1 : text + size;
    size_t dlen = size - (size_t)(doc - text);
    if (clientdoc_parse(url, doc, dlen, rule, NULL, &d, err, sizeof err)) {
        CHECK(url_good);
        CHECK(dlen <= CLIENTDOC_BYTES_MAX);
        CHECK(d.name != NULL);
        check_text(d.name, 255);
        check_text(d.host, sizeof d.host - 1);
        CHECK(d.nredirects >= 1 && d.nredirects <= CLIENTDOC_REDIRECTS_MAX);
        for (size_t i = 0; i < d.nredirects; i++)
            CHECK(rule(d.redirects[i], NULL));
        clientdoc_clear(&d);
        CHECK(d.name == NULL && d.nredirects == 0);
    } else {
        CHECK(d.name == NULL && d.nredirects == 0);
        CHECK(err[0] != '\0' && strlen(err) < sizeof err);
    }
    memcpy(cc, text, size);
    cc[size] = '\0';
    CHECK(clientdoc_ttl(cc) <= CLIENTDOC_TTL_MAX);
    free(url);
    free(cc);
    return 0;
}
