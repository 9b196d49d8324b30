/* gwpolicy.h — what the gateway file's tools.guard (confirm) and tools.args policies (drop, fix,
 * enum, max_items, max_length, reject_secrets, require) do to an exposed tool: its
 * inputSchema as clients see it, and each call's arguments before they go upstream. The pinned
 * definition hash stays the upstream's own (gwpin.h): changing a policy is the operator's act,
 * not a rug pull. */
#ifndef HM_GWPOLICY_H
#define HM_GWPOLICY_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gwfile.h"
#include "toolerr.h"

/* The exposed input schema: schema (taken, an object schema) with the guard's `confirmed` and
 * the policy (may be NULL) applied; returned. *uncallable (may be NULL) is set true when the
 * schema's drop or fix leaves an anyOf or oneOf no branch a call could match (each required a
 * name the policy takes away): no call can pass it, which the caller warns about. */
json_t *gw_policy_schema(json_t *schema, enum gw_guard guard, json_t *policy, bool *uncallable);

/* The arguments to send upstream (a new reference: `confirmed` removed, fixed values set), or
 * NULL with *code and msg (ours: names a field, never echoes a value) when the call is refused.
 * args may be NULL (no arguments). */
json_t *gw_policy_args(enum gw_guard guard, json_t *policy, json_t *args, enum toolerr *code,
                       char *msg, size_t size);

/* One line for an operator (gateway check): what guard and policy do to a tool, e.g.
 * "confirm; drop model, provider; fix deliver; max_items tasks 2", "" for neither. Field names
 * only: fixed values and enum lists are the file's, not repeated. Cut to size. */
void gw_policy_summary(enum gw_guard guard, json_t *policy, char *out, size_t size);

/* What a reload that turns guard was_guard and policy was (may be NULL) into now_guard and now
 * loosens, one line each for the operator's log: "guard approve -> none", "args drop model ->
 * none", "args max_length note 5 -> 10", "args enum kind widened". A rule whose field is gone,
 * a bigger cap, an enum with a value it did not allow; an empty array when nothing is looser. */
json_t *gw_policy_loosened(enum gw_guard was_guard, json_t *was, enum gw_guard now_guard,
                           json_t *now);

#endif
