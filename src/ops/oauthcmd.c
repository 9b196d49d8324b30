/* oauthcmd.c — hermes-mcp oauth: the owner's consent passphrase (passwd, read from the
 * terminal, stored as an scrypt hash beside the env file), a static client (mint-client, to
 * stdout only); clients and tokens are oauthcli.c's. */
#include "oauthcmd.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cliargs.h"
#include "config.h"
#include "crypto.h"
#include "oauthcli.h"
#include "oauthpgcli.h"
#include "passphrase.h"

const char oauthcmd_usage[] =
    "usage: hermes-mcp oauth passwd [--env-file FILE]\n"
    "       hermes-mcp oauth mint-client\n"
    "       hermes-mcp oauth clients|tokens [revoke ...] [--env-file FILE] (oauth clients --help)\n"
    "\n"
    "mint-client  prints a new OAUTH_CLIENT_ID and OAUTH_CLIENT_SECRET (256 random bits) to\n"
    "        stdout, once, for the env file: a pre-registered confidential client for\n"
    "        connectors where one pastes a client id and secret. Nothing is written or\n"
    "        logged; the server keeps only the secret's hash.\n"
    "\n"
    "passwd  sets the owner's consent passphrase: what the owner types on the /authorize page to\n"
    "        allow an OAuth client (OAUTH_ISSUER_URL). Read from the terminal (twice, not echoed)\n"
    "        or, when stdin is not a terminal, its first line; never from the command line. At\n"
    "        least 12 characters. Stored as an scrypt hash in oauth-passphrase beside FILE\n"
    "        (atomically, mode 600); a running server uses the new one at the next consent.\n"
    "Exit codes: 0 written, 1 not written, 2 usage error.\n"
    "\n"
    "clients, tokens  list the OAuth clients and the tokens issued, or revoke them; a running\n"
    "        server refuses a revoked token from its next request on. Details:\n"
    "        hermes-mcp oauth clients --help.\n";

/* One line from stdin, without echo when it is a terminal. False at end of input or when
 * longer than PASSPHRASE_MAX. */
static bool read_secret(const char *prompt, char *out, size_t outsz)
{
    struct termios old, quiet;
    bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
    if (tty) {
        fputs(prompt, stderr);
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    bool ok = fgets(out, (int)outsz, stdin) != NULL;
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    size_t n = ok ? strlen(out) : 0;
    if (ok && (n == 0 || out[n - 1] != '\n') && !feof(stdin))
        ok = false; /* longer than the buffer */
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    return ok;
}

/* hermes-mcp oauth mint-client: to stdout only, so the secret goes where the owner sends it. */
static int mint_client(void)
{
    char id[33], secret[65];
    if (!crypto_random_hex(id, 16) || !crypto_random_hex(secret, 32)) {
        fprintf(stderr, "hermes-mcp: the random generator failed\n");
        return 1;
    }
    printf("OAUTH_CLIENT_ID=%s\nOAUTH_CLIENT_SECRET=%s\n", id, secret);
    fflush(stdout);
    explicit_bzero(secret, sizeof secret);
    if (isatty(STDOUT_FILENO))
        fprintf(stderr, "Add both lines to the env file; the secret is shown only this once.\n");
    return 0;
}

/* With STORE_URL in the env file: the line goes to the store, where every replica reads it at
 * its next consent; *rc set. False when the env file names no store (or cannot be read: then
 * the file beside it, as without a store). */
static bool store_passwd(const char *env_file, const char *line, int *rc)
{
    struct config cfg;
    char err[600];
    if (!config_load(&cfg, env_file, err, sizeof err))
        return false;
    bool store = cfg.store_url != NULL;
    if (store && oauthpgcli_passwd(cfg.store_url, cfg.store_password, line, err, sizeof err)) {
        printf("consent passphrase written to the store (scrypt; STORE_URL of %s)\n", env_file);
        *rc = 0;
    } else if (store) {
        fprintf(stderr, "hermes-mcp: %s\n", err);
    }
    config_cleanup(&cfg);
    return store;
}

int oauthcmd_main(int argc, char **argv)
{
    char pass[PASSPHRASE_MAX + 2], again[PASSPHRASE_MAX + 2], line[PASSPHRASE_LINE_MAX];
    char err[512];
    int bad;
    argc--, argv++; /* the words after "oauth" */
    if (argc >= 1 && (!strcmp(argv[0], "clients") || !strcmp(argv[0], "tokens")))
        return oauthcli_main(argc, argv);
    if (argc < 1 || cliargs_want_help(argc, argv)) {
        fputs(oauthcmd_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? EXIT_USAGE : 0;
    }
    if (strcmp(argv[0], "mint-client") == 0)
        return mint_client();
    if (strcmp(argv[0], "passwd") != 0) {
        fprintf(stderr, "hermes-mcp: unknown oauth command '%s'\n%s", argv[0], oauthcmd_usage);
        return EXIT_USAGE;
    }
    const char *file = cliargs_env_file(argc, argv, oauthcmd_usage, &bad);
    if (bad)
        return EXIT_USAGE;
    bool tty = isatty(STDIN_FILENO);
    int rc = 1;
    if (!read_secret("New consent passphrase: ", pass, sizeof pass)) {
        fprintf(stderr, "hermes-mcp: no passphrase read (at most %d bytes)\n", PASSPHRASE_MAX);
    } else if (strlen(pass) < PASSPHRASE_MIN) {
        fprintf(stderr, "hermes-mcp: the passphrase must have at least %d characters\n",
                PASSPHRASE_MIN);
    } else if (tty && (!read_secret("Again: ", again, sizeof again) || strcmp(pass, again))) {
        fprintf(stderr, "hermes-mcp: the two passphrases differ; nothing written\n");
    } else if (!passphrase_hash(pass, strlen(pass), line)) {
        fprintf(stderr, "hermes-mcp: hashing the passphrase failed\n");
    } else if (store_passwd(file, line, &rc)) {
        /* written to the store (or refused there) */
    } else {
        char *path = passphrase_path_beside(file);
        if (passphrase_save(path, line, err, sizeof err)) {
            printf("consent passphrase written to %s (scrypt, mode 600)\n", path);
            rc = 0;
        } else {
            fprintf(stderr, "hermes-mcp: %s\n", err);
        }
        free(path);
    }
    explicit_bzero(pass, sizeof pass);
    explicit_bzero(again, sizeof again);
    return rc;
}
