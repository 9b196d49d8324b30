/* main.c — the command line: one table of commands, used for dispatch and for help. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "approvalscli.h"
#include "cliargs.h"
#include "doctor.h"
#include "gwcheck.h"
#include "oauthcmd.h"
#include "serve.h"
#include "smoke.h"
#include "storecli.h"
#include "taskscli.h"
#include "tokencmd.h"
#include "version.h"

static const char version_usage[] =
    "usage: hermes-mcp version\n"
    "\n"
    "Prints \"hermes-mcp VERSION\". Exit codes: 0 always, 2 usage error.\n";

/* The commands of src/ops take the words after the command; these take the command too. */
static int run_doctor(int argc, char **argv)
{
    return doctor_main(argc - 1, argv + 1);
}

static int run_smoke(int argc, char **argv)
{
    return smoke_main(argc - 1, argv + 1);
}

static int run_tasks(int argc, char **argv)
{
    return taskscli_main(argc - 1, argv + 1);
}

static int run_store(int argc, char **argv)
{
    return storecli_main(argc - 1, argv + 1);
}

static int run_gateway(int argc, char **argv)
{
    return gwcheck_main(argc - 1, argv + 1);
}

static int run_approvals(int argc, char **argv)
{
    return approvalscli_main(argv[0], argc - 1, argv + 1);
}

static int run_version(int argc, char **argv)
{
    if (cliargs_want_help(argc - 1, argv + 1)) {
        fputs(version_usage, stdout);
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "hermes-mcp: unknown argument '%s'\n%s", argv[1], version_usage);
        return EXIT_USAGE;
    }
    printf("hermes-mcp %s\n", HM_VERSION);
    return 0;
}

static int run_help(int argc, char **argv);

/* The commands, in the order help lists them. fn gets argv[0] as typed (an alias too). */
struct command {
    const char *name;
    const char *aliases[3];
    int (*fn)(int argc, char **argv);
    const char *usage;   /* help COMMAND; NULL: the general usage */
    const char *summary; /* its lines in the general usage */
};

static const struct command commands[] = {
    {"serve",
     {NULL},
     serve_main,
     serve_usage,
     "  serve [--env-file FILE]      run the MCP server (Streamable HTTP on /mcp)\n"},
    {"oauth",
     {NULL},
     oauthcmd_main,
     oauthcmd_usage,
     "  oauth passwd [--env-file FILE]\n"
     "                               set the owner's OAuth consent passphrase (read from stdin)\n"
     "  oauth mint-client            print a new static OAuth client id and secret, once\n"
     "  oauth clients|tokens [revoke ...] [--env-file FILE]\n"
     "                               list or revoke OAuth clients and tokens (help oauth)\n"},
    {"doctor",
     {NULL},
     run_doctor,
     doctor_usage,
     "  doctor [--env-file FILE] [--no-probe] [--timeout S]\n"
     "                               check the setup and the agents, one line per check\n"},
    {"token",
     {NULL},
     tokencmd_main,
     tokencmd_usage,
     "  token gen [--env-file FILE]  create or replace MCP_AUTH_TOKEN in FILE (mode 600);\n"
     "                               prints the file's path, never the token\n"
     "  token rotate [--env-file FILE]\n"
     "                               the same, then tells servers using FILE to reload\n"
     "  token gen --name N --scopes S [--agents A] [--expires DATE]\n"
     "                               a token for one role of TOKENS_FILE (help token)\n"},
    {"smoke",
     {NULL},
     run_smoke,
     smoke_usage,
     "  smoke --base URL [--id ID] [--env-file FILE]\n"
     "                               check a running server end to end (see help smoke)\n"},
    {"tasks",
     {NULL},
     run_tasks,
     tasks_usage,
     "  tasks list|prune [--env-file FILE] [--json|--dry-run]\n"
     "                               list the task directories, prune finished ones (help "
     "tasks)\n"},
    {"store",
     {NULL},
     run_store,
     storecli_usage,
     "  store init|status|migrate|export [--env-file FILE] ...\n"
     "                               create or upgrade STORE_URL's schema; its version and\n"
     "                               replicas; tasks from files to it and back (help store)\n"},
    {"gateway",
     {NULL},
     run_gateway,
     gateway_usage,
     "  gateway check [--probe] [--env-file FILE]\n"
     "                               validate GATEWAY_FILE, print the upstreams; --probe starts\n"
     "                               them and prints the exposed names (help gateway)\n"},
    {"approvals",
     {"approve", "deny", NULL},
     run_approvals,
     approvals_usage,
     "  approvals [--json] | approve ID | deny ID [--reason TEXT]   [--env-file FILE]\n"
     "                               list or answer the calls waiting for an operator\n"
     "                               (help approvals)\n"},
    {"version",
     {"--version", NULL},
     run_version,
     version_usage,
     "  version                      print the version\n"},
    {"help", {"--help", "-h", NULL}, run_help, NULL, "  help [COMMAND]               show help\n"},
};

static void print_usage(FILE *out)
{
    fputs("usage: hermes-mcp <command> [options]\n\ncommands:\n", out);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fputs(commands[i].summary, out);
    fputs("\nFILE defaults to ./.env. Exit codes: 0 ok, 1 runtime failure, 2 usage or "
          "configuration\nerror. See docs/guides/configuration.md#the-env-file for the "
          "configuration keys.\n",
          out);
}

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
        for (const char *const *a = commands[i].aliases; *a; a++)
            if (strcmp(*a, name) == 0)
                return &commands[i];
    }
    return NULL;
}

static int run_help(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stdout);
        return 0;
    }
    const struct command *c = find_command(argv[1]);
    if (c == NULL || c->usage == NULL) {
        fprintf(stderr, "hermes-mcp: no command '%s'\n", argv[1]);
        print_usage(stderr);
        return EXIT_USAGE;
    }
    fputs(c->usage, stdout);
    return 0;
}

/* Started with fds 0-2 closed (`<&- >&- 2>&-`), the first files we open would take those
 * numbers: our log would then write into a socket, a pipe to an upstream or the audit file.
 * /dev/null holds them instead. */
static void hold_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd ? O_WRONLY : O_RDONLY) < 0)
            return;
}

int main(int argc, char **argv)
{
    hold_std_fds();
    if (argc < 2) {
        print_usage(stderr);
        return EXIT_USAGE;
    }
    const struct command *c = find_command(argv[1]);
    if (c == NULL) {
        fprintf(stderr, "hermes-mcp: unknown command '%s'\n", argv[1]);
        print_usage(stderr);
        return EXIT_USAGE;
    }
    return c->fn(argc - 1, argv + 1);
}
