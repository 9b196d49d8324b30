/* approvalscli.c — the operator's side of the approval queue. Each command is one request line
 * on the server's control socket and one answer line back (see ctlsock.h); the socket is found
 * beside the env file, so --env-file names the same server as everywhere else. A server that is
 * not running, or an id that is unknown or already decided, is a clear message and exit 1. */
#include "approvalscli.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "ctlclient.h"
#include "ctlsock.h"
#include "exitcode.h"
#include "mem.h"
#include "timefmt.h"

const char approvals_usage[] =
    "usage: hermes-mcp approvals [--json] [--env-file FILE]\n"
    "       hermes-mcp approvals show ID [--env-file FILE]\n"
    "       hermes-mcp approve ID [--env-file FILE]\n"
    "       hermes-mcp deny ID [--reason TEXT] [--env-file FILE]\n"
    "\n"
    "Answers the approval queue of the server running with FILE (default ./.env): calls that\n"
    "wait for an operator (approve-guarded gateway tools, an agent run waiting for approval).\n"
    "approvals lists them (id, time, principal, tool, arguments with secrets masked, cut to\n"
    "one line); approvals show ID prints one request's whole masked arguments; approve\n"
    "lets one proceed; deny refuses it, the caller sees the reason. Unanswered requests are\n"
    "denied after approvals.timeout_s (GATEWAY_FILE, default 600). The server listens on\n"
    ".FILE" CTL_SOCKET_SUFFIX " beside FILE (.env" CTL_SOCKET_SUFFIX " for .env) and answers\n"
    "only its own user, and never a process it started (such as a tool's terminal).\n"
    "\n"
    "  --env-file FILE   the env file the server reads (default ./.env)\n"
    "  --json            approvals: the list as JSON\n"
    "  --reason TEXT     deny: why (at most 200 bytes), shown to the caller\n"
    "\n"
    "Exit codes: 0 ok, 1 server not running or id unknown or already decided, 2 usage error.\n";

struct opts {
    const char *env_file, *id, *reason;
    bool json, show;
};

static int usage_error(const char *cmd, const char *what, const char *arg)
{
    fprintf(stderr, "hermes-mcp %s: %s%s%s\n%s", cmd, what, arg ? arg : "", arg ? "'" : "",
            approvals_usage);
    return EXIT_USAGE;
}

static bool is_help(const char *a)
{
    return !strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help");
}

/* Returns -1 when parsed, else the exit code (help printed, or a usage error). */
static int parse(const char *cmd, int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.env_file = ".env"};
    bool list = !strcmp(cmd, "approvals"), deny = !strcmp(cmd, "deny");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            fputs(approvals_usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--env-file") && i + 1 < argc)
            o->env_file = argv[++i];
        else if (!strncmp(a, "--env-file=", 11) && a[11])
            o->env_file = a + 11;
        else if (list && !strcmp(a, "--json"))
            o->json = true;
        else if (deny && !strcmp(a, "--reason") && i + 1 < argc)
            o->reason = argv[++i];
        else if (deny && !strncmp(a, "--reason=", 9))
            o->reason = a + 9;
        else if (list && !o->show && !o->id && !strcmp(a, "show"))
            o->show = true;
        else if ((!list || o->show) && !o->id && a[0] != '-')
            o->id = a;
        else
            return usage_error(cmd, "unknown argument '", a);
    }
    if ((!list || o->show) && !o->id)
        return usage_error(cmd, "say which request: its ID from hermes-mcp approvals", NULL);
    if (o->id && strlen(o->id) > CTL_ID_MAX)
        return usage_error(cmd, "not an approval id: '", o->id);
    if (o->reason && strlen(o->reason) > CTL_REASON_MAX)
        return usage_error(cmd, "the reason is longer than 200 bytes", NULL);
    return -1;
}

/* Sends line on the socket at path and returns the answer line parsed, or NULL with a message
 * printed. */
