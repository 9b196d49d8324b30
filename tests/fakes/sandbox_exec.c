/* sandbox_exec.c — run a program under the restrictions a systemd unit imposes, applied the way
 * systemd applies them, for tests/integration/ops/sandbox.test.mjs (which reads them from the
 * unit).
 *
 *   sandbox-exec [--ro PATH] [--rw PATH] [--tmpfs PATH] [--hide PATH] [--keep PATH] [--mdwe]
 *                [--nnp] [--uid UID:GID] [--cwd DIR] [--syscalls FILE] -- PROG [ARG]...
 *
 * Mount options are applied in the order given, in a private mount namespace (needs root, as
 * systemd's are made by PID 1): --ro makes PATH and every mount below it read-only
 * (ProtectSystem=, ProtectHome=read-only, ProtectKernelTunables=), --rw makes it writable again
 * (ReadWritePaths=, CacheDirectory=), --tmpfs mounts an empty tmpfs on it (PrivateTmp=),
 * --hide an empty read-only tmpfs (ProtectHome=yes, InaccessiblePaths= on a folder).
 * --keep PATH (given before the --tmpfs that covers it) brings PATH back, bound at its own
 * place with the mounts below it, inside a later --tmpfs: a checkout under /tmp stands for
 * files a real install keeps elsewhere (/usr/bin/hermes-mcp, the npm servers), which
 * PrivateTmp= would otherwise hide along with everything of the test.
 * --mdwe is MemoryDenyWriteExecute=yes: prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN), which
 * systemd uses when the kernel has it (6.3+), inherited by every child across exec. --nnp is
 * NoNewPrivileges=yes. --uid drops to UID:GID (no supplementary groups, no capabilities) once the
 * mounts are made, as a user manager's service runs as its user: without it PROG would run as
 * root, which reads and writes through file modes (a --hide folder would list as empty rather
 * than refuse, a file the unit's user cannot read would be read). Then it changes to --cwd
 * (WorkingDirectory=, as that user). --syscalls is SystemCallFilter= with
 * SystemCallErrorNumber=EPERM: FILE names the system calls allowed (whitespace-separated; the
 * test expands the unit's groups with systemd-analyze syscall-filter), every other one fails
 * with EPERM, installed with libseccomp last, just before PROG is exec'd (names this
 * architecture does not have are skipped). Then it execs PROG.
 * Exit 1 when a step fails (naming it), 2 for usage errors. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#endif
#ifndef PR_MDWE_REFUSE_EXEC_GAIN
#define PR_MDWE_REFUSE_EXEC_GAIN 1
#endif

static int usage(void)
{
    fprintf(stderr, "usage: sandbox-exec [--ro PATH] [--rw PATH] [--tmpfs PATH] [--hide PATH] "
                    "[--keep PATH] [--mdwe] [--nnp] [--uid UID:GID] [--cwd DIR] [--syscalls FILE] "
                    "-- PROG [ARG]...\n");
    return 2;
}

static int fail(const char *what, const char *path)
{
    fprintf(stderr, "sandbox-exec: %s %s: %s\n", what, path ? path : "", strerror(errno));
    return 1;
}

static int in_namespace(void)
{
    static int done;
    if (done)
        return 0;
    done = 1;
    if (unshare(CLONE_NEWNS) < 0)
        return fail("unshare(CLONE_NEWNS)", NULL);
    /* Nothing done here may leak back to the host's mounts. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return fail("make / private", NULL);
    return 0;
}

/* The path becomes a mount of its own (a bind onto itself; / already is one), then the
 * read-only flag is set or cleared on it and every mount below it. */
static int set_readonly(const char *path, int readonly)
{
    if (strcmp(path, "/") != 0 && mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0)
        return fail("bind", path);
    struct mount_attr attr = {0};
    if (readonly)
        attr.attr_set = MOUNT_ATTR_RDONLY;
    else
        attr.attr_clr = MOUNT_ATTR_RDONLY;
    if (mount_setattr(-1, path, AT_RECURSIVE, &attr, sizeof attr) < 0)
        return fail(readonly ? "make read-only" : "make writable", path);
    return 0;
}

/* setgroups before setgid before setuid: each needs the privilege the next one gives up. */
static int drop_to(const char *ids)
{
    unsigned long uid, gid;
    char *end;
    uid = strtoul(ids, &end, 10);
    if (end == ids || *end != ':')
        return usage();
    const char *g = end + 1;
    gid = strtoul(g, &end, 10);
    if (end == g || *end != '\0')
        return usage();
    if (setgroups(0, NULL) < 0)
        return fail("setgroups", NULL);
    if (setgid((gid_t)gid) < 0)
        return fail("setgid", g);
    if (setuid((uid_t)uid) < 0)
        return fail("setuid", ids);
    return 0;
}

