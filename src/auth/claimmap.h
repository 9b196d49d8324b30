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
#define CLAIMMAP_TEXT_MAX 256 /* a claim name, a claim value or a provider's scope name */

/* The oidc: mapping ({scopes: {NAME: [ours...]}, rules: [{claim, value, agents, limits}]})
 * into *out; false with a one-line reason in err. */
bool claimmap_parse(json_t *v, struct claimmap **out, char *err, size_t errlen);
void claimmap_free(struct claimmap *m); /* NULL-safe */

/* Fills p (named, without scopes yet) from a token's claims: every scope the token carries in
 * the claims scopes_claims names (space-separated; each claim a space-separated string, or an
 * array of strings) that is ours or mapped to ours
 * (m may be NULL), then the agents and limits of the first rule whose claim names its value (a
 * string equal to it, or an array holding it). */
void claimmap_apply(const struct claimmap *m, json_t *claims, const char *scopes_claims,
                    struct principal *p);

#endif
