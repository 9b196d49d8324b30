/* sandbox_exec.c — run a program under the restrictions a systemd unit imposes, applied the way
 * systemd applies them, for tests/integration/sandbox.test.mjs (which reads them from the unit).
 *
 *   sandbox-exec [--ro PATH] [--rw PATH] [--tmpfs PATH] [--hide PATH] [--mdwe] [--nnp]
 *                [--cwd DIR] -- PROG [ARG]...
 *
 * Mount options are applied in the order given, in a private mount namespace (needs root, as
 * systemd's are made by PID 1): --ro makes PATH and every mount below it read-only
 * (ProtectSystem=, ProtectHome=read-only, ProtectKernelTunables=), --rw makes it writable again
 * (ReadWritePaths=, CacheDirectory=), --tmpfs mounts an empty tmpfs on it (PrivateTmp=),
 * --hide an empty read-only tmpfs (ProtectHome=yes, InaccessiblePaths= on a folder).
 * --mdwe is MemoryDenyWriteExecute=yes: prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN), which
 * systemd uses when the kernel has it (6.3+), inherited by every child across exec. --nnp is
 * NoNewPrivileges=yes. Then it changes to --cwd (WorkingDirectory=) and execs PROG.
 * Exit 1 when a step fails (naming it), 2 for usage errors. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
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
                    "[--mdwe] [--nnp] [--cwd DIR] -- PROG [ARG]...\n");
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

int main(int argc, char **argv)
{
    int i;
    const char *cwd = NULL;
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
        if (in_namespace() != 0)
            return 1;
        if (strcmp(a, "--ro") == 0 || strcmp(a, "--rw") == 0) {
            if (set_readonly(path, a[3] == 'o') != 0)
                return 1;
        } else if (strcmp(a, "--tmpfs") == 0) {
            if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
                return fail("mount tmpfs on", path);
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
    if (cwd && chdir(cwd) < 0)
        return fail("chdir", cwd);
    execvp(argv[i], argv + i);
    return fail("exec", argv[i]);
}
