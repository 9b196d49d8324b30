/* ctlclient.h — the operator's side of the server's control socket (ctlsock.h): one request line,
 * one answer line. Shared by `approvals|approve|deny` and by doctor and `gateway check`, which
 * ask the running server what waits for a restart. */
#ifndef HM_CTLCLIENT_H
#define HM_CTLCLIENT_H
#include <jansson.h>
#include <stddef.h>

/* Sends line (ending in a newline) on the socket at path and returns the answer parsed (an
 * object), or NULL with why in err: no server listening there, or no answer. */
json_t *ctlclient_ask(const char *path, const char *line, char *err, size_t errlen);
/* What the server running with env_file could not apply of a reloaded GATEWAY_FILE, one text
 * each joined by "; " (caller frees), or NULL when nothing waits for a restart or no server
 * answers there. */
char *ctlclient_restart_needed(const char *env_file);

#endif
