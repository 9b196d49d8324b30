/* tokensfile.c — the tokens file (TOKENS_FILE) as principals: pure parsing and validation, fuzzed
 * (tests/fuzz/fuzz_tokens.c). The file holds hashes only, so nothing in it is a secret, but a
 * refusal still never quotes a hash: the reasons name the entry and the key. Anything the file
 * could mean two ways is refused (unknown keys and scopes, duplicate names or hashes), so a
 * typo can never widen what a role may do. */
#include "hex.h"
#include "principal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "claimmap.h"
#include "mem.h"
#include "scopes.h"
#include "utf8.h"
#include "yamljson.h"

static const char *const entry_keys[] = {"name", "sha256", "scopes", "agents", "expires", "limits"};

bool principal_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > PRINCIPAL_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || (i > 0 && (c == '-' || c == '_' || c == '.'))))
            return false;
    }
    return true;
}

bool principal_scope_known(const char *scope)
{
    const struct scope_info *family = scope_family(scope);
    return scope_fixed(scope) || (family && principal_name_ok(scope + strlen(family->prefix)));
}

static bool digits(const char *p, int n, int *out)
{
    *out = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        *out = *out * 10 + (p[i] - '0');
    }
    return true;
}

bool tokens_parse_time(const char *t, time_t *out)
{
    int y, mo, d, h = 0, mi = 0, s = 0;
    size_t n = strlen(t);
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    if (n != 10 && n != 20)
        return false;
    if (!digits(t, 4, &y) || t[4] != '-' || !digits(t + 5, 2, &mo) || t[7] != '-' ||
        !digits(t + 8, 2, &d))
        return false;
    if (n == 20 &&
        (t[10] != 'T' || !digits(t + 11, 2, &h) || t[13] != ':' || !digits(t + 14, 2, &mi) ||
         t[16] != ':' || !digits(t + 17, 2, &s) || t[19] != 'Z'))
        return false;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || s > 59)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap)
        return false;
    /* timegm reads the fields as UTC whatever TZ says; they are valid, so it cannot fail. */
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = s};
    *out = timegm(&tm);
    return true;
}

/* A list value: a YAML sequence of text, or one text of items separated by spaces or commas
 * (as `token gen --scopes` takes them). Returns the items (count in *n), or NULL with a reason. */
static char **list_value(json_t *v, size_t *n, const char *what, size_t entry, char *err,
                         size_t errlen)
{
    char **out = NULL;
    *n = 0;
    if (json_is_array(v)) {
        size_t i;
        json_t *item;
        if (json_array_size(v) > PRINCIPAL_LIST_MAX) {
            snprintf(err, errlen, "entry #%zu: at most %d %s", entry, PRINCIPAL_LIST_MAX, what);
            return NULL;
        }
        out = xcalloc(json_array_size(v) + 1, sizeof *out);
        json_array_foreach(v, i, item)
        {
            if (!json_is_string(item) ||
                strlen(json_string_value(item)) != json_string_length(item)) {
                snprintf(err, errlen, "entry #%zu: every item of '%s' must be text", entry, what);
                goto bad;
            }
            out[(*n)++] = xstrdup(json_string_value(item));
        }
        return out;
    }
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
        snprintf(err, errlen, "entry #%zu: '%s' must be a list", entry, what);
        return NULL;
    }
    const char *p = json_string_value(v);
    out = xcalloc(PRINCIPAL_LIST_MAX + 1, sizeof *out);
    for (p += strspn(p, ", \t"); *p; p += strspn(p, ", \t")) {
        size_t k = strcspn(p, ", \t");
        if (*n == PRINCIPAL_LIST_MAX) {
            snprintf(err, errlen, "entry #%zu: at most %d %s", entry, PRINCIPAL_LIST_MAX, what);
            goto bad;
        }
        out[(*n)++] = xstrndup(p, k);
        p += k;
    }
    return out;
bad:
    for (size_t i = 0; i < *n; i++)
        free(out[i]);
    free(out);
    *n = 0;
    return NULL;
}

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void principal_cleanup(struct principal *p)
{
    strv_free(p->scopes, p->nscopes);
    strv_free(p->agents, p->nagents);
    memset(p, 0, sizeof *p);
}

void principals_unref(struct principals *s)
{
    if (s == NULL || --s->refs > 0)
        return;
    for (size_t i = 0; i < s->n; i++)
        principal_cleanup(&s->v[i]);
    free(s->v);
    claimmap_free(s->claims);
    free(s);
}

