/* fuzz_tokens.c — libFuzzer target for the tokens file parser (src/auth/tokensfile.c). The raw
 * input (not NUL-terminated, as principals.c reads the file) is parsed. An accepted file must give
 * principals that keep every documented rule (names well formed, unique and never "owner",
 * hashes unique, every scope known, agent names well formed, at most PRINCIPALS_MAX entries), and
 * the same text must give the same set again; a refusal must give a one-line, NUL-terminated,
 * valid UTF-8 reason (it goes to the log). The input as a date is also checked against what
 * tokens_parse_time promises. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_check.h"
#include "principal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ERR_LEN 400 /* principals.c: char why[400] */

static void check_principal(const struct principal *p)
{
    CHECK(principal_name_ok(p->name));
    CHECK(strcmp(p->name, PRINCIPAL_OWNER) != 0);
    CHECK(!p->all);
    CHECK(p->nscopes >= 1 && p->nscopes <= PRINCIPAL_LIST_MAX);
    for (size_t i = 0; i < p->nscopes; i++)
        CHECK(principal_scope_known(p->scopes[i]));
    CHECK(p->nagents <= PRINCIPAL_LIST_MAX);
    CHECK(p->agents != NULL || p->nagents == 0);
    for (size_t i = 0; i < p->nagents; i++)
        CHECK(principal_name_ok(p->agents[i]));
    CHECK(p->expires >= 0);
}

static bool same(const struct principals *a, const struct principals *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        const struct principal *x = &a->v[i], *y = &b->v[i];
        if (strcmp(x->name, y->name) || memcmp(x->hash, y->hash, 32) || x->nscopes != y->nscopes ||
            x->nagents != y->nagents || x->expires != y->expires)
            return false;
    }
    return true;
}

static void check_refusal(const char *err, size_t len)
{
    CHECK(memchr(err, '\0', len) != NULL);
    CHECK(err[0] != '\0');
    CHECK(strchr(err, '\n') == NULL && strchr(err, '\r') == NULL);
    json_t *s = json_string(err);
    CHECK(s != NULL && "tokens_parse: err is not valid UTF-8");
    json_decref(s);
}

/* What tokens_parse_time accepts: the two documented shapes, nothing before 1970. */
static void fuzz_time(const uint8_t *data, size_t size)
{
    char text[32];
    time_t t;
    if (size >= sizeof text)
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    if (!tokens_parse_time(text, &t))
        return;
    size_t n = strlen(text);
    CHECK(n == 10 || n == 20);
    CHECK(text[4] == '-' && text[7] == '-');
    CHECK(n == 10 || (text[10] == 'T' && text[19] == 'Z'));
    CHECK(t >= 0);
    CHECK(n != 10 || t % 86400 == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[ERR_LEN];
    memset(err, 'Z', sizeof err);
    struct principals *s = tokens_parse((const char *)data, size, err, sizeof err);
    if (s == NULL) {
        check_refusal(err, sizeof err);
    } else {
        CHECK(s->refs == 1 && s->n <= PRINCIPALS_MAX);
        for (size_t i = 0; i < s->n; i++) {
            check_principal(&s->v[i]);
            for (size_t j = 0; j < i; j++) {
                CHECK(strcmp(s->v[i].name, s->v[j].name) != 0);
                CHECK(memcmp(s->v[i].hash, s->v[j].hash, 32) != 0);
            }
        }
        char err2[ERR_LEN];
        struct principals *again = tokens_parse((const char *)data, size, err2, sizeof err2);
        CHECK(again != NULL && same(s, again));
        principals_unref(again);
        principals_unref(s);
    }
    /* A small err buffer is never overrun and always terminated. */
    char *small = malloc(16);
    if (small == NULL)
        abort();
    memset(small, 'Z', 16);
    s = tokens_parse((const char *)data, size, small, 16);
    if (s == NULL)
        CHECK(memchr(small, '\0', 16) != NULL && small[0] != '\0');
    principals_unref(s);
    free(small);
    fuzz_time(data, size);
    return 0;
}
