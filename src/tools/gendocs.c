/* gendocs — prints the files generated from the code's own tables, so they cannot drift from it:
 *   gendocs env-example        .env.example, from the config key table (configtab.c)
 *   gendocs env-md             docs/reference/env.md, the same table as a reference page
 *   gendocs env-man            man/hermes-mcp.env.5
 *   gendocs cli-man BINARY     man/hermes-mcp.1, from BINARY's own usage and help texts
 *   gendocs errors-md          docs/reference/errors.md, from the five error tables: tool errors
 *                              (toolerr.h), JSON-RPC codes (jrpc.h), HTTP errors (httperr.h),
 *                              OAuth errors (oautherr.h), exit status (exitcode.h)
 *   gendocs scopes-md          docs/reference/scopes.md, from the scope table (scopes.h)
 *   gendocs events-md          docs/reference/log-events.md, from the log events table (log.c)
 *   gendocs md-man NAME SECTION TITLE < FILE.md
 *                              a man page from a Markdown reference (headings, paragraphs, lists,
 *                              code blocks), e.g. hermes-mcp-gateway.yaml.5
 * `make docs` writes them; tests/integration/docs/gendocs.test.mjs fails when a committed copy
 * differs. No pandoc: the subset of Markdown the reference pages use is small. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "exitcode.h"
#include "httperr.h"
#include "jrpc.h"
#include "log.h"
#include "oautherr.h"
#include "scopes.h"
#include "toolerr.h"
#include "version.h"

#define WIDTH 98

static void wrap(FILE *out, const char *prefix, const char *text)
{
    size_t col = 0, plen = strlen(prefix);
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        if (col && col + 1 + n > WIDTH) {
            fputc('\n', out);
            col = 0;
        }
        if (col == 0) {
            fputs(prefix, out);
            col = plen;
        } else {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, n, out);
        col += n;
        p += n;
    }
    if (col)
        fputc('\n', out);
}

static const char *type_name(const struct config_key *k)
{
    switch (k->type) {
    case CONFIG_BOOL:
        return "boolean";
    case CONFIG_FLAG:
        return "flag";
    case CONFIG_UINT:
        return k->unit;
    case CONFIG_PATH:
        return "path";
    case CONFIG_SECRET:
        return "secret";
    case CONFIG_ENUM:
        return "word";
    default:
        return "text";
    }
}

static void dflt(const struct config_key *k, char *buf, size_t len)
{
    if (k->dflt_text)
        snprintf(buf, len, "%s", k->dflt_text);
    else if (k->type == CONFIG_UINT || k->type == CONFIG_BOOL || k->type == CONFIG_FLAG)
        snprintf(buf, len, "%lu", k->dflt);
    else
        snprintf(buf, len, "none");
}

static void range(const struct config_key *k, char *buf, size_t len)
{
    if (k->type == CONFIG_UINT)
        snprintf(buf, len, "%lu-%lu", k->min, k->max);
    else if (k->type == CONFIG_BOOL)
        snprintf(buf, len, "1/0, true/false, yes/no, on/off");
    else if (k->type == CONFIG_FLAG)
        snprintf(buf, len, "0 turns it off");
    else
        buf[0] = '\0';
}

static void example_value(const struct config_key *k, char *buf, size_t len)
{
    if (k->example)
        snprintf(buf, len, "%s", k->example);
    else if (k->type == CONFIG_UINT || k->type == CONFIG_BOOL || k->type == CONFIG_FLAG)
        snprintf(buf, len, "%lu", k->dflt);
    else
        buf[0] = '\0';
}

static void env_example(FILE *out)
{
    fputs("# hermes-mcp settings: copy to your env file (e.g. ~/.config/hermes-mcp/env), then\n"
          "#   chmod 600 FILE && hermes-mcp token gen --env-file FILE\n"
          "# Every key the server reads is below, commented out at its default; uncomment what "
          "you change.\n"
          "# Path values may start with $HOME or ${HOME} (~ is not expanded). "
          "docs/reference/env.md\n"
          "# and hermes-mcp.env(5) say more about each key. Never commit a file that holds a "
          "real token.\n"
          "# Generated from src/app/configtab.c by `make docs`.\n",
          out);
    for (int s = 0; s < CONFIG_SEC_COUNT; s++) {
        fprintf(out, "\n# --- %s ---\n", config_section_titles[s]);
        for (size_t i = 0; i < config_nkeys; i++) {
            const struct config_key *k = &config_keys[i];
            char v[256];
            if ((int)k->section != s)
                continue;
            example_value(k, v, sizeof v);
            wrap(out, "# ", k->summary);
            fprintf(out, "# %s=%s\n", k->key, v);
        }
    }
}

/* A table cell: no '|' or newline inside. */
static void cell(FILE *out, const char *text)
{
    for (const char *p = text; *p; p++)
        fputs(*p == '|' ? "\\|" : *p == '\n' ? " " : (char[]){*p, 0}, out);
}

