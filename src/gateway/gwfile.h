/* gwfile.h — the gateway file (GATEWAY_FILE, block YAML): which upstream MCP servers sit behind
 * our endpoint and which of their tools clients see. Pure: text and a variable lookup in,
 * validated settings out, no I/O; fuzzed (tests/fuzz/fuzz_gwfile.c). Shape and rules: README
 * "Gateway". Exposure is default-deny: an upstream with neither tools.include nor
 * tools.exclude exposes nothing. */
#ifndef HM_GWFILE_H
#define HM_GWFILE_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define GW_MAX_UPSTREAMS 32
#define GW_MAX_RULES 256             /* globs in one include or exclude list */
#define GW_MAX_STRING 65536          /* bytes of one string after interpolation */
#define GW_MAX_ROOTS 16              /* instances.roots */
#define GW_MAX_INSTANCES 64          /* instances.max */
#define GW_MAX_STARTUP_FILES 16      /* startup_context.files */
#define GW_MAX_SMOKE 8               /* smoke calls of one upstream */
#define GW_STARTUP_MAX_BYTES 262144  /* startup_context.max_bytes: the default per file */
#define GW_MAX_CALLS_PER_MIN 1000000 /* tools.limits: the highest calls_per_min */
#define GW_MAX_CALLS_IN_FLIGHT 10000 /* tools.limits: the highest calls_in_flight */
#define GW_STARTUP_BYTES_CAP                                                                       \
    4194304 /* the highest max_bytes, and the cap on all files together                            \
             */

enum gw_kind { GW_STDIO, GW_HTTP };

/* One upstream. Strings and lists are borrowed from gwfile.doc. */
struct gw_upstream {
    const char *name;  /* ^[a-z0-9][a-z0-9_-]{0,31}$ */
    enum gw_kind kind; /* GW_STDIO: command set; GW_HTTP: url set */
    const char *command;
    json_t *args;          /* array of strings, maybe empty */
    bool args_placeholder; /* an args string held ${...}: its value is in the child's argv,
                              which every local user can read (warned: secrets go in env) */
    json_t *env;           /* object of strings, maybe empty: added to the child's environment */
    const char *cwd;       /* NULL: ours */
    const char *url;
    json_t *headers;            /* object of strings, maybe empty */
    const char *prefix;         /* default "<name>__" */
    bool required;              /* default true */
    bool enabled;               /* default true; false: in gwfile.off, never started or exposed */
    unsigned timeout_s;         /* per call, default 300 */
    unsigned connect_timeout_s; /* start + initialize, default 15 */
    unsigned max_in_flight;     /* default 16 */
    json_t *include;            /* array of shell globs, or NULL when absent */
    json_t *exclude;            /* the same */
    bool resources, prompts;    /* default false */
    json_t *smoke;              /* [{tool, arguments}, ...] (1 to GW_MAX_SMOKE; the file may give
                                   one mapping) or NULL */
    /* instances (stdio only): one process per project root chosen by a path argument. */
    const char *instance_by;  /* the argument's name, NULL when there is no instances key */
    json_t *instance_roots;   /* array of roots as written (~ allowed), checked at start */
    unsigned instance_max;    /* processes at once, 1-64, default 4 */
    unsigned instance_idle_s; /* stop after this long without calls, default 600 */
    json_t *expect_tools;     /* array of tool names the upstream must offer exactly, or NULL */
    json_t *guard;            /* tools.guard: {glob: "confirm"|"approve"}, or NULL; a
                                 conditional confirm reads "confirm" here (so code that knows
                                 only the two words is stricter, never laxer) */
    json_t *guard_when;       /* {glob: {argument: [values]}}: the conditions of tools.guard's
                                 conditional confirms ({confirm: {argument: [values]}}); owned,
                                 NULL when there is none */
    json_t *confirm_policies; /* {tool: its policy with confirm_when} for the tools whose guard
                                 is a conditional confirm, filled by gw_tool_policy; owned, NULL
                                 when guard_when is */
    json_t *policies;         /* tools.args: {tool: {drop, fix, enum, max_items, max_length,
                                 reject_secrets, require}}, or NULL (shapes checked here,
                                 gwpolicy.c) */
    json_t *limits;           /* tools.limits: {glob: {calls_per_min, calls_in_flight}} (whole
                                 numbers as text, each optional, 0: none), or NULL */
};

