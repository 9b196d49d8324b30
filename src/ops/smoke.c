/* smoke.c — `hermes-mcp smoke`: a small synchronous MCP client (httpc blocking, jansson) that
 * checks a running server the way the Node bridge's smoke test did. The token never reaches the
 * output: every line goes through smoke_clean_text(), which blanks it wherever a server echoes
 * it. The client is smoke_http.c's, where it points and the token smoke_config.c's. */
#include "smoke.h"
#include "smoke_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "crypto.h"
#include "dotenv.h"
#include "exitcode.h"
#include "mem.h"
#include "readfile.h"
#include "report.h"
#include "sse.h"
#include "taskpath.h"
#include "toolerr.h"
#include "version.h"

#define BODY_LIMIT (256 * 1024) /* the server's request body cap */
#define TASK_TEXT "hermes-mcp smoke test: reply with one short sentence saying that you are up."

const char smoke_usage[] =
    "usage: hermes-mcp smoke --base URL [--id ID] [--env-file FILE | --token-file FILE]\n"
    "                        [--timeout S] [--cacert FILE]\n"
    "\n"
    "Checks a running hermes-mcp end to end, as an MCP client would: GET /health, 401 without\n"
    "a token, initialize, tools/list (the eight bridge tools), a sync hermes_task (one small\n"
    "task for your agent), hermes_result, hermes_files, rejection of \"../\" and absolute paths,\n"
    "and the 256 KiB body limit. One line per check (\"ok ...\" or \"FAIL ...; fix: ...\"),\n"
    "then a summary.\n"
    "\n"
    "  --base URL       the server's root URL, local or tunnelled: http://127.0.0.1:8765 or\n"
    "                   https://mcp.example.com (a trailing /mcp is accepted). Plain http is\n"
    "                   refused for non-loopback hosts: the token would cross the network\n"
    "                   in clear\n"
    "  --id ID          task id for the sync task (default smoke-YYYYMMDD-HHMMSS-RANDOM); the\n"
    "                   same id again gets the stored result back\n"
    "  --env-file FILE  where MCP_AUTH_TOKEN is read (default ./.env, must be mode 600); the\n"
    "                   token is never printed\n"
    "  --token-file FILE  the bearer token to use instead (mode 600, the token on its first\n"
    "                   line): for a server without MCP_AUTH_TOKEN, an OAuth access token or a\n"
    "                   TOKENS_FILE role's token. Or set HERMES_MCP_TOKEN in the environment.\n"
    "                   Never give a token on the command line\n"
    "  --timeout S      seconds allowed per request, default 120 (the sync task waits for the\n"
    "                   agent)\n"
    "  --cacert FILE    trust the CA certificates in FILE (PEM) for an https --base served with\n"
    "                   a private CA; public tunnel URLs need nothing\n"
    "\n"
    "Exit codes: 0 every check passed, 1 a check failed or the server cannot be reached,\n"
    "2 usage or configuration error.\n";

static const char *const expected_tools[] = {"hermes_task",  "hermes_status", "hermes_result",
                                             "hermes_files", "list_agents",   "hermes_cancel",
                                             "hermes_reset", "whoami"};
#define NTOOLS (sizeof expected_tools / sizeof *expected_tools)
/* The Python server's names, listed with MCP_TOOL_ALIASES=1: ours, not counted as the gateway's. */
static const char *const alias_tools[] = {"hermes_ask", "hermes_check", NULL};

/* Copies server- or curl-provided text into out (at most outlen-1 bytes): the token, wherever
 * it appears, becomes "[redacted]" and control characters become '?' (report.h). The token is
 * removed before anything is cut, so no piece of it survives a truncation either. */
void smoke_clean_text(const struct smoke *s, const char *in, size_t inlen, char *out, size_t outlen)
{
    report_clean(&s->rep, in, inlen, out, outlen);
}

/* Server text (NULL: "(none)") cleaned and cut to outlen-1 bytes, in that order: a %.Ns of the
 * raw text could keep a piece of the token that smoke_clean_text() would no longer recognise. */
