/* replica.h — with STORE_URL, this server is a replica there: registered in hm_replica under an
 * id made at start (host name and random digits), its heartbeat renewed every
 * REPLICA_HEARTBEAT_MS on the store's connection, which the loop drives (a slow or absent
 * database delays only the heartbeat), removed again at a clean stop. Others read the list
 * (`hermes-mcp store status`); a replica whose heartbeat is old is gone. Loop thread. */
#ifndef HM_REPLICA_H
#define HM_REPLICA_H

#include <stdbool.h>

#define REPLICA_HEARTBEAT_MS 2000
#define REPLICA_ID_MAX 96

struct loop;
struct replica;

/* NULL when url is NULL (no store). */
struct replica *replica_start(struct loop *l, const char *url, const char *password);
/* Leaves the list (waiting at most a second for the database, running the loop itself), then
 * frees r; NULL-safe. */
void replica_stop(struct replica *r);
const char *replica_id(const struct replica *r);
/* Whether the store's connection is up now (NULL r: true, no store); while it is not, the
 * milliseconds until the next attempt (for Retry-After), else 0. */
bool replica_store_up(const struct replica *r);
unsigned replica_retry_in_ms(const struct replica *r);

#endif
