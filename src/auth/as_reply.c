/* as_reply.c — the authorization server's answers: OAuth errors and JSON (RFC 6749 5.2), our own
 * HTML pages (escaped, not framable, not cached) and the redirect back to a client. */
#include "as_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "httpd.h"

void as_reply_json(struct hreq *r, unsigned status, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    hreq_add_header(r, "Cache-Control", "no-store");
    if (text == NULL) {
        hreq_reply(r, 500, "application/json", "{\"error\":\"server_error\"}", 24);
        return;
    }
    hreq_reply_take(r, status, "application/json", text, strlen(text));
}

/* An OAuth error (RFC 6749 5.2) as JSON. */
void as_oauth_error(struct hreq *r, unsigned status, enum oauth_err e, const char *why)
{
    as_reply_json(r, status,
                  json_pack("{s:s, s:s}", "error", oauth_err_name(e), "error_description", why));
}

void as_html_escape(struct buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            buf_appends(b, "&amp;");
            break;
        case '<':
            buf_appends(b, "&lt;");
            break;
        case '>':
            buf_appends(b, "&gt;");
            break;
        case '"':
            buf_appends(b, "&quot;");
            break;
        case '\'':
            buf_appends(b, "&#39;");
            break;
        default:
            buf_append(b, s, 1);
        }
    }
}

/* Every HTML answer: our own markup only, no script, not framable, not cached, no referrer. */
static void html_headers(struct hreq *r)
{
    hreq_add_header(r, "Content-Security-Policy",
                    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; "
                    "base-uri 'none'");
    hreq_add_header(r, "X-Frame-Options", "DENY");
    hreq_add_header(r, "X-Content-Type-Options", "nosniff");
    /* same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with the
     * form's POST (Fetch, "append a request Origin header"), which same_origin() must refuse.
     * Other sites, the client's redirect URI among them, still get no Referer. */
    hreq_add_header(r, "Referrer-Policy", "same-origin");
    hreq_add_header(r, "Cache-Control", "no-store");
}

void as_page_start(struct buf *b, const char *title)
{
    buf_appends(b, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width\"><title>");
    as_html_escape(b, title);
    buf_appends(b, "</title><style>body{font:16px sans-serif;max-width:34em;margin:3em auto;"
                   "padding:0 1em}code{background:#eee;padding:0 .2em}</style></head><body><h1>");
    as_html_escape(b, title);
    buf_appends(b, "</h1>");
}

void as_reply_page(struct hreq *r, unsigned status, struct buf *b)
{
    buf_appends(b, "</body></html>\n");
    html_headers(r);
    hreq_reply(r, status, "text/html; charset=utf-8", b->data, b->len);
    buf_cleanup(b);
}

/* A page that ends the flow here (an unknown client, a redirect URI we will not send to). */
void as_error_page(struct hreq *r, unsigned status, const char *title, const char *text)
{
    struct buf b;
    buf_init(&b, 0);
    as_page_start(&b, title);
    buf_appends(&b, "<p>");
    as_html_escape(&b, text);
    buf_appends(&b, "</p>");
    as_reply_page(r, status, &b);
}

static void url_escape(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            buf_append(b, s, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            buf_append(b, e, 3);
        }
    }
}

/* 302 to the client's (checked) redirect URI with name=value pairs, the state and our issuer
 * (RFC 9207) added. */
void as_redirect_back(struct authserver *as, struct hreq *r, const char *redirect_uri,
                      const char *state, const char *k1, const char *v1, const char *k2,
                      const char *v2)
{
    struct buf b;
    buf_init(&b, 0);
    buf_appends(&b, redirect_uri);
    buf_appends(&b, strchr(redirect_uri, '?') ? "&" : "?");
    buf_appends(&b, k1);
    buf_appends(&b, "=");
    url_escape(&b, v1);
    if (k2) {
        buf_printf(&b, "&%s=", k2);
        url_escape(&b, v2);
    }
    if (state && *state) {
        buf_appends(&b, "&state=");
        url_escape(&b, state);
    }
    buf_appends(&b, "&iss=");
    url_escape(&b, as->issuer);
    hreq_add_header(r, "Location", b.data);
    hreq_add_header(r, "Cache-Control", "no-store");
    /* The redirect URI is another site: it gets no Referer naming our consent page. */
    hreq_add_header(r, "Referrer-Policy", "same-origin");
    hreq_reply(r, 302, "text/plain", "", 0);
    buf_cleanup(&b);
}

void as_redirect_error(struct authserver *as, struct hreq *r, const char *redirect_uri,
                       const char *state, enum oauth_err e, const char *why)
{
    as_redirect_back(as, r, redirect_uri, state, "error", oauth_err_name(e),
                     why ? "error_description" : NULL, why);
}