const char *smoke_cut(const struct smoke *s, const char *in, char *out, size_t outlen)
{
    if (in == NULL)
        in = "(none)";
    smoke_clean_text(s, in, strlen(in), out, outlen);
    return out;
}

static void emit(struct smoke *s, const char *tag, const char *name, const char *fix,
                 const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

static void emit(struct smoke *s, const char *tag, const char *name, const char *fix,
                 const char *fmt, va_list ap)
{
    /* Formatted whole and cut only once the token is out (smoke_clean_text): a cut first could
     * keep the start of a token that then no longer matches. */
    char *what = NULL, clean[2048];
    if (vasprintf(&what, fmt, ap) < 0)
        what = NULL;
    char *line = fix ? xasprintf("%-4s %s: %s; fix: %s", tag, name, what ? what : "?", fix)
                     : xasprintf("%-4s %s: %s", tag, name, what ? what : "?");
    free(what);
    smoke_clean_text(s, line, strlen(line), clean, sizeof clean);
    free(line);
    puts(clean);
    fflush(stdout);
}

static void pass(struct smoke *s, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pass(struct smoke *s, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(s, "ok", name, NULL, fmt, ap);
    va_end(ap);
    s->passed++;
}

/* Reports the failure described in s->why and s->fix. */
static void fail(struct smoke *s, const char *name)
{
    char line[2048], clean[2048];
    snprintf(line, sizeof line, "FAIL %s: %s; fix: %s", name, s->why, s->fix);
    smoke_clean_text(s, line, strlen(line), clean, sizeof clean);
    puts(clean);
    fflush(stdout);
    s->failed++;
}

static void skip(struct smoke *s, const char *name, const char *because)
{
    printf("skip %s: %s\n", name, because);
    fflush(stdout);
    s->skipped++;
}

bool smoke_problem(struct smoke *s, const char *fix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof s->why, fmt, ap);
    va_end(ap);
    snprintf(s->fix, sizeof s->fix, "%s", fix);
    return false;
}

/* ---- the checks ------------------------------------------------------------------------- */

/* Returns false when the server cannot be reached at all (the run stops there). */
static bool check_health(struct smoke *s)
{
    struct reply r;
    char terr[400], ex[200];
    const char *name = "GET /health";

    smoke_request(s, "GET", s->health_url, NULL, 0, 0, 0, &r);
    if (r.failed && !r.too_big) {
        smoke_transport_error(s, &r, terr, sizeof terr);
        smoke_problem(s,
                      r.cert_untrusted
                          ? "the certificate is not trusted; use the tunnel's public https URL, or "
                            "--cacert FILE for a private CA"
                          : "is hermes-mcp running? check --base",
                      "cannot reach %s (%s)", s->base, terr);
        fail(s, name);
        smoke_reply_cleanup(&r);
        return false;
    }
    json_t *j = r.body.len ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
    if (r.too_big)
        smoke_problem(s, "check that --base points at hermes-mcp", "the answer is too large");
    else if (r.status != 200) {
        smoke_answer_excerpt(s, &r, ex, sizeof ex);
        snprintf(s->why, sizeof s->why, "HTTP %ld (%s)", r.status, ex);
        if (r.status >= 500) /* typical of a tunnel whose server behind it is down */
            smoke_status_fix(s, r.status, s->fix, sizeof s->fix);
        else
            snprintf(s->fix, sizeof s->fix,
                     "check --base: it should be the server's root URL, "
                     "for example http://127.0.0.1:8765");
    } else if (!json_is_object(j) || !smoke_str(j, "status") ||
               strcmp(smoke_str(j, "status"), "ok") != 0)
        smoke_problem(s, "check that --base points at hermes-mcp and read its log",
                      "the answer is not JSON with \"status\": \"ok\"");
    else {
        char ver[64];
        const char *v = smoke_str(j, "version");
        smoke_clean_text(s, v ? v : "?", v ? strlen(v) : 1, ver, sizeof ver);
        pass(s, name, "200, status ok, version %s", ver);
        json_decref(j);
        smoke_reply_cleanup(&r);
        return true;
    }
    fail(s, name);
    json_decref(j);
    smoke_reply_cleanup(&r);
    return true;
}

static void check_no_auth(struct smoke *s)
{
    struct reply r;
    char terr[400];
    const char *name = "POST /mcp without a token";
    char body[300];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":"
             "\"hermes-mcp-smoke\",\"version\":\"%s\"}}}",
             PROTOCOL_VERSION, HM_VERSION);
    smoke_request(s, "POST", s->mcp_url, body, strlen(body), H_MCP, 0, &r);
    if (smoke_transport_error(s, &r, terr, sizeof terr))
        smoke_problem(s, "is hermes-mcp still running? check --base", "%s", terr);
    else if (r.status >= 200 && r.status < 300)
        smoke_problem(s,
                      "set MCP_AUTH_TOKEN in the server's env file (hermes-mcp token gen) and "
                      "restart it; do not expose it until then",
                      "HTTP %ld: the server answers without a token", r.status);
    else if (r.status != 401)
        smoke_problem(s, "check --base; a proxy in front of the server may be answering",
                      "HTTP %ld, expected 401", r.status);
    else if (strncasecmp(r.www_auth, "Bearer", 6) != 0)
        smoke_problem(s, "make sure nothing between you and hermes-mcp strips WWW-Authenticate",
                      "401 without a 'WWW-Authenticate: Bearer' header");
    else {
        pass(s, name, "401, WWW-Authenticate: Bearer");
        smoke_reply_cleanup(&r);
        return;
    }
    fail(s, name);
    smoke_reply_cleanup(&r);
}

