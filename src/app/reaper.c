/* reaper.c — the server as a child subreaper (see reaper.h). Adopted orphans are found with
 * /proc/self/task/TID/children and their state; a zombie is reaped only when no pidfd of ours
 * names it, because the gateway reaps its own children (by pid) when their pidfd says so. */
#include "reaper.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "mem.h"

struct reaper {
    struct loop *loop;
};

bool reaper_pid_is_held(pid_t pid)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return true; /* cannot tell: leave it */
    bool held = false;
    struct dirent *e;
    while (!held && (e = readdir(d))) {
        char link[300], target[64], info[512];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strcmp(target, "anon_inode:[pidfd]"))
            continue;
        snprintf(link, sizeof link, "/proc/self/fdinfo/%s", e->d_name);
        int fd = open(link, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t got = read(fd, info, sizeof info - 1);
        close(fd);
        if (got <= 0)
            continue;
        info[got] = '\0';
        const char *p = strstr(info, "\nPid:");
        held = p && atoi(p + 5) == (int)pid;
    }
    closedir(d);
    return held;
}

/* Reads /proc/PID/stat: state, process group and session. */
static bool read_stat(pid_t pid, char *state, int *pgrp, int *sid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *end = strrchr(buf, ')'); /* the command name may hold ')' */
    int ppid;
    return end && sscanf(end + 1, " %c %d %d %d", state, &ppid, pgrp, sid) == 4;
}

/* Our children's pids, from /proc/self/task/TID/children of every thread. */
static size_t list_children(pid_t *out, size_t max)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    struct dirent *e;
    while (n < max && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        int pid;
        while (n < max && fscanf(f, "%d", &pid) == 1)
            out[n++] = (pid_t)pid;
        fclose(f);
    }
    closedir(d);
    return n;
}

size_t reaper_collect(void)
{
    pid_t kids[REAPER_MAX_PER_TICK * 4];
    size_t n = list_children(kids, sizeof kids / sizeof kids[0]), reaped = 0;
    for (size_t i = 0; i < n && reaped < REAPER_MAX_PER_TICK; i++) {
        char state;
        int pgrp, sid;
        if (!read_stat(kids[i], &state, &pgrp, &sid) || state != 'Z')
            continue;
        /* The gateway reaps its own children when their pidfd says so; one it could not get
         * a pidfd for still leads its own process group in our session (child.c). */
        if (reaper_pid_is_held(kids[i]) || (pgrp == (int)kids[i] && sid == (int)getsid(0)))
            continue;
        if (waitpid(kids[i], NULL, WNOHANG) == kids[i])
            reaped++;
    }
    return reaped;
}

void reaper_on_sigchld(struct reaper *r)
{
    if (r)
        while (reaper_collect() == REAPER_MAX_PER_TICK)
            ; /* more may wait: one SIGCHLD stands for any number of exits */
}

struct reaper *reaper_start(struct loop *l)
{
    int probe = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (probe < 0) {
        log_warn("no pidfds: the server is not a subreaper, so a command that detaches from "
                 "an upstream's tools is not recognised by the control socket");
        return NULL;
    }
    close(probe);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        log_warn("cannot become a child subreaper: a command that detaches from an upstream's "
                 "tools is not recognised by the control socket");
        return NULL;
    }
    struct reaper *r = xcalloc(1, sizeof *r);
    r->loop = l;
    return r;
}

void reaper_free(struct reaper *r)
{
    if (!r)
        return;
    free(r);
}
