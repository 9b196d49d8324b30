/* apprshare.h — with STORE_URL, one approval queue for every replica: each request this server
 * queues is also a row of hm_approval (held by this replica), and this server's control socket
 * answers `approvals`, `approvals show`, `approve` and `deny` from the store, so an operator at
 * any replica sees and decides every replica's requests. A decision is a compare-and-set on
 * the row (undecided, not expired) that notifies (NOTIFY hm_approval, id); the holder hears it,
 * reads the decision and releases its call. While the database is away each server answers
 * from its own queue, as without a store. Loop thread. */
#ifndef HM_APPRSHARE_H
#define HM_APPRSHARE_H

struct loop;
struct approvals;
struct ctlsock;
struct apprshare;

/* NULL when url is NULL. holder: this replica's id (replica_id). ctl may be NULL. */
struct apprshare *apprshare_start(struct loop *l, const char *url, const char *password,
                                  const char *holder, struct approvals *q, struct ctlsock *ctl);
/* Stops observing q and forwarding ctl's requests, lets what was sent reach the database
 * (waiting at most a second, running the loop itself), then frees s; before q and ctl are
 * freed. NULL-safe. */
void apprshare_stop(struct apprshare *s);

#endif