/* Returns false when no session could be opened (the later checks cannot run). */
static bool check_initialize(struct smoke *s)
{
    const char *name = "initialize";
    json_t *res = smoke_rpc(s, "initialize",
                            json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion",
                                      PROTOCOL_VERSION, "capabilities", "clientInfo", "name",
                                      "hermes-mcp-smoke", "version", HM_VERSION));
    if (res == NULL) {
        fail(s, name);
        return false;
    }
    const char *pv = smoke_str(res, "protocolVersion");
    json_t *info = json_object_get(res, "serverInfo");
    const char *sname = smoke_str(info, "name"), *sver = smoke_str(info, "version");
    bool ok = false;
    if (pv == NULL || !*pv || strlen(pv) >= sizeof s->version)
        smoke_problem(s, "check that --base points at an MCP server (hermes-mcp)",
                      "the result has no protocolVersion");
    else if (sname == NULL)
        smoke_problem(s, "check that --base points at an MCP server (hermes-mcp)",
                      "the result has no serverInfo.name");
    else {
        snprintf(s->version, sizeof s->version, "%s", pv);
        ok = true;
    }
    if (ok) {
        /* The handshake ends with notifications/initialized, answered 202 with no body. */
        struct reply r;
        char terr[400];
        static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
        smoke_request(s, "POST", s->mcp_url, note, strlen(note), H_AUTH | H_MCP, 0, &r);
        if (smoke_transport_error(s, &r, terr, sizeof terr))
            ok = smoke_problem(s, "is hermes-mcp still running? check --base", "%s", terr);
        else if (r.status < 200 || r.status >= 300)
            ok = smoke_problem(s, "read the server's log", "notifications/initialized got HTTP %ld",
                               r.status);
        smoke_reply_cleanup(&r);
    }
    if (ok) {
        char n[80], v[40];
        smoke_clean_text(s, sname, strlen(sname), n, sizeof n);
        smoke_clean_text(s, sver ? sver : "?", sver ? strlen(sver) : 1, v, sizeof v);
        snprintf(s->server_name, sizeof s->server_name, "%s", n);
        snprintf(s->server_version, sizeof s->server_version, "%s", v);
        pass(s, name, "protocol %s, server %s %s, %s", s->version, n, v,
             s->session[0] ? "session issued" : "stateless");
    } else {
        fail(s, name);
    }
    json_decref(res);
    return ok;
}