static void env_md(FILE *out)
{
    fputs("# Environment keys\n\n"
          "<!-- Generated from src/app/configtab.c by `make docs`; edit the table, not this "
          "page. -->\n\n"
          "`hermes-mcp serve --env-file FILE` reads a dotenv file (default `./.env`). A file "
          "that holds a secret\n(`MCP_AUTH_TOKEN`, `OAUTH_CLIENT_SECRET`, `HERMES_API_KEY`, "
          "`OIDC_CLIENT_SECRET`, `OTEL_EXPORTER_OTLP_HEADERS`) "
          "must be mode 600. Path values may start\nwith `$HOME` or `${HOME}` (`~` is not "
          "expanded). `.env.example` lists every key at its default.\n"
          "*Reload* says whether `SIGHUP` (or `hermes-mcp token rotate`) applies a change, or "
          "whether it\ntakes a restart (the server logs which keys wait for one).\n",
          out);
    for (int s = 0; s < CONFIG_SEC_COUNT; s++) {
        fprintf(out, "\n## %c%s\n\n", config_section_titles[s][0] - 'a' + 'A',
                config_section_titles[s] + 1);
        fputs("| key | type | default | range | reload | description |\n"
              "|---|---|---|---|---|---|\n",
              out);
        for (size_t i = 0; i < config_nkeys; i++) {
            const struct config_key *k = &config_keys[i];
            char d[128], r[128];
            if ((int)k->section != s)
                continue;
            dflt(k, d, sizeof d);
            range(k, r, sizeof r);
            fprintf(out, "| `%s` | %s | ", k->key, type_name(k));
            cell(out, d);
            fputs(" | ", out);
            cell(out, r);
            fprintf(out, " | %s | ", k->flags & CONFIG_RELOAD ? "SIGHUP" : "restart");
            cell(out, k->summary);
            if (k->help) {
                fputc(' ', out);
                cell(out, k->help);
            }
            fputs(" |\n", out);
        }
    }
}

/* Text into roff: backslashes escaped, no line starting with a control character. */
static void roff(FILE *out, const char *text)
{
    bool bol = true;
    for (const char *p = text; *p; p++) {
        if (bol && (*p == '.' || *p == '\''))
            fputs("\\&", out);
        if (*p == '\\')
            fputs("\\e", out);
        else if (*p == '-')
            fputs("\\-", out);
        else
            fputc(*p, out);
        bol = *p == '\n';
    }
}

static void man_head(FILE *out, const char *name, const char *section, const char *title)
{
    fprintf(out,
            ".\\\" Generated by gendocs (make docs); do not edit.\n"
            ".TH %s %s \"\" \"hermes-mcp %s\" \"%s\"\n",
            name, section, HM_VERSION, title);
}