/* Every level of path, made as root (0755) in the fresh tmpfs that now covers it. */
static int make_levels(const char *path)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) {
        errno = ENAMETOOLONG;
        return fail("keep", path);
    }
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
            return fail("mkdir", p);
        *s = c;
        if (c == '\0')
            return 0;
    }
}

/* A tmpfs on path, with each kept folder below it bound back at its own place (--keep). */
static int private_tmpfs(const char *path, const char *const *keep, size_t nkeep)
{
    int fds[8];
    size_t n = 0, len = strlen(path);
    for (size_t k = 0; k < nkeep; k++) /* opened before the tmpfs hides them */
        if (strncmp(keep[k], path, len) == 0 && keep[k][len] == '/') {
            fds[n] = open(keep[k], O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (fds[n] < 0)
                return fail("open", keep[k]);
            n++;
        }
    if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
        return fail("mount tmpfs on", path);
    for (size_t k = 0, f = 0; k < nkeep; k++) {
        if (strncmp(keep[k], path, len) != 0 || keep[k][len] != '/')
            continue;
        char from[64];
        snprintf(from, sizeof from, "/proc/self/fd/%d", fds[f]);
        if (make_levels(keep[k]) != 0 || mount(from, keep[k], NULL, MS_BIND | MS_REC, NULL) < 0)
            return fail("bind back", keep[k]);
        close(fds[f++]);
    }
    return 0;
}

/* An allow list, everything else EPERM; seccomp_load sets no_new_privs itself, as systemd does
 * for a filter in a service without CAP_SYS_ADMIN. */
static int filter_syscalls(const char *file)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return fail("open", file);
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!ctx) {
        fclose(f);
        errno = ENOMEM;
        return fail("seccomp_init", NULL);
    }
    char name[128];
    int rc = 0;
    while (rc == 0 && fscanf(f, "%127s", name) == 1) {
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR)
            continue;
        int e = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        if (e < 0 && e != -EDOM) { /* -EDOM: a call of another architecture */
            errno = -e;
            rc = fail("seccomp_rule_add", name);
        }
    }
    fclose(f);
    if (rc == 0) {
        int e = seccomp_load(ctx);
        if (e < 0) {
            errno = -e;
            rc = fail("seccomp_load", file);
        }
    }
    seccomp_release(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    int i;
    const char *cwd = NULL, *ids = NULL, *syscalls = NULL, *keep[8];
    size_t nkeep = 0;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "--mdwe") == 0) {
            if (prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0L, 0L, 0L) < 0)
                return fail("prctl(PR_SET_MDWE)", NULL);
            continue;
        }
        if (strcmp(a, "--nnp") == 0) {
            if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) < 0)
                return fail("prctl(PR_SET_NO_NEW_PRIVS)", NULL);
            continue;
        }
        if (i + 1 >= argc)
            return usage();
        const char *path = argv[++i];
        if (strcmp(a, "--cwd") == 0) {
            cwd = path;
            continue;
        }
        if (strcmp(a, "--uid") == 0) {
            ids = path;
            continue;
        }
        if (strcmp(a, "--keep") == 0) {
            if (nkeep == sizeof keep / sizeof *keep || path[0] != '/')
                return usage();
            keep[nkeep++] = path;
            continue;
        }
        if (strcmp(a, "--syscalls") == 0) {
            syscalls = path;
            continue;
        }
        if (in_namespace() != 0)
            return 1;
        if (strcmp(a, "--ro") == 0 || strcmp(a, "--rw") == 0) {
            if (set_readonly(path, a[3] == 'o') != 0)
                return 1;
        } else if (strcmp(a, "--tmpfs") == 0) {
            if (private_tmpfs(path, keep, nkeep) != 0)
                return 1;
        } else if (strcmp(a, "--hide") == 0) {
            if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                      "mode=000") < 0)
                return fail("hide", path);
        } else {
            return usage();
        }
    }
    if (i >= argc)
        return usage();
    if (ids && drop_to(ids) != 0)
        return 1;
    if (cwd && chdir(cwd) < 0)
        return fail("chdir", cwd);
    if (syscalls && filter_syscalls(syscalls) != 0)
        return 1;
    execvp(argv[i], argv + i);
    return fail("exec", argv[i]);
}