static void check_tools(struct smoke *s)
{
    const char *name = "tools/list";
    bool seen[NTOOLS] = {false};
    size_t nextra = 0;
    char *cursor = NULL;

    for (int page = 0; page < 20; page++) {
        json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;
        free(cursor);
        cursor = NULL;
        json_t *res = smoke_rpc(s, "tools/list", params);
        if (res == NULL) {
            fail(s, name);
            return;
        }
        json_t *tools = json_object_get(res, "tools"), *t;
        size_t i;
        if (!json_is_array(tools)) {
            json_decref(res);
            smoke_problem(s, "check that --base points at hermes-mcp",
                          "the result has no tools array");
            fail(s, name);
            return;
        }
        json_array_foreach(tools, i, t)
        {
            const char *tn = smoke_str(t, "name");
            bool known = false;
            for (size_t k = 0; tn && k < NTOOLS; k++)
                if (strcmp(tn, expected_tools[k]) == 0)
                    seen[k] = known = true;
            for (size_t k = 0; tn && alias_tools[k]; k++)
                known = known || strcmp(tn, alias_tools[k]) == 0;
            if (!known)
                nextra++;
        }
        const char *next = smoke_str(res, "nextCursor");
        if (next && *next)
            cursor = xstrdup(next);
        json_decref(res);
        if (cursor == NULL)
            break;
    }
    free(cursor);
    char missing[400] = "";
    for (size_t k = 0; k < NTOOLS; k++)
        if (!seen[k])
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s",
                     *missing ? ", " : "", expected_tools[k]);
    /* The bridge tools must all be there; anything else is the gateway's (GATEWAY_FILE), whose
     * names serve already keeps apart from ours. */
    if (!*missing && nextra == 0) {
        pass(s, name, "the %zu bridge tools", NTOOLS);
    } else if (!*missing) {
        pass(s, name, "the %zu bridge tools and %zu more (gateway)", NTOOLS, nextra);
    } else {
        snprintf(s->why, sizeof s->why, "missing %s (%zu other tool%s listed)", missing, nextra,
                 nextra == 1 ? "" : "s");
        if (strcmp(s->server_name, "hermes-mcp") != 0)
            snprintf(s->fix, sizeof s->fix,
                     "--base answers as '%s', not hermes-mcp; point --base at hermes-mcp serve",
                     s->server_name);
        else if (strcmp(s->server_version, HM_VERSION) != 0)
            snprintf(s->fix, sizeof s->fix,
                     "the server runs hermes-mcp %s and this smoke is %s; restart the server "
                     "with this build, or run that version's smoke",
                     s->server_version, HM_VERSION);
        else
            snprintf(s->fix, sizeof s->fix,
                     "hermes-mcp %s lists every bridge tool to the owner token; check that "
                     "--env-file is this server's and read its log",
                     HM_VERSION);
        fail(s, name);
    }
}

static const char *task_fix(const char *code)
{
    if (code == NULL)
        return "read the server's log";
    if (!strcmp(code, toolerr_name(TE_AGENT_UNAVAILABLE)) ||
        !strcmp(code, toolerr_name(TE_UNKNOWN_AGENT)))
        return "start the Hermes agent and check HERMES_ENV_PATH (API_SERVER_HOST, "
               "API_SERVER_PORT, API_SERVER_KEY) in the server's env file";
    if (!strcmp(code, toolerr_name(TE_DUPLICATE_ID)))
        return "this --id was used for another task; leave --id out for a fresh one";
    if (!strcmp(code, toolerr_name(TE_BUSY)))
        return "a task with this id is still running; wait and run smoke again";
    return "read the server's log and the agent's log";
}