static void env_man(FILE *out)
{
    man_head(out, "HERMES-MCP.ENV", "5", "File Formats");
    fputs(
        ".SH NAME\nhermes-mcp.env \\- settings of the hermes-mcp server\n"
        ".SH SYNOPSIS\n.B hermes-mcp serve \\-\\-env-file\n.I FILE\n"
        ".SH DESCRIPTION\n"
        "The server reads its settings from a dotenv file: one KEY=VALUE a line, # starts a "
        "comment, values may be quoted. A file that holds a secret (MCP_AUTH_TOKEN, "
        "OAUTH_CLIENT_SECRET, HERMES_API_KEY, OIDC_CLIENT_SECRET, OTEL_EXPORTER_OTLP_HEADERS) must "
        "be mode 600; "
        "secrets are "
        "never taken from "
        "the command line. Path values may start with $HOME or ${HOME}.\n.PP\n"
        "The server needs a way to authenticate clients: MCP_AUTH_TOKEN, TOKENS_FILE or "
        "OAUTH_ISSUER_URL. On SIGHUP it re-reads the file; keys marked \\(lqrestart\\(rq "
        "take effect only at the next start.\n",
        out);
    for (int s = 0; s < CONFIG_SEC_COUNT; s++) {
        fputs(".SH ", out);
        for (const char *t = config_section_titles[s]; *t; t++)
            fputc(*t >= 'a' && *t <= 'z' ? *t - 'a' + 'A' : *t, out);
        fputc('\n', out);
        for (size_t i = 0; i < config_nkeys; i++) {
            const struct config_key *k = &config_keys[i];
            char d[128], r[128];
            if ((int)k->section != s)
                continue;
            dflt(k, d, sizeof d);
            range(k, r, sizeof r);
            fprintf(out, ".TP\n.B %s\n", k->key);
            roff(out, k->summary);
            if (k->help) {
                fputc(' ', out);
                roff(out, k->help);
            }
            fputs("\n.br\n", out);
            fprintf(out, "Type: %s; default: ", type_name(k));
            roff(out, d);
            if (r[0]) {
                fputs("; range: ", out);
                roff(out, r);
            }
            fprintf(out, "; a change: %s.\n",
                    k->flags & CONFIG_RELOAD ? "applied on SIGHUP" : "at a restart");
        }
    }
    fputs(".SH FILES\n.TP\n/usr/share/doc/hermes-mcp/examples/env.example\n"
          "every key, commented out at its default\n"
          ".SH SEE ALSO\n.BR hermes-mcp (1),\n.BR hermes-mcp-gateway.yaml (5)\n",
          out);
}

/* Runs cmd and copies its standard output into a new string. */
static char *run(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    int ch;
    if (p == NULL || mem == NULL)
        exit(1);
    while ((ch = fgetc(p)) != EOF)
        fputc(ch, mem);
    fclose(mem);
    if (pclose(p) != 0) {
        fprintf(stderr, "gendocs: %s failed\n", cmd);
        exit(1);
    }
    return buf;
}

static void verbatim(FILE *out, const char *text)
{
    fputs(".nf\n", out);
    roff(out, text);
    fputs(".fi\n", out);
}

