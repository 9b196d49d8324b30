/* storeschema.h — the PostgreSQL store's schema, versioned: each migration takes the schema
 * from one version to the next, forward only, each in its own transaction under an advisory
 * lock (two `store init` at once apply each step once). The binary knows
 * STORESCHEMA_VERSION; a server refuses a database at another version. Blocking: for the
 * command line and the server's start, before the event loop runs. */
#ifndef HM_STORESCHEMA_H
#define HM_STORESCHEMA_H
#include <stdbool.h>
#include <stddef.h>

#include "pgrt.h"

#define STORESCHEMA_VERSION 7

/* A blocking connection (libpq's own connect timeout: 10 s unless the URL says otherwise),
 * libpq loaded first; or NULL with a one-line reason (no password in it) in err. */
PGconn *storeschema_connect(const char *url, const char *password, char *err, size_t errlen);
/* The database's schema version: 0 when it has none (never initialised); -1 with err on an
 * error. */
int storeschema_version(PGconn *pg, char *err, size_t errlen);
/* Applies every migration past the database's version (waiting for another init under way,
 * saying so on stderr); *from and *to get the versions before and after. False with err (the
 * database stays at the last whole step). A database newer than the binary is refused. */
bool storeschema_migrate(PGconn *pg, int *from, int *to, char *err, size_t errlen);
/* The one-line summary of migration v (1..STORESCHEMA_VERSION). */
const char *storeschema_summary(int v);

#endif