/* Returns true when the task completed (the result and files checks depend on it). */
static bool check_task(struct smoke *s)
{
    const char *name = "hermes_task sync";
    bool is_error = false;
    json_t *sc = smoke_call_tool(
        s, "hermes_task",
        json_pack("{s:s, s:s, s:s}", "task", TASK_TEXT, "mode", "sync", "id", s->id), &is_error);
    bool ok = false;
    if (sc == NULL) {
        fail(s, name);
        return false;
    }
    const char *status = smoke_str(sc, "status"), *id = smoke_str(sc, "id");
    if (is_error) {
        smoke_tool_error_why(s, "", sc);
        snprintf(s->fix, sizeof s->fix, "%s", task_fix(smoke_str(sc, "error")));
    } else if (id == NULL || strcmp(id, s->id) != 0) {
        char got[131];
        smoke_problem(s, "upgrade hermes-mcp; the task id must come back unchanged",
                      "the result is for id '%s', not '%s'", smoke_cut(s, id, got, sizeof got),
                      s->id);
    } else if (status == NULL || strcmp(status, "completed") != 0) {
        char sum[300], st[41];
        const char *m = smoke_str(sc, "summary");
        smoke_clean_text(s, m ? m : "", m ? strlen(m) : 0, sum, sizeof sum);
        smoke_problem(s, "the agent did not complete the task; read the agent's log",
                      "status %s: %s", smoke_cut(s, status, st, sizeof st), sum);
    } else {
        ok = true;
        pass(s, name, "task %s completed", s->id);
    }
    if (!ok)
        fail(s, name);
    json_decref(sc);
    return ok;
}

static void check_result(struct smoke *s)
{
    const char *name = "hermes_result";
    bool is_error = false;
    json_t *sc = smoke_call_tool(s, "hermes_result", json_pack("{s:s}", "id", s->id), &is_error);
    if (sc == NULL) {
        fail(s, name);
        return;
    }
    const char *id = smoke_str(sc, "id"), *status = smoke_str(sc, "status");
    if (is_error) {
        smoke_tool_error_why(s, "", sc);
        snprintf(s->fix, sizeof s->fix, "check TASKS_DIR in the server's env file is writable");
        fail(s, name);
    } else if (id == NULL || strcmp(id, s->id) != 0 || status == NULL ||
               strcmp(status, "completed") != 0) {
        char got[131], st[41];
        smoke_problem(s, "upgrade hermes-mcp; the stored result must be the task's",
                      "got id '%s' status '%s', expected '%s' completed",
                      smoke_cut(s, id, got, sizeof got), smoke_cut(s, status, st, sizeof st),
                      s->id);
        fail(s, name);
    } else {
        pass(s, name, "the stored result of %s (completed)", s->id);
    }
    json_decref(sc);
}

static void check_files(struct smoke *s)
{
    const char *name = "hermes_files";
    bool is_error = false, has_result = false;
    json_t *sc = smoke_call_tool(s, "hermes_files", json_pack("{s:s}", "id", s->id), &is_error);
    if (sc == NULL) {
        fail(s, name);
        return;
    }
    json_t *entries = json_object_get(sc, "entries"), *e;
    size_t i;
    json_array_foreach(entries, i, e)
    {
        if (smoke_str(e, "path") && strcmp(smoke_str(e, "path"), "result.json") == 0)
            has_result = true;
    }
    if (is_error) {
        smoke_tool_error_why(s, "", sc);
        snprintf(s->fix, sizeof s->fix, "check TASKS_DIR in the server's env file is readable");
        fail(s, name);
    } else if (!json_is_array(entries) || !has_result) {
        smoke_problem(s, "upgrade hermes-mcp; the listing must show the task's files",
                      "the listing has no entries array with result.json");
        fail(s, name);
    } else {
        pass(s, name, "%zu entries, result.json among them", json_array_size(entries));
    }
    json_decref(sc);
}

