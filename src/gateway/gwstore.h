/* gwstore.h — with STORE_URL, what the gateways of every replica share through PostgreSQL:
 * the pinned tool definitions (hm_pin, one row per exposed name, its document the pins file's
 * entry) and the input rounds' nonces already answered (hm_nonce).
 *
 * Pins: at start (blocking, before the loop serves) each exposed tool's pin is inserted if
 * absent (the pins file's when it has one, else the definition served) and every pin is read
 * back, so all replicas judge against the same pin, whichever started first. Inserts are
 * capped (per upstream, and in bytes, as the pins file is): a tool beyond them is not pinned
 * and stays withheld, said once. `hermes-mcp gateway accept` writes the rows (compare-and-set
 * on the pin the operator was shown) and notifies (NOTIFY hm_pin); each replica hears it, reads
 * the pins again on its own connection and applies them as a SIGHUP does, within a second. A
 * reconnect reads them again too (a notification may have been missed).
 *
 * Nonces: an input round is answered once across replicas: its nonce is inserted when the
 * retry is claimed, with the retry's fingerprint (a second claim anywhere finds it), deleted
 * again when the retry never reached the upstream. The claims of one nonce take turns (an
 * advisory lock). A claim whose answer was lost (a timeout: the caller was told to retry) may
 * have committed all the same: the same retry (same fingerprint), sent again at least
 * GW_NONCE_RETRY_AFTER_MS after the claim, is let through once more; any other claim of that
 * nonce is refused. Loop thread, except the blocking helpers marked so. */
#ifndef HM_GWSTORE_H
#define HM_GWSTORE_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pgrt.h"

struct gateway;
struct gw_store;

#define GW_STORE_CHANNEL "hm_pin"

/* Blocking: the pins of pg as a pins document {"pins": {exposed: {upstream, tool, sha256,
 * definition}}} (new), or NULL with err. */
json_t *gw_store_pins_read(PGconn *pg, char *err, size_t errlen);
/* Blocking, an accept (in the caller's transaction): pin (an entry as above) for exposed,
 * written only while the store's pin of it is still expect (its sha256; NULL: none), the one
 * the operator was shown; every replica is told at commit. 1 when written (or when the store
 * holds exactly this pin already: the same accept again), 0 when the pin changed meanwhile
 * (nothing written), -1 with err. */
int gw_store_pin_accept(PGconn *pg, const char *exposed, json_t *pin, const char *expect, char *err,
                        size_t errlen);

/* Blocking, at start: seed's pins ({"pins": {...}}) inserted where absent, then every pin read
 * back (new document), or NULL with err; then the connection that hears accepts is made
 * (g->store). */
json_t *gw_store_start(struct gateway *g, const char *url, const char *password, json_t *seed,
                       char *err, size_t errlen);
void gw_store_free(struct gw_store *s); /* NULL-safe */
/* Reads the pins again and applies them (gw_pins_apply), without blocking: on SIGHUP, after a
 * notification, after a reconnect. */
void gw_store_reread(struct gw_store *s);
/* A tool found without a pin while serving (its row removed): pin inserted if absent; every
 * replica, this one too, then reads the pins again. */
void gw_store_pin_absent(struct gw_store *s, const char *exposed, json_t *pin);

/* The claim of an input round's nonce: its first (the round may go on), claimed before
 * (anywhere), or the store cannot say now (nothing was claimed; the caller may retry). */
enum gw_store_claim_rc { GW_CLAIM_FIRST, GW_CLAIM_TAKEN, GW_CLAIM_UNAVAILABLE };
typedef void gw_store_claimed_fn(void *arg, enum gw_store_claim_rc rc);
/* A claim's answer is lost only after the store's request timeout (10 s); two copies of one
 * retry sent at once (closer than this) are one claim, and only one of them goes on. */
#define GW_NONCE_RETRY_AFTER_MS 5000
/* Claims nonce (32 hex digits) once, across replicas, for the retry of fingerprint fp (43
 * base64url characters); kept ttl_ms (a sealed state's lifetime: later the state itself is
 * refused). cb runs later, exactly once, unless cancelled. */
struct gw_store_claim;
struct gw_store_claim *gw_store_nonce_claim(struct gw_store *s, const char *nonce, const char *fp,
                                            unsigned ttl_ms, gw_store_claimed_fn *cb, void *arg);
void gw_store_claim_cancel(struct gw_store_claim *c); /* cb never runs; NULL-safe */
/* fp's retry never reached the upstream: the nonce may be claimed again (a retry let through
 * once more: it may be sent once more again). */
void gw_store_nonce_give_back(struct gw_store *s, const char *nonce, const char *fp);

#endif
