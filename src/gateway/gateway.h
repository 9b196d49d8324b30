/* gateway.h — upstream MCP servers behind our endpoint (issue 14): each stdio upstream is one
 * child shared by every client, initialized and listed once at start (frozen discovery), and
 * the tools its rules include are registered on the engine as prefix + name; a call is
 * forwarded with its id remapped, progress relayed, cancellation forwarded. Loop thread. */
#ifndef HM_GATEWAY_H
#define HM_GATEWAY_H
#include <stdbool.h>
#include <stddef.h>

struct gateway;
struct gwfile;
struct loop;
struct mcp_server;

/* Starts every upstream of f and waits (running the loop) until each is listed or failed or
 * its connect_timeout passed, then registers the exposed tools. taken: names already on the
 * engine (the bridge's), for the collision check. Returns NULL (the reason logged) when the
 * surface cannot be built: an exposed name clients would refuse, or two that collide. f must
 * outlive the gateway. gateway_file (GATEWAY_FILE's path) places the pins beside it (gwpin.h);
 * a tool whose definition differs from its pin is withheld (gwguard.c). */
struct gateway *gateway_new(struct mcp_server *mcp, struct loop *l, const struct gwfile *f,
                            const char *gateway_file, const char *const *taken, size_t ntaken);
/* SIGHUP: re-reads the pins file (after `gateway accept`) and shows again each tool that now
 * matches its pin; calls in flight are untouched. False (logged) when the file is bad. */
bool gateway_reload_pins(struct gateway *g);
/* /readyz and /healthz: appends {"NAME": {state, required, restarts[, error][, withheld]}, ...}
 * to out (withheld: the exposed names whose definition differs from its pin)
 * (states: starting, listing, ready, restarting, down; the error is our own text, never a
 * secret); returns whether every required upstream is ready. */
struct buf;
bool gateway_ready(const struct gateway *g, struct buf *out);
/* Kills every child and frees; call after every MCP call was answered (mcp_free). NULL-safe. */
void gateway_free(struct gateway *g);

#endif
