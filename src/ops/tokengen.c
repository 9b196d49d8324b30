/* tokengen.c — a token for one principal of the tokens file. The token is printed once, for the
 * operator to hand to the role; the file gets only its SHA-256, which the operator pastes in
 * (printed as a ready YAML entry). Writing the file is left to the operator on purpose: it is
 * theirs (comments, order, review), and a reload (SIGHUP) then picks the entry up. */
#include "tokengen.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "crypto.h"
#include "exitcode.h"
#include "hex.h"
#include "principal.h"

const char tokengen_usage[] =
    "usage: hermes-mcp token gen --name NAME --scopes SCOPES [--agents AGENTS]\n"
    "                            [--expires DATE]\n"
    "\n"
    "Makes a token for one principal (role) of the tokens file (TOKENS_FILE). Prints the token\n"
    "once (give it to the role; it is not stored) and the YAML entry, with the token's SHA-256,\n"
    "to add under \"tokens:\" in the file; then reload the server (SIGHUP).\n"
    "SCOPES  comma-separated: hermes:read (hermes_status, hermes_result, hermes_files,\n"
    "        list_agents), hermes:task (hermes_task, hermes_cancel), hermes:admin (hermes_reset),\n"
    "        gateway:<upstream>\n"
    "AGENTS  comma-separated agent names the role may delegate to (default: every agent)\n"
    "DATE    UTC expiry, 2027-01-31 or 2027-01-31T12:00:00Z (default: never)\n"
    "Exit codes: 0 printed, 1 no random bytes, 2 usage error.\n";

/* Checks a comma-separated list item by item; prints the first bad one. */
static bool check_list(const char *list, bool (*ok)(const char *), const char *what)
{
    char item[128];
    size_t count = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof item) {
            fprintf(stderr, "hermes-mcp: --%s: empty or overlong item\n%s", what, tokengen_usage);
            return false;
        }
        memcpy(item, p, n);
        item[n] = '\0';
        if (!ok(item)) {
            fprintf(stderr, "hermes-mcp: --%s: '%s' is not valid\n%s", what, item, tokengen_usage);
            return false;
        }
        count++;
        p += n + (p[n] == ',');
    }
    if (count == 0 || count > PRINCIPAL_LIST_MAX) {
        fprintf(stderr, "hermes-mcp: --%s takes 1-%d items\n%s", what, PRINCIPAL_LIST_MAX,
                tokengen_usage);
        return false;
    }
    return true;
}

/* The list as YAML flow: [a, b]. */
static void print_list(const char *key, const char *list)
{
    printf("    %s: [", key);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        printf("%s%.*s", p == list ? "" : ", ", (int)n, p);
        p += n + (p[n] == ',');
    }
    printf("]\n");
}

int tokengen_main(int argc, char **argv)
{
    const char *name = NULL, *scopes = NULL, *agents = NULL, *expires = NULL;

    for (int i = 0; i < argc; i++) {
        const char **slot = !strcmp(argv[i], "--name")      ? &name
                            : !strcmp(argv[i], "--scopes")  ? &scopes
                            : !strcmp(argv[i], "--agents")  ? &agents
                            : !strcmp(argv[i], "--expires") ? &expires
                                                            : NULL;
        if (slot == NULL || i + 1 >= argc) {
            fprintf(stderr, "hermes-mcp: unknown or incomplete argument '%s'\n%s", argv[i],
                    tokengen_usage);
            return EXIT_USAGE;
        }
        *slot = argv[++i];
    }
    if (name == NULL || scopes == NULL) {
        fprintf(stderr, "hermes-mcp: --name and --scopes are required\n%s", tokengen_usage);
        return EXIT_USAGE;
    }
    if (!principal_name_ok(name) || strcmp(name, PRINCIPAL_OWNER) == 0) {
        fprintf(stderr,
                "hermes-mcp: --name must be 1-64 of [A-Za-z0-9._-] and not 'owner' (that is "
                "MCP_AUTH_TOKEN)\n");
        return EXIT_USAGE;
    }
    if (!check_list(scopes, principal_scope_known, "scopes") ||
        (agents && !check_list(agents, principal_name_ok, "agents")))
        return EXIT_USAGE;
    time_t when;
    if (expires && (!tokens_parse_time(expires, &when) || when <= time(NULL))) {
        fprintf(stderr, "hermes-mcp: --expires must be a UTC date in the future, 2027-01-31 or "
                        "2027-01-31T12:00:00Z\n");
        return EXIT_USAGE;
    }
    char token[65], hex[65];
    unsigned char digest[32];
    if (!crypto_random_hex(token, 32)) {
        fprintf(stderr, "hermes-mcp: the random generator failed\n");
        return 1;
    }
    crypto_sha256(token, 64, digest);
    hex_encode(digest, sizeof digest, hex);
    printf("token for '%s' (shown once, not stored; give it to the role as its bearer token):\n"
           "%s\n\n"
           "add this entry under \"tokens:\" in the TOKENS_FILE, then reload the server (SIGHUP):\n"
           "  - name: %s\n    sha256: %s\n",
           name, token, name, hex);
    print_list("scopes", scopes);
    if (agents)
        print_list("agents", agents);
    if (expires)
        printf("    expires: %s\n", expires);
    explicit_bzero(token, sizeof token); /* memset of a dead buffer may be optimised away */
    return 0;
}
