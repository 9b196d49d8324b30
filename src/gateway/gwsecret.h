/* gwsecret.h — does a string look like it holds a credential? Used by the gateway's argument
 * policy reject_secrets: a model must not write an API key into a memory tool. Pure
 * (no I/O, no allocation), fuzzed (tests/fuzz/fuzz_gwsecret.c). A heuristic: known key
 * prefixes (sk-, ghp_/gho_/ghu_/ghs_/ghr_/github_pat_, xox?-, AKIA/ASIA, AIza, glpat-), PEM
 * private keys, "Bearer <token>", hex after a credential word ("api key: <hex>"; plain hex, a
 * hash, passes), and long high-entropy tokens not made of words. */
#ifndef HM_GWSECRET_H
#define HM_GWSECRET_H
#include <stdbool.h>
#include <stddef.h>

/* Whether the len bytes at s (need not be NUL-terminated) contain secret-like text; *kind gets
 * a fixed description of what matched ("an API key prefix", ...), never part of s. */
bool gw_secret_like(const char *s, size_t len, const char **kind);

#endif