static json_t *ask(const char *cmd, const char *path, const char *line)
{
    char err[PATH_MAX + 200];
    json_t *j = ctlclient_ask(path, line, err, sizeof err);
    if (j == NULL)
        fprintf(stderr, "hermes-mcp %s: %s\n", cmd, err);
    return j;
}

/* The code point UTF-8 sequence p starts with, its length in *len; -1 (and *len 1) for a byte
 * that does not start a well-formed sequence (stray, truncated, overlong, surrogate, too big). */
static long utf8_decode(const unsigned char *p, size_t *len)
{
    *len = 1;
    if (p[0] < 0x80)
        return p[0];
    size_t n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
               : p[0] >= 0xe0               ? (p[0] <= 0xef ? 3 : 0)
               : p[0] >= 0xc2               ? 2
                                            : 0;
    if (!n)
        return -1;
    long cp = p[0] & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
            return -1;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    static const long least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *len = n;
    return cp;
}

/* Code points that draw nothing or change how the text around them reads: controls (Cc), format
 * characters (Cf: soft hyphen, zero-width and direction marks, bidi embeddings and isolates, word
 * joiner and invisible operators, BOM, interlinear annotations, Arabic and Syriac marks, ...),
 * the line and paragraph separators (Zl, Zp), tags and variation selectors. */
static bool is_invisible(long cp)
{
    static const long ranges[][2] = {
        {0x0000, 0x001f},   {0x007f, 0x009f},   {0x00ad, 0x00ad},   {0x0600, 0x0605},
        {0x061c, 0x061c},   {0x06dd, 0x06dd},   {0x070f, 0x070f},   {0x0890, 0x0891},
        {0x08e2, 0x08e2},   {0x180b, 0x180f},   {0x200b, 0x200f},   {0x2028, 0x202e},
        {0x2060, 0x206f},   {0xfe00, 0xfe0f},   {0xfeff, 0xfeff},   {0xfff9, 0xfffb},
        {0x110bd, 0x110bd}, {0x110cd, 0x110cd}, {0x13430, 0x1343f}, {0x1bca0, 0x1bca3},
        {0x1d173, 0x1d17a}, {0xe0000, 0xe007f}, {0xe0100, 0xe01ef},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (cp >= ranges[i][0] && cp <= ranges[i][1])
            return true;
    return false;
}

char *approvalscli_printable(const char *s, bool keep_newlines)
{
    struct buf out;
    buf_init(&out, 0);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        size_t len;
        long cp = utf8_decode(p, &len);
        if (cp < 0 || cp < 0x20 || cp == 0x7f) {
            if (keep_newlines && cp == '\n')
                buf_append(&out, p, 1);
            else
                buf_printf(&out, "\\x%02x", *p);
        } else if (is_invisible(cp)) {
            buf_printf(&out, cp > 0xffff ? "\\U{%lX}" : "\\u%04lX", cp);
        } else {
            buf_append(&out, p, len);
        }
        p += len;
    }
    char *r = buf_detach(&out, NULL);
    return r ? r : xstrdup("");
}

/* Prints a field of the answer made printable (see approvalscli_printable). */
static void put_field(const char *label, json_t *v, bool keep_newlines)
{
    char *safe = approvalscli_printable(json_string_value(v), keep_newlines);
    printf("%s%s\n", label, safe);
    free(safe);
}

static void print_request(json_t *r)
{
    time_t t = (time_t)json_integer_value(json_object_get(r, "time"));
    char when[TIMEFMT_SIZE];
    timefmt_iso(t, when);
    put_field("id:        ", json_object_get(r, "id"), false);
    printf("time:      %s\n", when);
    put_field("principal: ", json_object_get(r, "principal"), false);
    put_field("tool:      ", json_object_get(r, "tool"), false);
    put_field("arguments (secrets masked):\n", json_object_get(r, "arguments"), true);
}

