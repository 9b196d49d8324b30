/* relay.h — input asked during a request, relayed to the client that made it: a session-era
 * upstream's sampling and elicitation requests (relay.c: on the caller's stream, or as an input
 * round to a 2026-07-28 caller), a 2026-07-28 upstream's input_required results (mrtr.c: its
 * input rounds, resumable once, bound to their tool, caller and upstream). Part of the call
 * pipeline (gwcall.h). */
#ifndef HM_RELAY_H
#define HM_RELAY_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gwcall.h"
#include "gwstore.h"

struct gw_collect;
struct mcp_call;
struct upstream;

/* The largest upstream request params relayed in an input-required result (as JSON), and the
 * largest input round kept for a session-era caller (relay.c, mrtr.c). */
#define RELAY_PARAMS_MAX (1024 * 1024)

/* relay.c: an upstream's request during a call (msg, its method); related_id is the request
 * whose HTTP stream carried it, 0 over stdio. True when handled (relayed to the calling client
 * or refused with an error), false for methods it does not relay. */
bool gw_relay_request(struct upstream *u, json_t *msg, const char *method, uint64_t related_id);
/* A 2026-07-28 retry (call) of the exposed tool whose upstream name is tool: false when its
 * state names no held call (a call of its own). Else true, and *held is the held call it takes
 * over (the client's answer already sent upstream; the caller attaches call to it), or NULL
 * when the call was answered with a tool error (no such held call for this caller). */
bool gw_relay_resume(struct upstream *u, struct mcp_call *call, const char *tool,
                     struct gw_call **held);
/* Whether call is such a retry: its sealed state names a held call (gw_relay_resume then
 * takes it over, or answers that it is gone). */
bool gw_relay_resumes(const struct mcp_call *call);
/* The call is no longer held (resumed, or ended): its handle is forgotten. NULL-safe. */
void gw_relay_release(struct gw_call *gc);
/* Who made a held call (its mcp_call is gone). */
const char *gw_relay_caller(const struct gw_call *gc);
/* Shutdown: the held calls of u are freed (nothing is sent). */
void gw_relay_cleanup(struct upstream *u);
/* The client capability the request (method, params) needs, as mcp_call_client_supports
 * names it ("sampling.tools", "elicitation.url"...), with the refusal when it is missing. */
const char *gw_relay_needed_capability(const char *method, json_t *params, const char **refusal);

/* mrtr.c: a 2026-07-28 upstream's input_required results (its input rounds) */
/* gc ends: the answers it was collecting from a session-era caller are dropped. */
void gw_mrtr_release(struct gw_call *gc);
/* A session-era caller's answers to an input round: answers (key -> its result, borrowed) once
 * all are in, or NULL with refused (why) at the first it refused. */
typedef void gw_mrtr_collect_fn(void *owner, json_t *answers, const char *refused);
/* The round's requests (as gw_mrtr_requests gave them, borrowed) go to call's client on its
 * stream, one each; done(owner, ...) is called once, and never when the call ends first.
 * *co_out is set before anything is sent and is the owner's: it ends the call, then frees the
 * collect (gw_mrtr_collect_free, from done too). False when the client cannot take a request now
 * (the owner ends the call). */
bool gw_mrtr_collect_start(struct gw_collect **co_out, struct mcp_call *call, json_t *requests,
                           gw_mrtr_collect_fn *done, void *owner);
void gw_mrtr_collect_free(struct gw_collect *co); /* NULL-safe */
/* Shutdown: u's rounds are forgotten. */
void gw_mrtr_cleanup(struct upstream *u);
/* For any request that may be answered input_required (tools/call, resources/read, prompts/get):
 * the upstream's inputRequests in result as relayed to call, in its round number rounds; NULL
 * with why when not (too many rounds, a bad requestState, a request the caller cannot answer). */
json_t *gw_mrtr_requests(struct mcp_call *call, json_t *result, unsigned rounds, char *why,
                         size_t whylen);
/* A 2026-07-28 caller's round of u (bound_to: what its retry must ask again, rounds so far,
 * state: the upstream's requestState or NULL) opened, resumable once: the state to seal into
 * our input_required result, or NULL with why (*busy: the caller's rounds are at their cap). */
json_t *gw_mrtr_round_open(struct upstream *u, struct mcp_call *call, const char *bound_to,
                           unsigned rounds, json_t *state, bool *busy, char *why, size_t whylen);
/* A 2026-07-28 caller's retry (its sealed state names a round of u bound to bound_to: the
 * tool's upstream name, or gwresources.c's method and URI or prompt), the one check of it for
 * every kind of request: true with the round claimed (once) into *claimed, *rounds and *state
 * (borrowed from the call, NULL for none) set; false when no such round is open (already
 * answered, expired, another upstream's, tool's or caller's). */
bool gw_mrtr_round_claim(struct upstream *u, struct mcp_call *call, const char *bound_to,
                         unsigned *rounds, json_t **state, struct gw_round_claimed *claimed);
/* The retry that claimed the round was never sent (the upstream got nothing): the round is open
 * again, within its lifetime, so the caller's answers stay good for another try. Only then: a
 * retry lost after sending may have acted upstream, and its round stays used. */
void gw_mrtr_round_give_back(struct upstream *u, struct gw_round_claimed *claimed);
/* With STORE_URL a round opened on one replica may be resumed on another: gw_mrtr_round_claim
 * then checks what the sealed state says (the engine checked its seal, caller and request) and
 * the claim is made once across replicas here, in the store: cb runs later with its outcome
 * (gw_store_claim_cancel stops it). NULL without a store or a claimed round: nothing to wait
 * for. */
struct gw_store_claim *gw_mrtr_round_confirm(struct upstream *u,
                                             const struct gw_round_claimed *claimed,
                                             gw_store_claimed_fn *cb, void *arg);
/* A 2026-07-28 upstream's result for gc's tools/call (gc->call set, its slot still counted):
 * false when it is no input_required result. Else true, and mrtr.c took the call over: it
 * asks the caller (an input_required result of ours to a 2026-07-28 caller; requests on the
 * call's stream to a session-era one, then gw_call_retry with the answers) or ends it with
 * an error (gw_call_record, gw_call_release). */
bool gw_mrtr_input(struct gw_call *gc, json_t *result);
/* A 2026-07-28 call (gc, not yet sent) whose sealed state continues an upstream's input round:
 * gc gets what to send back, and NULL is returned (for a first round too). Else the tool error
 * to answer with (a round already resumed, expired, or of another tool or upstream). */
json_t *gw_mrtr_continue(struct gw_call *gc);
/* The call ends without an answer from its upstream (unavailable: down, or the send failed at
 * the wire): the round it continued is given back, so the caller's answers stay good for
 * another try within the state's lifetime. */
void gw_mrtr_give_back(struct gw_call *gc);
/* The capabilities the calling client declared, as a 2026-07-28 upstream reads them
 * (elicitation form/url, sampling tools, roots). */
json_t *gw_mrtr_caps(struct mcp_call *call);

#endif