struct principals *principals_ref(struct principals *s)
{
    s->refs++;
    return s;
}

/* A count of limits: (text, every scalar is): 0 to max, decimal digits only. */
static bool limit_value(json_t *v, unsigned max, unsigned *out)
{
    const char *t = json_string_value(v);
    unsigned long n = 0;
    if (t == NULL || *t == '\0' || strlen(t) > 7 || strspn(t, "0123456789") != strlen(t))
        return false;
    n = strtoul(t, NULL, 10);
    if (n > max)
        return false;
    *out = (unsigned)n;
    return true;
}

bool tokens_parse_limits(json_t *l, const char *who, unsigned *per_min_out, unsigned *in_flight,
                         char *err, size_t errlen)
{
    const char *key;
    json_t *v;

    if (!json_is_object(l)) {
        snprintf(err, errlen, "%s: 'limits' must be a mapping such as {calls_per_min: 60}", who);
        return false;
    }
    json_object_foreach(l, key, v)
    {
        bool ok;
        bool per_min = strcmp(key, "calls_per_min") == 0;
        if (per_min)
            ok = limit_value(v, PRINCIPAL_PER_MIN_MAX, per_min_out);
        else if (strcmp(key, "calls_in_flight") == 0)
            ok = limit_value(v, PRINCIPAL_IN_FLIGHT_MAX, in_flight);
        else {
            snprintf(err, errlen,
                     "%s: unknown key 'limits.%.40s' (known: calls_per_min, calls_in_flight)", who,
                     key);
            return false;
        }
        if (!ok) {
            snprintf(err, errlen, "%s: 'limits.%s' must be a whole number 0-%u", who, key,
                     per_min ? (unsigned)PRINCIPAL_PER_MIN_MAX : (unsigned)PRINCIPAL_IN_FLIGHT_MAX);
            return false;
        }
    }
    return true;
}

/* One entry of the file into p (zeroed); false with a reason in err. */
static bool parse_entry(json_t *e, size_t no, struct principal *p, char *err, size_t errlen)
{
    const char *key;
    json_t *v;

    if (!json_is_object(e)) {
        snprintf(err, errlen, "entry #%zu is not a mapping", no);
        return false;
    }
    json_object_foreach(e, key, v)
    {
        bool known = false;
        for (size_t k = 0; k < sizeof entry_keys / sizeof *entry_keys; k++)
            known = known || strcmp(key, entry_keys[k]) == 0;
        if (!known) {
            snprintf(err, errlen, "entry #%zu: unknown key '%.40s'", no, key);
            return false;
        }
        bool is_list = strcmp(key, "scopes") == 0 || strcmp(key, "agents") == 0;
        if (!is_list && strcmp(key, "limits") != 0 &&
            (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))) {
            snprintf(err, errlen, "entry #%zu: '%s' must be text", no, key);
            return false;
        }
    }
    const char *name = json_string_value(json_object_get(e, "name"));
    if (name == NULL || !principal_name_ok(name)) {
        snprintf(err, errlen, "entry #%zu: 'name' must be 1-64 of [A-Za-z0-9._-]", no);
        return false;
    }
    if (strcmp(name, PRINCIPAL_OWNER) == 0) {
        snprintf(err, errlen, "entry #%zu: the name 'owner' is MCP_AUTH_TOKEN's", no);
        return false;
    }
    snprintf(p->name, sizeof p->name, "%s", name);
    const char *hash = json_string_value(json_object_get(e, "sha256"));
    if (hash == NULL || !hex_decode(hash, p->hash, sizeof p->hash)) {
        snprintf(err, errlen,
                 "principal '%s': 'sha256' must be the 64 hex characters of the token's SHA-256 "
                 "(hermes-mcp token gen --name prints it)",
                 name);
        return false;
    }
    json_t *scopes = json_object_get(e, "scopes");
    if (scopes == NULL) {
        snprintf(err, errlen, "principal '%s': 'scopes' is missing", name);
        return false;
    }
    if ((p->scopes = list_value(scopes, &p->nscopes, "scopes", no, err, errlen)) == NULL)
        return false;
    if (p->nscopes == 0) {
        snprintf(err, errlen, "principal '%s': 'scopes' is empty", name);
        return false;
    }
    for (size_t i = 0; i < p->nscopes; i++)
        if (!principal_scope_known(p->scopes[i])) {
            char known[160] = "";
            for (size_t k = 0; scope_at(k); k++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "",
                         scope_at(k)->name);
            snprintf(err, errlen, "principal '%s': unknown scope '%.64s' (known: %s)", name,
                     p->scopes[i], known);
            return false;
        }
    json_t *agents = json_object_get(e, "agents");
    if (agents) {
        if ((p->agents = list_value(agents, &p->nagents, "agents", no, err, errlen)) == NULL)
            return false;
        for (size_t i = 0; i < p->nagents; i++)
            if (!principal_name_ok(p->agents[i])) {
                snprintf(err, errlen, "principal '%s': agent names must be 1-64 of [A-Za-z0-9._-]",
                         name);
                return false;
            }
    }
    const char *expires = json_string_value(json_object_get(e, "expires"));
    if (expires && (!tokens_parse_time(expires, &p->expires) || p->expires == 0)) {
        snprintf(err, errlen,
                 "principal '%s': 'expires' must be a UTC date, 2027-01-31 or "
                 "2027-01-31T12:00:00Z",
                 name);
        return false;
    }
    json_t *limits = json_object_get(e, "limits");
    char who[PRINCIPAL_NAME_MAX + 16];
    snprintf(who, sizeof who, "principal '%s'", p->name);
    return limits == NULL ||
           tokens_parse_limits(limits, who, &p->calls_per_min, &p->calls_in_flight, err, errlen);
}