static void cli_man(FILE *out, const char *bin)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' --help", bin);
    char *usage = run(cmd);
    man_head(out, "HERMES-MCP", "1", "User Commands");
    fputs(".SH NAME\nhermes-mcp \\- an MCP server for a local Hermes Agent and upstream MCP "
          "servers\n.SH SYNOPSIS\n.B hermes-mcp\n.I command\n[\n.I options\n]\n"
          ".SH DESCRIPTION\n"
          "hermes-mcp serves the Model Context Protocol over Streamable HTTP on /mcp: it bridges "
          "remote MCP clients to a local Hermes Agent and aggregates upstream MCP servers (the "
          "gateway). Its settings are in an env file, see\n.BR hermes-mcp.env (5).\n"
          ".SH USAGE\n",
          out);
    verbatim(out, usage);
    fputs(".SH COMMANDS\n", out);
    /* The commands are the first words of the usage's indented lines, once each. */
    char seen[64][32];
    size_t nseen = 0;
    for (const char *line = strstr(usage, "\ncommands:\n"); line && *line;) {
        line = strchr(line, '\n');
        if (line == NULL)
            break;
        line++;
        if (strncmp(line, "  ", 2) != 0 || line[2] < 'a' || line[2] > 'z')
            continue;
        char name[32];
        size_t n = strspn(line + 2, "abcdefghijklmnopqrstuvwxyz");
        if (n >= sizeof name || nseen == 64)
            continue;
        memcpy(name, line + 2, n);
        name[n] = '\0';
        bool dup = strcmp(name, "help") == 0;
        for (size_t i = 0; i < nseen && !dup; i++)
            dup = strcmp(seen[i], name) == 0;
        if (dup)
            continue;
        memcpy(seen[nseen++], name, n + 1);
        snprintf(cmd, sizeof cmd, "'%s' help %s", bin, name);
        char *help = run(cmd);
        fprintf(out, ".SS %s\n", name);
        verbatim(out, help);
        free(help);
    }
    fputs(".SH EXIT STATUS\n0 ok, 1 runtime failure, 2 usage or configuration error.\n"
          ".SH FILES\n.TP\n\\&./.env\nthe default env file\n"
          ".SH SEE ALSO\n.BR hermes-mcp.env (5),\n.BR hermes-mcp-gateway.yaml (5)\n",
          out);
    free(usage);
}

/* Inline Markdown into roff: `code` and **strong** in bold, links as their text. */
static void md_inline(FILE *out, const char *s, size_t n)
{
    char *text = strndup(s, n), *o = text;
    for (const char *p = text; *p; p++) {
        if (*p == '[' && strstr(p, "](")) { /* [text](url) -> text */
            const char *close = strstr(p, "](");
            const char *end = strchr(close, ')');
            if (end) {
                memmove(o, p + 1, (size_t)(close - p - 1));
                o += close - p - 1;
                p = end;
                continue;
            }
        }
        *o++ = *p;
    }
    *o = '\0';
    bool bold = false;
    for (const char *p = text; *p; p++) {
        if (*p == '`' || (p[0] == '*' && p[1] == '*')) {
            fputs(bold ? "\\fR" : "\\fB", out);
            bold = !bold;
            p += *p == '*';
            continue;
        }
        char one[2] = {*p, 0};
        roff(out, one);
    }
    if (bold)
        fputs("\\fR", out);
    free(text);
}

static void md_man(FILE *out, FILE *in, const char *name, const char *section, const char *title)
{
    char line[4096];
    bool code = false, para = false;
    char upper[256];
    size_t i;
    for (i = 0; name[i] && i + 1 < sizeof upper; i++)
        upper[i] = name[i] >= 'a' && name[i] <= 'z' ? name[i] - 'a' + 'A' : name[i];
    upper[i] = '\0';
    man_head(out, upper, section, title);
    while (fgets(line, sizeof line, in)) {
        size_t n = strcspn(line, "\n");
        line[n] = '\0';
        if (strncmp(line, "```", 3) == 0) {
            fputs(code ? ".fi\n.RE\n" : ".PP\n.RS 4\n.nf\n", out);
            code = !code;
            para = false;
            continue;
        }
        if (code) {
            roff(out, line);
            fputc('\n', out);
        } else if (strncmp(line, "<!--", 4) == 0) {
            continue;
        } else if (strncmp(line, "# ", 2) == 0) {
            fputs(".SH NAME\n", out);
            fputs(name, out);
            fputs(" \\- ", out);
            md_inline(out, line + 2, n - 2);
            fputc('\n', out);
            para = true;
        } else if (strncmp(line, "## ", 3) == 0 || strncmp(line, "### ", 4) == 0) {
            bool sub = line[2] == '#';
            const char *t = line + (sub ? 4 : 3);
            fputs(sub ? ".SS " : ".SH ", out);
            for (; *t; t++)
                fputc(!sub && *t >= 'a' && *t <= 'z' ? *t - 'a' + 'A' : *t, out);
            fputc('\n', out);
            para = true;
        } else if (strncmp(line, "- ", 2) == 0) {
            fputs(".IP \\(bu 2\n", out);
            md_inline(out, line + 2, n - 2);
            fputc('\n', out);
            para = true;
        } else if (n == 0) {
            para = false;
        } else {
            if (!para)
                fputs(".PP\n", out);
            md_inline(out, line + strspn(line, " "), n - strspn(line, " "));
            fputc('\n', out);
            para = true;
        }
    }
}

