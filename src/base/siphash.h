/* siphash.h — SipHash-2-4 (Aumasson and Bernstein, 2012), a keyed hash for hash tables whose keys
 * a client chooses: without the key nobody can make many keys collide on purpose. Pure. */
#ifndef HM_SIPHASH_H
#define HM_SIPHASH_H
#include <stddef.h>
#include <stdint.h>

uint64_t siphash24(const void *data, size_t len, const uint8_t key[16]);

#endif