static void print_table(json_t *pending)
{
    size_t i;
    json_t *p;
    if (json_array_size(pending) == 0) {
        puts("no requests wait for approval");
        return;
    }
    printf("%-16s  %-20s  %-16s  %-28s  %s\n", "ID", "TIME", "PRINCIPAL", "TOOL", "ARGUMENTS");
    json_array_foreach(pending, i, p)
    {
        time_t t = (time_t)json_integer_value(json_object_get(p, "time"));
        char when[TIMEFMT_SIZE];
        timefmt_iso(t, when);
        const char *id = json_string_value(json_object_get(p, "id"));
        char *principal =
                 approvalscli_printable(json_string_value(json_object_get(p, "principal")), false),
             *tool = approvalscli_printable(json_string_value(json_object_get(p, "tool")), false),
             *summary =
                 approvalscli_printable(json_string_value(json_object_get(p, "summary")), false);
        printf("%-16s  %-20s  %-16s  %-28s  %s", id ? id : "-", when, principal, tool, summary);
        json_int_t cut = json_integer_value(json_object_get(p, "cut"));
        if (cut > 0)
            printf(" (+%lld bytes, see `hermes-mcp approvals show %s`)", (long long)cut,
                   id ? id : "ID");
        putchar('\n');
        free(principal);
        free(tool);
        free(summary);
    }
}

static const char *explain(const char *code)
{
    if (code && !strcmp(code, "unknown_id"))
        return "no request waits with that id (unknown, or already decided or timed out)";
    if (code && !strcmp(code, "store_unavailable"))
        return "the store (STORE_URL) did not answer; try again";
    if (code && !strcmp(code, "store_unknown"))
        return "the store (STORE_URL) did not confirm in time: the decision may have been made; "
               "check with hermes-mcp approvals";
    if (code && !strcmp(code, "busy"))
        return "the server's control socket is busy (all its connections in use); try again";
    if (code && !strcmp(code, "refused_descendant"))
        return "refused: a process started by the server cannot decide approvals";
    if (code && !strcmp(code, "refused_uid"))
        return "refused: only the user the server runs as can decide approvals";
    return code ? code : "refused";
}

int approvalscli_main(const char *cmd, int argc, char **argv)
{
    struct opts o;
    int rc = parse(cmd, argc, argv, &o);
    if (rc >= 0)
        return rc;
    char *path = ctlsock_path(o.env_file);
    if (!path) {
        fprintf(stderr, "hermes-mcp %s: the env file's directory path is too long\n", cmd);
        return EXIT_USAGE;
    }
    json_t *req =
        o.show ? json_pack("{s:s, s:s}", "op", "show", "id", o.id)
        : !strcmp(cmd, "approvals")
            ? json_pack("{s:s}", "op", "list")
            : json_pack("{s:s, s:s}", "op", strcmp(cmd, "deny") ? "approve" : "deny", "id", o.id);
    if (o.reason)
        json_object_set_new(req, "reason", json_string(o.reason));
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char *line = text ? xasprintf("%s\n", text) : NULL;
    free(text);
    json_t *ans = line ? ask(cmd, path, line) : NULL;
    free(line);
    free(path);
    if (!ans)
        return EXIT_FAIL;
    rc = 0;
    if (!json_is_true(json_object_get(ans, "ok"))) {
        fprintf(stderr, "hermes-mcp %s: %s\n", cmd,
                explain(json_string_value(json_object_get(ans, "error"))));
        rc = EXIT_FAIL;
    } else if (o.show) {
        json_t *r = json_object_get(ans, "request");
        if (o.json) {
            json_dumpf(r, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII); /* no raw bidi controls */
            putchar('\n');
        } else
            print_request(r);
    } else if (!strcmp(cmd, "approvals")) {
        json_t *pending = json_object_get(ans, "pending");
        if (o.json) {
            json_dumpf(pending, stdout,
                       JSON_INDENT(2) | JSON_ENSURE_ASCII); /* no raw bidi controls */
            putchar('\n');
        } else
            print_table(pending);
    } else
        printf("%s %s\n", o.id, strcmp(cmd, "deny") ? "approved" : "denied");
    json_decref(ans);
    return rc;
}