/* docs/reference/errors.md: every code a client, an operator or a script can get back. */
static void errors_md(FILE *out)
{
    fputs("<!-- Generated by `make docs` (src/tools/gendocs.c) from the error tables in the code; "
          "do not edit. -->\n# Errors\n\n"
          "Every error hermes-mcp answers with comes from one of five tables in the code, and "
          "this page is made from them:\n\n"
          "- [Tool errors](#tool-errors): a tool call that ran and failed\n"
          "- [JSON-RPC errors](#json-rpc-errors): a request the server refused\n"
          "- [HTTP errors](#http-errors): a request outside JSON-RPC the server refused\n"
          "- [OAuth errors](#oauth-errors): the authorization server and bearer challenges\n"
          "- [Exit status](#exit-status): the `hermes-mcp` commands\n\n"
          "## Tool errors\n\n"
          "A tool that fails answers a result with `isError: true` whose `structuredContent` is "
          "`{\"error\": NAME, \"message\": TEXT}`, with `retry_after` (seconds) when waiting "
          "helps. Every tool's `outputSchema` accepts this shape beside its success shape.\n\n"
          "| error | when |\n|---|---|\n",
          out);
    for (int e = 0; e < TE_COUNT; e++)
        fprintf(out, "| `%s` | %s |\n", toolerr_name((enum toolerr)e),
                toolerr_meaning((enum toolerr)e));
    fputs("\n## JSON-RPC errors\n\n"
          "A request the server refuses gets a JSON-RPC error object `{code, message}`; the "
          "message starts with the words below and says why. Errors of an upstream MCP server "
          "are passed on with their own code.\n\n"
          "| code | message | when |\n|---|---|---|\n",
          out);
    for (size_t i = 0; jrpc_err_at(i); i++) {
        const struct jrpc_err_info *e = jrpc_err_at(i);
        fprintf(out, "| %d | %s | %s |\n", e->code, e->name, e->meaning);
    }
    fputs("\n## HTTP errors\n\n"
          "Outside JSON-RPC (`/health`, `/metrics`, the protected resource metadata, unknown "
          "paths, and `/mcp` before its body is read, as a refused bearer token) the body is "
          "`{\"error\": NAME, \"message\": TEXT}`.\n\n"
          "| status | error | message | when |\n|---|---|---|---|\n",
          out);
    for (int e = 0; e < HTTPERR_COUNT; e++) {
        const struct httperr_info *i = httperr_info((enum httperr)e);
        fprintf(out, "| %u | `%s` | %s | %s |\n", i->status, i->name, i->message, i->when);
    }
    fputs("\n## OAuth errors\n\n"
          "The authorization server answers `{\"error\": NAME, \"error_description\": TEXT}` "
          "(or, once the redirect URI is known good, redirects back with `error=NAME`); `/mcp` "
          "names the last two in its `WWW-Authenticate: Bearer` challenge.\n\n"
          "| error | defined in | when |\n|---|---|---|\n",
          out);
    for (int e = 0; e < OAUTH_ERR_COUNT; e++) {
        const struct oauth_err_info *i = oauth_err_info((enum oauth_err)e);
        fprintf(out, "| `%s` | %s | %s |\n", i->name, i->rfc, i->meaning);
    }
    fputs("\n## Exit status\n\n| status | meaning |\n|---|---|\n", out);
    for (size_t i = 0; exitcode_at(i); i++)
        fprintf(out, "| %d | %s |\n", (int)exitcode_at(i)->code, exitcode_at(i)->meaning);
}

