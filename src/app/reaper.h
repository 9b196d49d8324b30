/* reaper.h — keeps every process the server starts below it. The model can run commands
 * through an upstream's tools (a terminal), as descendants of the server under its uid; the
 * control socket refuses descendants (ctlsock.h), and a command that detaches (setsid, a double
 * fork) would leave the tree and look like the operator. As a child subreaper
 * (PR_SET_CHILD_SUBREAPER) the server adopts such orphans instead of init, so they stay its
 * descendants; this module then reaps the adopted ones when they exit, leaving the children
 * the gateway started (each held by a pidfd, see child.c) to their owner. */
#ifndef HM_REAPER_H
#define HM_REAPER_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct loop;
struct reaper;

#define REAPER_MAX_PER_TICK 64u

/* Becomes a subreaper. NULL (and nothing changed) where the kernel has no pidfds: then the
 * gateway's children could not be told from adopted ones. The app calls reaper_on_sigchld when
 * SIGCHLD arrives (its signalfd): no timer, so an idle server makes no system calls. */
struct reaper *reaper_start(struct loop *l);
/* SIGCHLD: reaps every adopted orphan that has exited (signals coalesce: all of them). */
void reaper_on_sigchld(struct reaper *r);
/* NULL-safe. The process stays a subreaper. */
void reaper_free(struct reaper *r);
/* Reaps exited children that no pidfd of this process holds (and that are not, by their
 * process group, a child the gateway started); returns how many. */
size_t reaper_collect(void);
/* True when some pidfd open in this process refers to pid. */
bool reaper_pid_is_held(pid_t pid);

#endif
