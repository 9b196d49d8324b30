/* storemigoauth.h — `hermes-mcp store migrate --from-files`, its OAuth part: the clients and
 * tokens of the file store copied into PostgreSQL as the server keeps them there. Blocking: a
 * command line's work, never the server's. */
#ifndef HM_STOREMIGOAUTH_H
#define HM_STOREMIGOAUTH_H

#include "pgrt.h"

/* Copies the OAuth clients and the unexpired tokens of the file store (either file may be
 * absent) into hm_oauth_client and hm_oauth_token, in one transaction, leaving an entry already
 * there alone; prints "N clients, M tokens" on stdout. A file that cannot be read or is not one
 * the server writes: nothing copied, the reason on stderr. Returns the exit code. */
int storemigoauth_run(PGconn *pg, const char *clients_path, const char *tokens_path);

#endif
