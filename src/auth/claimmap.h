/* claimmap.h — what an identity provider's token grants here: the oidc: section of the tokens
 * file. A provider that cannot issue our scope names (Entra ID app roles, say) has them mapped
 * ("scopes": its name to ours), and rules give the principals a claim value names an agents
 * allowlist and limits. Pure: parsed without I/O (fuzzed with the tokens file), applied to a
 * token's verified claims. Loop thread. */
#ifndef HM_CLAIMMAP_H
#define HM_CLAIMMAP_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct claimmap;
struct principal;

#define CLAIMMAP_SCOPES_MAX 64 /* provider names mapped */
#define CLAIMMAP_RULES_MAX 64
#define CLAIMMAP_TEXT_MAX 256    /* a claim name, a claim value or a provider's scope name */
#define CLAIMMAP_ISSUER_MAX 1024 /* an issuer's URL */
/* A claim's text: a JSON string of 1..max bytes without an embedded NUL (which would make it
 * pass for a shorter one). */
bool claimmap_text_ok(json_t *v, size_t max);

/* The oidc: mapping ({scopes: {NAME: [ours...]}, rules: [{issuer, claim, value, agents,
 * limits}]})
 * into *out; false with a one-line reason in err. */
bool claimmap_parse(json_t *v, struct claimmap **out, char *err, size_t errlen);
void claimmap_free(struct claimmap *m); /* NULL-safe */
/* The issuer a rule names that issuers (space-separated, NULL for none) does not hold, or NULL:
 * such a rule would never apply, so its agents allowlist and limits would silently not hold. */
const char *claimmap_unknown_issuer(const struct claimmap *m, const char *issuers);

/* Fills p (named, without scopes yet) from a token's claims: every scope the token carries in
 * the claims scopes_claims names (space-separated; each claim a space-separated string, or an
 * array of strings) that is ours or mapped to ours
 * (m may be NULL), then the agents and limits of the first rule whose claim names its value (a
 * string equal to it, or an array holding it) and whose issuer, when it names one, is the one
 * that issued the token (issuer; NULL when unknown). */
void claimmap_apply(const struct claimmap *m, json_t *claims, const char *issuer,
                    const char *scopes_claims, struct principal *p);

#endif
