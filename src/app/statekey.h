/* statekey.h — with STORE_URL, the key that seals requestState is every replica's: the secret
 * 'reqstate:1' of the store, made by the first replica to start (insert if absent) and read by
 * the others, so a state sealed by one replica opens on any. Blocking, before the loop serves,
 * as the store's schema check is. */
#ifndef HM_STATEKEY_H
#define HM_STATEKEY_H
#include <stdbool.h>
#include <stddef.h>

#define STATEKEY_LEN 32

struct mcp_server;

/* Fills key from the store at url (made there if absent); false with a one-line reason (no
 * secret in it). */
bool statekey_load(const char *url, const char *password, unsigned char key[STATEKEY_LEN],
                   char *err, size_t errlen);
/* statekey_load, then the engine seals with it (mcp_set_state_key); false, logged, when the
 * store cannot give it: a replica that sealed with a key of its own would break states the
 * others sealed. */
bool statekey_share(struct mcp_server *mcp, const char *url, const char *password);

#endif
