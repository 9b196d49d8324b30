/* oauthpgcli.h — the `hermes-mcp oauth` commands with STORE_URL: the tokens, the clients and
 * the consent passphrase read from and written to the store (blocking libpq: a command line,
 * not the server's loop). Every deletion is announced on the store's channel (oauthpg.h), so
 * every running replica drops what was revoked at once. */
#ifndef HM_OAUTHPGCLI_H
#define HM_OAUTHPGCLI_H
#include <stdbool.h>
#include <stddef.h>

#include "pgrt.h"

struct authserver;
struct tokenstore;

/* Every stored token into ts (a tokenstore in memory) and every client into as. */
bool oauthpgcli_load(PGconn *pg, struct tokenstore *ts, struct authserver *as, char *err,
                     size_t errlen);
/* The tokens of client and/or family (one at least) deleted; *gone: how many. */
bool oauthpgcli_revoke_tokens(PGconn *pg, const char *client, const char *family, size_t *gone,
                              char *err, size_t errlen);
/* Client id deleted (its row kept when keep_row: the static client) with its tokens, codes and
 * consents, in one transaction; *gone: the tokens, *found: whether the row was there. */
bool oauthpgcli_remove_client(PGconn *pg, const char *id, bool keep_row, size_t *gone, bool *found,
                              char *err, size_t errlen);
/* The consent passphrase's line stored (hm_secret 'passphrase'). */
bool oauthpgcli_passwd(const char *url, const char *password, const char *line, char *err,
                       size_t errlen);

/* For `hermes-mcp doctor`: how many tokens and clients are stored, and whether a consent
 * passphrase is. */
bool oauthpgcli_summary(const char *url, const char *password, size_t *tokens, size_t *clients,
                        bool *passphrase, char *err, size_t errlen);

#endif
