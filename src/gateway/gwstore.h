/* gwstore.h — with STORE_URL, what the gateways of every replica share through PostgreSQL:
 * the pinned tool definitions (hm_pin, one row per exposed name, its document the pins file's
 * entry) and the input rounds' nonces already answered (hm_nonce).
 *
 * Pins: at start (blocking, before the loop serves) each exposed tool's pin is inserted if
 * absent (the pins file's when it has one, else the definition served) and every pin is read
 * back, so all replicas judge against the same pin, whichever started first. Inserts are
 * capped (per upstream, and in bytes, as the pins file is): a tool beyond them is not pinned
 * and stays withheld, said once, until room is made. `hermes-mcp gateway accept` writes the
 * rows (compare-and-set on the pin the operator was shown) and `gateway unpin` removes one,
 * both notifying (NOTIFY hm_pin); each replica hears it, reads
 * the pins again on its own connection and applies them as a SIGHUP does, within a second. A
 * reconnect reads them again too (a notification may have been missed).
 *
 * Nonces: an input round is answered at most once across replicas: its nonce is inserted when
 * the retry is claimed (insert if absent, by its primary key: a second claim anywhere finds it),
 * deleted again when the retry never reached the upstream. A claim whose answer was lost (the
 * store's request timeout) may have committed all the same: that round is spent, and the caller,
 * told to retry, is then told to call the tool again. Loop thread, except the blocking helpers
 * marked so. */
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
 * the operator was shown, and within the caps; every replica is told at commit. 1 when written
 * (or when the store holds exactly this pin already: the same accept again), 0 when the pin
 * changed meanwhile (nothing written; now: the store's sha256, "" when it holds none), -1 with
 * err (the caps among the reasons). */
int gw_store_pin_accept(PGconn *pg, const char *exposed, json_t *pin, const char *expect, char *now,
                        size_t nowlen, char *err, size_t errlen);
/* Blocking, an unpin: the pin of exposed removed, every replica told at commit (room for a
 * pin refused for the caps). 1 removed, 0 none, -1 with err. */
int gw_store_pin_remove(PGconn *pg, const char *exposed, char *err, size_t errlen);

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
/* Claims nonce (32 hex digits) once, across replicas; kept ttl_ms (a sealed state's lifetime:
 * later the state itself is refused). cb runs later, exactly once, unless cancelled. */
struct gw_store_claim;
struct gw_store_claim *gw_store_nonce_claim(struct gw_store *s, const char *nonce, unsigned ttl_ms,
                                            gw_store_claimed_fn *cb, void *arg);
void gw_store_claim_cancel(struct gw_store_claim *c); /* cb never runs; NULL-safe */
/* The retry never reached the upstream: the nonce may be claimed again. */
void gw_store_nonce_give_back(struct gw_store *s, const char *nonce);

#endif