static struct principals *parse_tokens(json_t *list, char *err, size_t errlen);

static struct principals *parse_doc(json_t *doc, char *err, size_t errlen)
{
    const char *key;
    json_t *v;

    if (!json_is_object(doc)) {
        snprintf(err, errlen, "the tokens file must be a mapping with 'tokens'");
        return NULL;
    }
    json_object_foreach(doc, key, v) if (strcmp(key, "tokens") && strcmp(key, "oidc"))
    {
        snprintf(err, errlen, "unknown top-level key '%.40s' (known: tokens, oidc)", key);
        return NULL;
    }
    json_t *list = json_object_get(doc, "tokens");
    if (list == NULL && json_object_get(doc, "oidc"))
        list = json_array(); /* only mappings for an identity provider's principals */
    else
        json_incref(list);
    struct principals *s = list ? parse_tokens(list, err, errlen) : NULL;
    json_decref(list);
    if (list == NULL)
        snprintf(err, errlen, "'tokens' must be a list");
    json_t *map = json_object_get(doc, "oidc");
    if (s && map && !claimmap_parse(map, &s->claims, err, errlen)) {
        principals_unref(s);
        return NULL;
    }
    return s;
}

static struct principals *parse_tokens(json_t *list, char *err, size_t errlen)
{
    if (!json_is_array(list)) {
        snprintf(err, errlen, "'tokens' must be a list");
        return NULL;
    }
    if (json_array_size(list) > PRINCIPALS_MAX) {
        snprintf(err, errlen, "at most %d tokens", PRINCIPALS_MAX);
        return NULL;
    }
    struct principals *s = xcalloc(1, sizeof *s);
    s->refs = 1;
    s->v = xcalloc(json_array_size(list) + 1, sizeof *s->v);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        struct principal *p = &s->v[s->n++];
        if (!parse_entry(e, i + 1, p, err, errlen))
            goto bad;
        for (size_t k = 0; k + 1 < s->n; k++) {
            if (strcmp(s->v[k].name, p->name) == 0) {
                snprintf(err, errlen, "principal '%s' is listed twice", p->name);
                goto bad;
            }
            if (memcmp(s->v[k].hash, p->hash, sizeof p->hash) == 0) {
                snprintf(err, errlen, "principals '%s' and '%s' have the same token", s->v[k].name,
                         p->name);
                goto bad;
            }
        }
    }
    return s;
bad:
    principals_unref(s);
    return NULL;
}

struct principals *tokens_parse(const char *text, size_t len, char *err, size_t errlen)
{
    json_t *doc = yamljson_parse(text, len, "the tokens file", err, errlen);
    struct principals *s = doc ? parse_doc(doc, err, errlen) : NULL;
    json_decref(doc);
    if (s == NULL)
        utf8_clean(err); /* it may quote the file: one valid line whatever the file holds */
    return s;
}
