/* tokencmd.c — hermes-mcp token gen|rotate: a new random MCP_AUTH_TOKEN written into the env
 * file (atomically, mode 600), and with rotate a SIGHUP to every server using that file;
 * `token gen --name` (a role of TOKENS_FILE) is tokengen.c's. */
#include "tokencmd.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cliargs.h"
#include "crypto.h"
#include "envfile.h"
#include "tokengen.h"

const char tokencmd_usage[] =
    "usage: hermes-mcp token gen|rotate [--env-file FILE]\n"
    "\n"
    "gen     writes a new random MCP_AUTH_TOKEN (64 hex characters from 32 random bytes) into\n"
    "        FILE, atomically and with mode 600, keeping the other lines. Prints the path,\n"
    "        never the token.\n"
    "rotate  does the same, then sends SIGHUP to every running 'hermes-mcp serve' that uses\n"
    "        FILE: new requests need the new token, requests in flight finish, nothing restarts.\n"
    "Exit codes: 0 written, 1 the file could not be written, 2 usage error.\n"
    "\n"
    "gen --name N --scopes S [--agents A] [--expires DATE]\n"
    "        a token for a role of TOKENS_FILE instead: hermes-mcp token gen --name N --help.\n";

/* True when /proc/<pid> is "hermes-mcp serve" reading env_real (resolved in its own cwd). */
static bool serves_env_file(const char *pid, const char *env_real)
{
    char path[300], cmd[4096], cwd[PATH_MAX], file[PATH_MAX * 2], real[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, cmd, sizeof cmd - 1);
    close(fd);
    if (n <= 0)
        return false;
    cmd[n] = '\0';
    const char *args[32];
    int argc = 0;
    for (char *p = cmd; p < cmd + n && argc < 32; p += strlen(p) + 1)
        args[argc++] = p;
    /* "hermes-mcp serve", possibly behind a wrapper (valgrind, env, nice...). */
    int at = -1;
    for (int i = 0; i + 1 < argc && at < 0; i++) {
        const char *base = strrchr(args[i], '/');
        base = base ? base + 1 : args[i];
        if (strcmp(base, "hermes-mcp") == 0 && strcmp(args[i + 1], "serve") == 0)
            at = i;
    }
    if (at < 0)
        return false;
    const char *env = ".env";
    for (int i = at + 2; i < argc; i++) {
        if (!strcmp(args[i], "--env-file") && i + 1 < argc)
            env = args[i + 1];
        else if (!strncmp(args[i], "--env-file=", 11))
            env = args[i] + 11;
    }
    snprintf(path, sizeof path, "/proc/%s/cwd", pid);
    ssize_t c = readlink(path, cwd, sizeof cwd - 1);
    if (c < 0)
        return false;
    cwd[c] = '\0';
    if (env[0] == '/')
        snprintf(file, sizeof file, "%s", env);
    else
        snprintf(file, sizeof file, "%s/%s", cwd, env);
    return realpath(file, real) != NULL && strcmp(real, env_real) == 0;
}

/* Sends SIGHUP to the servers using env_file; returns how many. */
static int signal_servers(const char *env_file)
{
    char real[PATH_MAX];
    int count = 0;
    DIR *d;
    struct dirent *e;

    if (realpath(env_file, real) == NULL || (d = opendir("/proc")) == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || !serves_env_file(e->d_name, real))
            continue;
        if (kill((pid_t)atol(e->d_name), SIGHUP) == 0)
            count++;
    }
    closedir(d);
    return count;
}

int tokencmd_main(int argc, char **argv)
{
    char token[65], err[512];
    int bad;
    argc--, argv++; /* the words after "token" */

    if (argc > 1 && strcmp(argv[0], "gen") == 0 && strcmp(argv[1], "--name") == 0) {
        if (cliargs_want_help(argc, argv)) {
            fputs(tokengen_usage, stdout);
            return 0;
        }
        return tokengen_main(argc - 1, argv + 1);
    }
    if (argc < 1 || cliargs_want_help(argc, argv)) {
        fputs(tokencmd_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? EXIT_USAGE : 0;
    }
    bool rotate = strcmp(argv[0], "rotate") == 0;
    if (strcmp(argv[0], "gen") != 0 && !rotate) {
        fprintf(stderr, "hermes-mcp: unknown token command '%s'\n%s", argv[0], tokencmd_usage);
        return EXIT_USAGE;
    }
    const char *file = cliargs_env_file(argc, argv, tokencmd_usage, &bad);
    if (bad)
        return EXIT_USAGE;
    if (!crypto_random_hex(token, 32)) {
        fprintf(stderr, "hermes-mcp: the random generator failed\n");
        return 1;
    }
    bool ok = envfile_set(file, "MCP_AUTH_TOKEN", token, err, sizeof err);
    memset(token, 0, sizeof token);
    if (!ok) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
        return 1;
    }
    printf("MCP_AUTH_TOKEN written to %s (mode 600)\n", file);
    if (rotate) {
        int n = signal_servers(file);
        printf("told %d running server%s to reload\n", n, n == 1 ? "" : "s");
    }
    return 0;
}