static void check_rejects(struct smoke *s, const char *name, const char *path)
{
    bool is_error = false;
    json_t *sc = smoke_call_tool(s, "hermes_files",
                                 json_pack("{s:s, s:s}", "id", s->id, "path", path), &is_error);
    if (sc == NULL) {
        fail(s, name);
        return;
    }
    const char *code = smoke_str(sc, "error");
    if (!is_error) {
        smoke_problem(s, "do not expose this server: upgrade hermes-mcp",
                      "the path '%s' was accepted (isError false): files outside the task are "
                      "readable",
                      path);
        fail(s, name);
    } else if (code == NULL || strcmp(code, toolerr_name(TE_INVALID_ARGUMENTS)) != 0) {
        char got[41];
        smoke_problem(s,
                      "upgrade hermes-mcp; paths must be checked before the file system is "
                      "touched",
                      "'%s' was refused with '%s', expected invalid_arguments", path,
                      smoke_cut(s, code ? code : "(no code)", got, sizeof got));
        fail(s, name);
    } else {
        pass(s, name, "'%s' refused with invalid_arguments", path);
    }
    json_decref(sc);
}

static void check_body_limit(struct smoke *s)
{
    const char *name = "body limit";
    struct reply r;
    char terr[400];
    /* A valid ping whose padding takes it one byte past 256 KiB: harmless if accepted. */
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":999999,\"method\":\"ping\",\"params\":"
                               "{\"pad\":\"";
    static const char tail[] = "\"}}";
    size_t len = BODY_LIMIT + 1, pad = len - (sizeof head - 1) - (sizeof tail - 1);
    char *body = xmalloc(len + 1);
    memcpy(body, head, sizeof head - 1);
    memset(body + sizeof head - 1, 'a', pad);
    memcpy(body + sizeof head - 1 + pad, tail, sizeof tail);
    smoke_request(s, "POST", s->mcp_url, body, len, H_AUTH | H_MCP, 0, &r);
    free(body);
    if (smoke_transport_error(s, &r, terr, sizeof terr)) {
        smoke_problem(s, "is hermes-mcp still running? check --base", "%s", terr);
        fail(s, name);
    } else if (r.status != 413) {
        smoke_problem(s,
                      r.status >= 200 && r.status < 300
                          ? "upgrade hermes-mcp; requests over 256 KiB must be refused"
                          : "check --base; a proxy in front of the server may be answering",
                      "a %zu-byte body got HTTP %ld, expected 413", len, r.status);
        fail(s, name);
    } else {
        pass(s, name, "a %zu-byte body got 413", len);
    }
    smoke_reply_cleanup(&r);
}

/* Ends the session politely (MCP_SESSIONS=1); not a check. */
static void close_session(struct smoke *s)
{
    struct reply r;
    if (!s->session[0])
        return;
    smoke_request(s, "DELETE", s->mcp_url, NULL, 0, H_AUTH | H_MCP, 0, &r);
    smoke_reply_cleanup(&r);
}

/* ---- command line ----------------------------------------------------------------------- */