struct gwfile {
    json_t *doc;            /* owns everything the upstreams point to */
    struct gw_upstream *up; /* in file order: the enabled ones, all that serve uses */
    size_t nup;
    struct gw_upstream *off; /* enabled: false (as in Hermes' own MCP client settings), in
                                file order: validated like the others, then neither started
                                nor exposed */
    size_t noff;
    json_t *bridge_include;       /* bridge_tools.include, NULL when absent */
    json_t *bridge_exclude;       /* bridge_tools.exclude, NULL when absent */
    json_t *startup_files;        /* startup_context.files (strings, ~ allowed), NULL when absent */
    unsigned startup_max_bytes;   /* startup_context.max_bytes, per file */
    unsigned approvals_timeout_s; /* approvals.timeout_s: an operator's answer waited for */
};

/* The value of a ${VAR} / ${env:VAR} placeholder (borrowed), or NULL when VAR is unset. */
typedef const char *gw_lookup_fn(const char *var, void *arg);

/* Parses and validates text (len bytes, need not be NUL-terminated), replacing every
 * placeholder in every string value (an upstream with enabled: false: only their syntax is
 * checked, none is resolved). On failure returns false with one line in err naming the
 * upstream and key (never a value); out is then empty. */
bool gwfile_parse(const char *text, size_t len, gw_lookup_fn *lookup, void *lookup_arg,
                  struct gwfile *out, char *err, size_t errlen);
void gwfile_cleanup(struct gwfile *f); /* NULL-safe, idempotent */

/* ---------- what the rules say about a tool (gwrules.c) ---------- */

enum gw_verdict {
    GW_INCLUDED,     /* an include glob matched (or no include list and no exclude glob did) */
    GW_EXCLUDED,     /* an exclude glob matched and no include glob did */
    GW_NOT_INCLUDED, /* there is an include list and no glob of it matched */
    GW_DEFAULT_DENY, /* neither list: nothing is exposed */
};
/* What the upstream's rules say about its tool; *rule gets the deciding glob or NULL. */
enum gw_verdict gw_tool_verdict(const struct gw_upstream *u, const char *tool, const char **rule);
const char *gw_verdict_name(enum gw_verdict v); /* "included", "excluded", ... */
enum gw_guard { GW_GUARD_NONE, GW_GUARD_CONFIRM, GW_GUARD_APPROVE }; /* in rising strictness */
/* tools.guard for the upstream's tool: the strictest of the globs that match (approve, then a
 * plain confirm, then a conditional one; GW_GUARD_CONFIRM for both kinds of confirm). */
enum gw_guard gw_tool_guard(const struct gw_upstream *u, const char *tool);
/* tools.args for the upstream's tool (exact name; borrowed), or NULL. When the tool's guard is
 * a conditional confirm, the policy (maybe empty otherwise) also holds "confirm_when":
 * {argument: [values], ...}, the union of the matching globs' conditions (gwpolicy.c). */
json_t *gw_tool_policy(const struct gw_upstream *u, const char *tool);
/* tools.limits for the upstream's tool, counted over every caller of that tool: for each
 * limit the lowest the matching globs set (0: none). Returns whether any is set. */
bool gw_tool_limits(const struct gw_upstream *u, const char *tool, unsigned *calls_per_min,
                    unsigned *calls_in_flight);
/* Whether bridge_tools keeps one of our own tools (default: all of them). */
bool gw_bridge_tool_kept(const struct gwfile *f, const char *tool);

/* What a valid file does that its operator may not expect, one line each naming the upstream
 * (never a value), for serve's log, doctor and gateway check alike: tools.include and a
 * non-empty tools.exclude together (exclude is then ignored: warn; the same for bridge_tools),
 * an upstream with enabled: false (a note). */
typedef void gw_note_fn(bool warn, const char *line, void *arg);
void gwfile_notes(const struct gwfile *f, gw_note_fn *fn, void *arg);
/* The include globs of u that match none of tools (an array of tool names, or of tools/list's
 * {name, ...}), a new array: a typo or a tool the upstream does not offer (any more). */
json_t *gw_include_unmatched(const struct gw_upstream *u, json_t *tools);

/* ^[a-z0-9][a-z0-9_-]{0,31}$: an upstream's name. */
bool gw_upstream_name_ok(const char *s);
/* ^[A-Za-z0-9_-]{1,64}$: a tool name clients accept. */
bool gw_tool_name_ok(const char *s);

#endif
