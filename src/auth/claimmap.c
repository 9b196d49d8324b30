/* claimmap.c — an identity provider's claims as our scopes, agents and limits (claimmap.h). */
#include "claimmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "principal.h"

struct scope_alias {
    char *from; /* the provider's name */
    char **to;  /* ours */
    size_t nto;
};

struct claim_rule {
    char *issuer; /* NULL: every issuer's tokens */
    char *claim, *value;
    char **agents; /* NULL: every agent */
    size_t nagents;
    unsigned calls_per_min, calls_in_flight;
};

struct claimmap {
    struct scope_alias *alias;
    size_t nalias;
    struct claim_rule *rules;
    size_t nrules;
};

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void claimmap_free(struct claimmap *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->nalias; i++) {
        free(m->alias[i].from);
        strv_free(m->alias[i].to, m->alias[i].nto);
    }
    for (size_t i = 0; i < m->nrules; i++) {
        free(m->rules[i].issuer);
        free(m->rules[i].claim);
        free(m->rules[i].value);
        strv_free(m->rules[i].agents, m->rules[i].nagents);
    }
    free(m->alias);
    free(m->rules);
    free(m);
}

const char *claimmap_unknown_issuer(const struct claimmap *m, const char *issuers)
{
    for (size_t r = 0; m && r < m->nrules; r++) {
        const char *want = m->rules[r].issuer;
        size_t n = want ? strlen(want) : 0;
        bool found = want == NULL;
        for (const char *w = issuers ? issuers : ""; *w && !found;) {
            w += strspn(w, " ");
            size_t k = strcspn(w, " ");
            found = k == n && k > 0 && strncmp(w, want, n) == 0;
            w += k;
        }
        if (!found)
            return want;
    }
    return NULL;
}

bool claimmap_text_ok(json_t *v, size_t max)
{
    const char *t = json_string_value(v);
    return t && *t && strlen(t) == json_string_length(v) && strlen(t) <= max;
}

static bool text_ok(json_t *v)
{
    return claimmap_text_ok(v, CLAIMMAP_TEXT_MAX);
}

/* A list of names (or one name) checked by ok: into *out. */
static bool names(json_t *v, bool (*ok)(const char *), const char *what, char ***out, size_t *n,
                  char *err, size_t errlen)
{
    json_t *one = json_is_array(v) ? NULL : v;
    size_t count = one ? 1 : json_array_size(v);
    if (count == 0 || count > PRINCIPAL_LIST_MAX) {
        snprintf(err, errlen, "%s: 1-%d names", what, PRINCIPAL_LIST_MAX);
        return false;
    }
    *out = xcalloc(count, sizeof **out);
    for (size_t i = 0; i < count; i++) {
        json_t *item = one ? one : json_array_get(v, i);
        if (!text_ok(item) || !ok(json_string_value(item))) {
            snprintf(err, errlen, "%s: '%.64s' is not one of ours", what,
                     text_ok(item) ? json_string_value(item) : "(not text)");
            return false;
        }
        (*out)[(*n)++] = xstrdup(json_string_value(item));
    }
    return true;
}

static bool parse_aliases(json_t *v, struct claimmap *m, char *err, size_t errlen)
{
    const char *key;
    json_t *to;
    if (!json_is_object(v) || json_object_size(v) > CLAIMMAP_SCOPES_MAX) {
        snprintf(err, errlen,
                 "oidc: 'scopes' must map at most %d provider names to ours, such as "
                 "{Hermes.Read: [hermes:read]}",
                 CLAIMMAP_SCOPES_MAX);
        return false;
    }
    m->alias = xcalloc(json_object_size(v) + 1, sizeof *m->alias);
    json_object_foreach(v, key, to)
    {
        struct scope_alias *a = &m->alias[m->nalias++];
        a->from = xstrdup(key);
        char what[96];
        snprintf(what, sizeof what, "oidc: scopes.%.40s", key);
        if (strlen(key) > CLAIMMAP_TEXT_MAX ||
            !names(to, principal_scope_known, what, &a->to, &a->nto, err, errlen))
            return false;
    }
    return true;
}

static bool parse_rule(json_t *r, size_t no, struct claim_rule *out, char *err, size_t errlen)
{
    static const char *const keys[] = {"issuer", "claim", "value", "agents", "limits"};
    char who[48];
    const char *key;
    json_t *v;
    snprintf(who, sizeof who, "oidc: rule #%zu", no);
    if (!json_is_object(r)) {
        snprintf(err, errlen, "%s must be a mapping with claim and value", who);
        return false;
    }
    json_object_foreach(r, key, v)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            known |= strcmp(key, keys[i]) == 0;
        if (!known) {
            snprintf(err, errlen,
                     "%s: unknown key '%.40s' (known: issuer, claim, value, agents, "
                     "limits)",
                     who, key);
            return false;
        }
    }
    json_t *claim = json_object_get(r, "claim"), *value = json_object_get(r, "value");
    if (!text_ok(claim) || !text_ok(value)) {
        snprintf(err, errlen, "%s: 'claim' and 'value' must be text of 1-%d bytes", who,
                 CLAIMMAP_TEXT_MAX);
        return false;
    }
    json_t *issuer = json_object_get(r, "issuer");
    if (issuer && !claimmap_text_ok(issuer, CLAIMMAP_ISSUER_MAX)) {
        snprintf(err, errlen, "%s: 'issuer' must be an issuer's URL, text of 1-%d bytes", who,
                 CLAIMMAP_ISSUER_MAX);
        return false;
    }
    out->issuer = issuer ? xstrdup(json_string_value(issuer)) : NULL;
    out->claim = xstrdup(json_string_value(claim));
    out->value = xstrdup(json_string_value(value));
    json_t *agents = json_object_get(r, "agents");
    char what[64];
    snprintf(what, sizeof what, "%s: agents", who);
    if (agents && !names(agents, principal_name_ok, what, &out->agents, &out->nagents, err, errlen))
        return false;
    json_t *limits = json_object_get(r, "limits");
    return limits == NULL || tokens_parse_limits(limits, who, &out->calls_per_min,
                                                 &out->calls_in_flight, err, errlen);
}

