/* sdlisten.h — systemd socket activation (sd_listen_fds(3) without libsystemd): when LISTEN_PID
 * names this process and LISTEN_FDS is at least 1, fd 3 is the listening socket to serve on.
 * LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are then removed from the environment so that no
 * child takes them for its own. */
#ifndef HM_SDLISTEN_H
#define HM_SDLISTEN_H
#include <stdbool.h>
#include <stddef.h>

#define SDLISTEN_FD 3 /* SD_LISTEN_FDS_START */

/* Takes the passed socket: *fd is SDLISTEN_FD, made close-on-exec and non-blocking, with its
 * numeric address in host (no brackets) and its port; *fd is -1 when no socket was passed.
 * Returns false, with a one-line reason in err, when a socket was passed but is not a listening
 * TCP socket (IPv4 or IPv6). */
bool sdlisten_claim(int *fd, char *host, size_t hostlen, unsigned *port, char *err, size_t errlen);

#endif
