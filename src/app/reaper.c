/* reaper.c — the server as a child subreaper (see reaper.h). Adopted orphans are found with
 * /proc/self/task/TID/children and their state (waitid(P_ALL) would keep returning the first
 * zombie, which may be one the gateway reaps itself); a zombie is reaped unless its owner
 * (child_owns) still reaps it, whatever its process group or session. */
#include "reaper.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "mem.h"

struct reaper {
    struct loop *loop;
    bool (*owned)(pid_t pid);
};

/* Reads /proc/PID/stat: its state letter. */
static bool read_state(pid_t pid, char *state)
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
    return end && sscanf(end + 1, " %c", state) == 1;
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

size_t reaper_collect(bool (*owned)(pid_t pid))
{
    pid_t kids[REAPER_MAX_PER_TICK * 4];
    size_t n = list_children(kids, sizeof kids / sizeof kids[0]), reaped = 0;
    for (size_t i = 0; i < n && reaped < REAPER_MAX_PER_TICK; i++) {
        char state;
        if (!read_state(kids[i], &state) || state != 'Z' || (owned && owned(kids[i])))
            continue;
        if (waitpid(kids[i], NULL, WNOHANG) == kids[i])
            reaped++;
    }
    return reaped;
}

void reaper_on_sigchld(struct reaper *r)
{
    if (r)
        while (reaper_collect(r->owned) == REAPER_MAX_PER_TICK)
            ; /* more may wait: one SIGCHLD stands for any number of exits */
}

struct reaper *reaper_start(struct loop *l, bool (*owned)(pid_t pid))
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        log_warn("cannot become a child subreaper: a command that detaches from an upstream's "
                 "tools is not recognised by the control socket");
        return NULL;
    }
    struct reaper *r = xcalloc(1, sizeof *r);
    r->loop = l;
    r->owned = owned;
    return r;
}

void reaper_free(struct reaper *r)
{
    if (!r)
        return;
    free(r);
}
