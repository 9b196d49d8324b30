/* reaper.h — keeps every process the server starts below it. The model can run commands
 * through an upstream's tools (a terminal), as descendants of the server under its uid; the
 * control socket refuses descendants (ctlsock.h), and a command that detaches (setsid, a double
 * fork) would leave the tree and look like the operator. As a child subreaper
 * (PR_SET_CHILD_SUBREAPER) the server adopts such orphans instead of init, so they stay its
 * descendants; this module then reaps the adopted ones when they exit, leaving the children
 * the gateway started and still reaps itself (child_owns, child.h) to their owner. */
#ifndef HM_REAPER_H
#define HM_REAPER_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct loop;
struct reaper;

#define REAPER_MAX_PER_TICK 64u

/* Becomes a subreaper; owned(pid) tells the children some module of ours reaps itself (NULL:
 * none). NULL (a warning logged) where the kernel refuses. The app calls reaper_on_sigchld
 * when SIGCHLD arrives (its signalfd): no timer, so an idle server makes no system calls. */
struct reaper *reaper_start(struct loop *l, bool (*owned)(pid_t pid));
/* SIGCHLD: reaps every adopted orphan that has exited (signals coalesce: all of them). */
void reaper_on_sigchld(struct reaper *r);
/* NULL-safe. The process stays a subreaper. */
void reaper_free(struct reaper *r);
/* Reaps exited children that owned (NULL: none) does not claim; returns how many. */
size_t reaper_collect(bool (*owned)(pid_t pid));

#endif