/* docs/reference/scopes.md: what each scope of a token or an OAuth grant lets it do. */
static void scopes_md(FILE *out)
{
    fputs("<!-- Generated by `make docs` (src/tools/gendocs.c) from the scope table "
          "(src/http/scopes.h); do not edit. -->\n# Scopes\n\n"
          "A credential holds scopes: a role of `TOKENS_FILE` those its entry lists (see "
          "[Configuration](../guides/configuration.md#principals-one-token-per-role)), an OAuth "
          "client those it was granted, the owner's token (`MCP_AUTH_TOKEN`) every one. A tool "
          "a credential lacks the scope of is left out of its `tools/list`, and calling it is "
          "refused (HTTP 403, `insufficient_scope`). An OAuth client that asks for no scope of "
          "these is granted the default ones.\n\n"
          "| scope | lets a credential use | default |\n|---|---|---|\n",
          out);
    for (size_t i = 0; scope_at(i); i++)
        fprintf(out, "| `%s` | %s | %s |\n", scope_at(i)->name, scope_at(i)->meaning,
                scope_at(i)->by_default ? "yes" : "no");
}

/* docs/reference/log-events.md: the stable part of the log lines scripts and tests match. */
static void events_md(FILE *out)
{
    static const char *levels[] = {"error", "warn", "info", "debug"};
    fputs("<!-- Generated by `make docs` (src/tools/gendocs.c) from the event table in "
          "src/base/log.c; do not edit. -->\n# Log events\n\n"
          "hermes-mcp logs one line per event on stderr (the journal under systemd). The prose "
          "is for people and its wording may change. A line a script may wait on or alert on "
          "ends in a named event, the part that stays the same:\n\n"
          "```\nhermes-mcp: info: upstream files: ready, 14 tools "
          "[event=upstream_ready upstream=files tools=14]\n```\n\n"
          "The bracket holds `event=NAME`, then the event's fields as `key=value`, in the order "
          "below. A value with a space, a double quote, `=`, `[`, `]` or a control byte is "
          "written in double quotes, with `\\\"`, `\\\\`, `\\n`, `\\r` and `\\t` escaped "
          "and any other control byte as `\\xNN` (two lowercase hex digits), so an event is "
          "always one line. When the fields do not all fit on the line (the prose gives way "
          "first), the bracket ends in `truncated=KEY`: the value of `KEY` is cut short (its "
          "quotes still balanced) and the fields after it are left out. The prose before the "
          "bracket never holds `[event=`, so the first one on a line is the event's. A match for "
          "`\\[event=NAME( |\\]$)` finds an event whatever the prose says.\n\n"
          "| event | level | fields | when |\n|---|---|---|---|\n",
          out);
    for (int e = 0; e < EV_COUNT; e++) {
        const struct log_ev_info *i = log_ev_at((enum log_ev)e);
        fprintf(out, "| `%s` | %s | ", i->name, levels[i->lvl]);
        const char *f = i->fields;
        if (*f == '\0')
            fputs("none", out);
        while (*f) {
            size_t n = strcspn(f, " ");
            fprintf(out, "`%.*s`%s", (int)n, f, f[n] ? " " : "");
            f += n + (f[n] != '\0');
        }
        fprintf(out, " | %s |\n", i->when);
    }
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "env-example"))
        env_example(stdout);
    else if (!strcmp(what, "env-md"))
        env_md(stdout);
    else if (!strcmp(what, "env-man"))
        env_man(stdout);
    else if (!strcmp(what, "errors-md"))
        errors_md(stdout);
    else if (!strcmp(what, "scopes-md"))
        scopes_md(stdout);
    else if (!strcmp(what, "events-md"))
        events_md(stdout);
    else if (!strcmp(what, "cli-man") && argc == 3)
        cli_man(stdout, argv[2]);
    else if (!strcmp(what, "md-man") && argc == 5)
        md_man(stdout, stdin, argv[2], argv[3], argv[4]);
    else {
        fputs("usage: gendocs env-example|env-md|env-man|errors-md|scopes-md|events-md | "
              "cli-man BINARY | "
              "md-man NAME SECTION TITLE < FILE.md\n",
              stderr);
        return 2;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
