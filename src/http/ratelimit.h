/* ratelimit.h — per-client token buckets in a bounded table.
 * Each client (an IPv4 address, an IPv6 /64, or a caller-chosen key) may make per_min requests a
 * minute, with bursts up to per_min. The table holds at most max_clients buckets; the least
 * recently seen one is evicted first, so rotating source addresses cannot grow memory. Pure (the
 * caller passes the time); loop thread only. */
#ifndef HM_RATELIMIT_H
#define HM_RATELIMIT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ratelimit;

struct ratelimit *ratelimit_new(unsigned per_min, size_t max_clients);
void ratelimit_free(struct ratelimit *rl); /* NULL-safe */
/* Takes one token for ip (text form). Returns 0 when allowed, else the whole seconds to wait
 * before the next request would be allowed (at least 1). When first is not NULL it is set to
 * true for the first refusal of this client in a minute (so that one can be logged), else false. */
unsigned ratelimit_consume(struct ratelimit *rl, const char *ip, uint64_t now_ms, bool *first);
/* The same for a key that is not an address (a credential's hash, say): used as it is, cut to
 * RATELIMIT_KEY_MAX - 1 bytes. */
#define RATELIMIT_KEY_MAX 72 /* a principal's name fits whole */
unsigned ratelimit_consume_key(struct ratelimit *rl, const char *key, uint64_t now_ms, bool *first);
/* The same at per_min (not 0) instead of the table's rate: one table for keys with rates of their
 * own (a role's calls_per_min). A key whose rate shrank keeps at most the new burst. */
unsigned ratelimit_consume_rate(struct ratelimit *rl, const char *key, unsigned per_min,
                                uint64_t now_ms, bool *first);
/* Gives back the request key's last consume_rate took (a call refused for another reason after
 * it), up to capacity. */
void ratelimit_refund(struct ratelimit *rl, const char *key, unsigned capacity);
size_t ratelimit_clients(const struct ratelimit *rl);
/* One replica's share of a limit counted by each of replicas replicas alone (REPLICAS behind a
 * round-robin proxy): limit / replicas, rounded down so that the replicas together never allow
 * more than limit, but at least 1 (a limit below replicas allows up to replicas). 0 (no limit)
 * stays 0; replicas 0 or 1: limit. */
unsigned ratelimit_share(unsigned limit, unsigned replicas);
/* The bucket key for an address: IPv4 as is (also when IPv4-mapped), IPv6 as its /64. */
void ratelimit_key(const char *ip, char *out, size_t outlen);

#endif
