/* gwload.c — the gateway file from disk: capped read (readfile), mode check, and placeholder
 * values from the env file first, then the process environment; and the lint (what serve
 * refuses or warns about beyond the file's own rules), the same wherever the file is read. */
#include "gwload.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "readfile.h"

static const char *lookup(const char *var, void *arg)
{
    json_t *v = json_object_get(arg, var);
    if (json_is_string(v))
        return json_string_value(v);
    return getenv(var);
}

bool gwload_file(const char *path, json_t *env, struct gwfile *out, char *err, size_t errlen)
{
    char why[400];
    struct stat st;
    size_t len;

    memset(out, 0, sizeof *out);
    char *text = readfile_capped(path, "it", GW_FILE_MAX, &st, &len, why, sizeof why);
    if (text == NULL) {
        snprintf(err, errlen, "gateway file %s: %s", path, why);
        return false;
    }
    bool ok = false;
    if (st.st_mode & 077)
        snprintf(err, errlen,
                 "gateway file %s: mode %03o lets other users read it (it may hold secrets); "
                 "chmod 600 it",
                 path, (unsigned)(st.st_mode & 0777));
    else if (!gwfile_parse(text, len, lookup, env, out, why, sizeof why))
        snprintf(err, errlen, "gateway file %s: %s", path, why);
    else
        ok = true;
    free(text);
    return ok;
}

bool gwload_any_approve(const struct gwfile *f)
{
    const char *glob;
    json_t *how;
    for (size_t i = 0; i < f->nup; i++)
        json_object_foreach(f->up[i].guard, glob,
                            how) if (json_is_string(how) &&
                                     strcmp(json_string_value(how), "approve") == 0) return true;
    return false;
}

struct lint_notes {
    gwlint_fn *emit;
    void *arg;
};

static void lint_note(bool warn, const char *line, void *arg)
{
    struct lint_notes *n = arg;
    n->emit(warn ? GWLINT_WARN : GWLINT_NOTE, line, n->arg);
}

bool gwload_lint(const struct gwfile *f, const char *path, unsigned call_timeout_ms,
                 gwlint_fn *emit, void *arg)
{
    char line[1024];
    bool approve = gwload_any_approve(f);
    if (call_timeout_ms && approve && (uint64_t)f->approvals_timeout_s * 1000 >= call_timeout_ms) {
        snprintf(line, sizeof line,
                 "gateway file %s: approvals.timeout_s (%u s) must be shorter than "
                 "MCP_CALL_TIMEOUT_S (%u s), which ends any call: lower the one or raise the "
                 "other",
                 path, f->approvals_timeout_s, call_timeout_ms / 1000);
        emit(GWLINT_ERROR, line, arg);
        return false;
    }
    if (approve) {
        snprintf(line, sizeof line,
                 "approve guards: `hermes-mcp approve` is heard from uid %u outside this "
                 "server's process tree, so an agent or job of this user started elsewhere "
                 "could approve; run the Hermes agent and the upstreams' tools as another user "
                 "(see docs/guides/gateway.md#approvals-who-can-decide)",
                 (unsigned)geteuid());
        emit(GWLINT_WARN, line, arg);
    }
    for (size_t i = 0; i < f->nup; i++) {
        const struct gw_upstream *u = &f->up[i];
        if (!u->include && !u->exclude) {
            snprintf(line, sizeof line,
                     "upstream %s has no tools.include or tools.exclude: it exposes nothing "
                     "(default deny)",
                     u->name);
            emit(GWLINT_WARN, line, arg);
        }
        if (u->args_placeholder) {
            snprintf(line, sizeof line,
                     "upstream %s has a ${...} placeholder in args: its value is on the "
                     "child's command line, which every local user can read; pass secrets in "
                     "env: instead",
                     u->name);
            emit(GWLINT_WARN, line, arg);
        }
    }
    gwfile_notes(f, lint_note, &(struct lint_notes){emit, arg});
    return true;
}

struct first_error {
    char *err;
    size_t errlen;
    bool seen;
};

static void keep_error(enum gwlint_level level, const char *line, void *arg)
{
    struct first_error *e = arg;
    if (level == GWLINT_ERROR && !e->seen) {
        snprintf(e->err, e->errlen, "%s", line);
        e->seen = true;
    }
}

bool gwload_serve_ok(const struct gwfile *f, const char *path, unsigned call_timeout_ms, char *err,
                     size_t errlen)
{
    struct first_error e = {err, errlen, false};
    return gwload_lint(f, path, call_timeout_ms, keep_error, &e);
}

bool gwload_for_serve(const char *path, json_t *env, unsigned call_timeout_ms, struct gwfile *out,
                      char *err, size_t errlen)
{
    if (!gwload_file(path, env, out, err, errlen))
        return false;
    if (gwload_serve_ok(out, path, call_timeout_ms, err, errlen))
        return true;
    gwfile_cleanup(out);
    return false;
}