static bool parse_args(struct smoke *s, int argc, char **argv, const char **base, int *help)
{
    const char *id = NULL, *timeout = NULL;
    *help = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = !strcmp(a, "--base")         ? base
                           : !strcmp(a, "--id")         ? &id
                           : !strcmp(a, "--env-file")   ? &s->env_file
                           : !strcmp(a, "--token-file") ? &s->token_file
                           : !strcmp(a, "--timeout")    ? &timeout
                           : !strcmp(a, "--cacert")     ? &s->cacert
                                                        : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = 1;
            return true;
        }
        if (dst && i + 1 < argc) {
            *dst = argv[++i];
            continue;
        }
        const char *eq = strchr(a, '=');
        if (eq && !strncmp(a, "--base=", 7))
            *base = eq + 1;
        else if (eq && !strncmp(a, "--id=", 5))
            id = eq + 1;
        else if (eq && !strncmp(a, "--env-file=", 11))
            s->env_file = eq + 1;
        else if (eq && !strncmp(a, "--token-file=", 13))
            s->token_file = eq + 1;
        else if (eq && !strncmp(a, "--timeout=", 10))
            timeout = eq + 1;
        else if (eq && !strncmp(a, "--cacert=", 9))
            s->cacert = eq + 1;
        else {
            fprintf(stderr, "hermes-mcp smoke: %s '%s'; see hermes-mcp smoke --help\n",
                    dst ? "missing value after" : "unknown argument", a);
            return false;
        }
    }
    if (*base == NULL) {
        fprintf(stderr, "hermes-mcp smoke: --base URL is required, for example "
                        "hermes-mcp smoke --base http://127.0.0.1:8765\n");
        return false;
    }
    if (s->cacert && access(s->cacert, R_OK) != 0) {
        fprintf(stderr, "hermes-mcp smoke: cannot read --cacert %s: %s\n", s->cacert,
                strerror(errno));
        return false;
    }
    if (timeout) {
        char *end;
        errno = 0;
        long t = strtol(timeout, &end, 10);
        if (errno || end == timeout || *end || t < 1 || t > 3600) {
            fprintf(stderr, "hermes-mcp smoke: --timeout takes 1-3600 seconds\n");
            return false;
        }
        s->timeout_s = t;
    }
    if (id) {
        if (!taskpath_id_ok(id, strlen(id))) {
            fprintf(stderr, "hermes-mcp smoke: --id must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}\n");
            return false;
        }
        snprintf(s->id, sizeof s->id, "%s", id);
    } else {
        char rnd[9];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        if (!crypto_random_hex(rnd, 4))
            snprintf(rnd, sizeof rnd, "%08lx", (unsigned long)getpid());
        strftime(s->id, sizeof s->id, "smoke-%Y%m%d-%H%M%S-", &tm);
        strncat(s->id, rnd, sizeof s->id - strlen(s->id) - 1);
    }
    return true;
}

int smoke_main(int argc, char **argv)
{
    struct smoke s = {.env_file = ".env", .timeout_s = 120};
    const char *base = NULL;
    char err[1024];
    int help;

    if (!parse_args(&s, argc, argv, &base, &help))
        return EXIT_USAGE;
    if (help) {
        fputs(smoke_usage, stdout);
        return 0;
    }
    if (!smoke_parse_base(&s, base, err, sizeof err) || !smoke_read_token(&s, err, sizeof err)) {
        fprintf(stderr, "hermes-mcp smoke: %s\n", err);
        return EXIT_USAGE;
    }
    report_init(&s.rep, "[redacted]", 1);
    report_secret(&s.rep, s.token);
    s.http = httpc_session_new(); /* libcurl is set up here, not before */
    if (s.http == NULL) {
        fprintf(stderr, "hermes-mcp smoke: %s\n", httpc_setup_error());
        explicit_bzero(s.token, strlen(s.token));
        free(s.token);
        report_cleanup(&s.rep);
        return EXIT_FAIL;
    }

    int rc = EXIT_FAIL;
    if (!check_health(&s))
        goto out; /* unreachable: that one line says it all */
    check_no_auth(&s);
    if (!check_initialize(&s)) {
        printf("smoke: stopped after initialize; %d passed, %d failed (%s)\n", s.passed, s.failed,
               s.base);
        goto out;
    }
    check_tools(&s);
    if (check_task(&s)) {
        check_result(&s);
        check_files(&s);
    } else {
        skip(&s, "hermes_result", "needs the completed sync task");
        skip(&s, "hermes_files", "needs the completed sync task");
    }
    check_rejects(&s, "traversal", "../../etc/passwd");
    check_rejects(&s, "absolute path", "/etc/passwd");
    check_body_limit(&s);
    close_session(&s);
    printf("smoke: %d passed, %d failed%s (%s, task id %s)\n", s.passed, s.failed + s.skipped,
           s.skipped ? " or skipped" : "", s.base, s.id);
    rc = s.failed || s.skipped ? EXIT_FAIL : 0;
out:
    fflush(stdout);
    httpc_session_free(s.http);
    if (s.token) {
        explicit_bzero(s.token, strlen(s.token));
        free(s.token);
    }
    report_cleanup(&s.rep);
    return rc;
}