bool claimmap_parse(json_t *v, struct claimmap **out, char *err, size_t errlen)
{
    const char *key;
    json_t *x;
    *out = NULL;
    if (!json_is_object(v)) {
        snprintf(err, errlen, "'oidc' must be a mapping with scopes and/or rules");
        return false;
    }
    json_object_foreach(v, key, x) if (strcmp(key, "scopes") && strcmp(key, "rules"))
    {
        snprintf(err, errlen, "oidc: unknown key '%.40s' (known: scopes, rules)", key);
        return false;
    }
    struct claimmap *m = xcalloc(1, sizeof *m);
    json_t *aliases = json_object_get(v, "scopes"), *rules = json_object_get(v, "rules");
    if (aliases && !parse_aliases(aliases, m, err, errlen))
        goto bad;
    if (rules && (!json_is_array(rules) || json_array_size(rules) > CLAIMMAP_RULES_MAX)) {
        snprintf(err, errlen, "oidc: 'rules' must be a list of at most %d", CLAIMMAP_RULES_MAX);
        goto bad;
    }
    m->rules = xcalloc(json_array_size(rules) + 1, sizeof *m->rules);
    size_t i;
    json_array_foreach(rules, i, x)
    {
        if (!parse_rule(x, i + 1, &m->rules[m->nrules++], err, errlen))
            goto bad;
    }
    *out = m;
    return true;
bad:
    claimmap_free(m);
    return false;
}

static bool has_scope(const struct principal *p, const char *s)
{
    for (size_t i = 0; i < p->nscopes; i++)
        if (strcmp(p->scopes[i], s) == 0)
            return true;
    return false;
}

static void grant(struct principal *p, const char *s)
{
    if (p->nscopes < PRINCIPAL_LIST_MAX && !has_scope(p, s))
        p->scopes[p->nscopes++] = xstrdup(s);
}

/* One scope the token carries: ours as it is, else what the map says it stands for. */
static void grant_named(const struct claimmap *m, const char *name, size_t len, struct principal *p)
{
    char one[CLAIMMAP_TEXT_MAX + 1];
    if (len == 0 || len > CLAIMMAP_TEXT_MAX)
        return;
    memcpy(one, name, len);
    one[len] = '\0';
    if (strlen(one) != len) /* a NUL inside: "hermes:admin\u0000x" is not hermes:admin */
        return;
    if (principal_scope_known(one))
        grant(p, one);
    for (size_t i = 0; m && i < m->nalias; i++)
        if (strcmp(m->alias[i].from, one) == 0)
            for (size_t k = 0; k < m->alias[i].nto; k++)
                grant(p, m->alias[i].to[k]);
}

static bool claim_names(json_t *claims, const char *claim, const char *value)
{
    json_t *c = json_object_get(claims, claim), *item;
    size_t i;
    /* Whole strings only: a value with a NUL inside must not match its prefix. */
    if (json_is_string(c))
        return json_string_length(c) == strlen(value) && strcmp(json_string_value(c), value) == 0;
    json_array_foreach(c, i, item) if (json_is_string(item) &&
                                       json_string_length(item) == strlen(value) &&
                                       strcmp(json_string_value(item), value) == 0) return true;
    return false;
}

/* The scopes one claim carries: a space-separated string, or an array of strings. */
static void grant_claim(const struct claimmap *m, json_t *sc, struct principal *p)
{
    json_t *item;
    size_t i;
    if (json_is_string(sc)) {
        for (const char *s = json_string_value(sc); *s;) {
            s += strspn(s, " ");
            size_t n = strcspn(s, " ");
            grant_named(m, s, n, p);
            s += n;
        }
    }
    json_array_foreach(sc, i, item) if (json_is_string(item))
        grant_named(m, json_string_value(item), json_string_length(item), p);
}

void claimmap_apply(const struct claimmap *m, json_t *claims, const char *issuer,
                    const char *scopes_claims, struct principal *p)
{
    if (p->scopes == NULL)
        p->scopes = xcalloc(PRINCIPAL_LIST_MAX, sizeof *p->scopes);
    for (const char *c = scopes_claims; *c;) {
        c += strspn(c, " ");
        size_t n = strcspn(c, " ");
        char name[CLAIMMAP_TEXT_MAX + 1];
        if (n > 0 && n <= CLAIMMAP_TEXT_MAX) {
            memcpy(name, c, n);
            name[n] = '\0';
            grant_claim(m, json_object_get(claims, name), p);
        }
        c += n;
    }
    for (size_t r = 0; m && r < m->nrules; r++) {
        const struct claim_rule *rule = &m->rules[r];
        if (rule->issuer && (issuer == NULL || strcmp(rule->issuer, issuer) != 0))
            continue;
        if (!claim_names(claims, rule->claim, rule->value))
            continue;
        if (rule->nagents) {
            p->agents = xcalloc(rule->nagents, sizeof *p->agents);
            for (size_t k = 0; k < rule->nagents; k++)
                p->agents[p->nagents++] = xstrdup(rule->agents[k]);
        }
        p->calls_per_min = rule->calls_per_min;
        p->calls_in_flight = rule->calls_in_flight;
        return;
    }
}
