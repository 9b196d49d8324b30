/* gwrules.c — what a parsed gateway file's rules say about one tool: tools.include and
 * tools.exclude (the verdict and the deciding glob), tools.guard (the strictest matching glob),
 * tools.args (the tool's policy, with a conditional confirm's conditions folded in),
 * tools.limits (the lowest of the matching globs) and bridge_tools. Declared in gwfile.h beside the
 * settings they read; gwfile.c only parses. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "gwfile.h"

static const char *first_match(json_t *globs, const char *name)
{
    size_t i;
    json_t *g;
    json_array_foreach(globs, i, g)
    {
        if (fnmatch(json_string_value(g), name, 0) == 0)
            return json_string_value(g);
    }
    return NULL;
}

static enum gw_verdict verdict(json_t *inc, json_t *exc, const char *tool, const char **rule)
{
    *rule = NULL;
    if (inc && (*rule = first_match(inc, tool)))
        return GW_INCLUDED; /* include wins over exclude */
    if (exc && (*rule = first_match(exc, tool)))
        return GW_EXCLUDED;
    if (inc)
        return GW_NOT_INCLUDED;
    return exc ? GW_INCLUDED : GW_DEFAULT_DENY;
}

enum gw_verdict gw_tool_verdict(const struct gw_upstream *u, const char *tool, const char **rule)
{
    return verdict(u->include, u->exclude, tool, rule);
}

/* {argument: [values]} added into *all (created when NULL). */
static void add_condition(json_t **all, json_t *when)
{
    const char *arg;
    json_t *values;
    if (*all == NULL)
        *all = json_object();
    json_object_foreach(when, arg, values)
    {
        json_t *list = json_object_get(*all, arg);
        if (list == NULL)
            json_object_set_new(*all, arg, list = json_array());
        json_array_extend(list, values);
    }
}

/* Every matching glob is looked at and the strictest wins (approve > confirm > a conditional
 * confirm > none): with {"*": confirm, cronjob: approve} a first-match rule would let
 * confirmed: true run cronjob, and with {"*": confirm, cronjob: {confirm: ...}} let
 * cronjob's exempt actions skip the confirmation "*" asks of every tool. Conditional confirms
 * add up: confirmation when any of their conditions holds. *when (when not NULL) gets that
 * union (a new object) when a conditional confirm is the strictest, else NULL. */
static enum gw_guard strictest_guard(const struct gw_upstream *u, const char *tool, json_t **when)
{
    enum { NONE, CONFIRM_WHEN, CONFIRM, APPROVE } rank = NONE;
    const char *glob;
    json_t *v, *conditions = NULL;
    json_object_foreach(u->guard, glob, v)
    {
        if (fnmatch(glob, tool, 0) != 0)
            continue;
        json_t *condition = json_object_get(u->guard_when, glob);
        int r = strcmp(json_string_value(v), "approve") == 0 ? APPROVE
                : condition                                  ? CONFIRM_WHEN
                                                             : CONFIRM;
        if (r == CONFIRM_WHEN && when)
            add_condition(&conditions, condition);
        if (r > (int)rank)
            rank = r;
    }
    if (rank != CONFIRM_WHEN) {
        json_decref(conditions);
        conditions = NULL;
    }
    if (when)
        *when = conditions;
    return rank == APPROVE ? GW_GUARD_APPROVE : rank == NONE ? GW_GUARD_NONE : GW_GUARD_CONFIRM;
}

enum gw_guard gw_tool_guard(const struct gw_upstream *u, const char *tool)
{
    return strictest_guard(u, tool, NULL);
}

/* A tool under a conditional confirm gets its own policy object (a shallow copy of tools.args'
 * with confirm_when), made once and kept in confirm_policies: callers borrow policies for as
 * long as the file lives. */
json_t *gw_tool_policy(const struct gw_upstream *u, const char *tool)
{
    json_t *policy = u->policies ? json_object_get(u->policies, tool) : NULL, *when;
    if (u->confirm_policies == NULL)
        return policy;
    json_t *made = json_object_get(u->confirm_policies, tool);
    if (made)
        return made;
    strictest_guard(u, tool, &when);
    if (when == NULL)
        return policy;
    made = policy ? json_copy(policy) : json_object();
    json_object_set_new(made, "confirm_when", when);
    json_object_set_new(u->confirm_policies, tool, made);
    return made;
}

/* The lowest non-zero of *have and the limit's value (validated text), 0 when both are. */
static void lowest(unsigned *have, json_t *limit)
{
    unsigned n = limit ? (unsigned)strtoul(json_string_value(limit), NULL, 10) : 0;
    if (n && (*have == 0 || n < *have))
        *have = n;
}

bool gw_tool_limits(const struct gw_upstream *u, const char *tool, unsigned *calls_per_min,
                    unsigned *calls_in_flight)
{
    const char *glob;
    json_t *v;
    *calls_per_min = *calls_in_flight = 0;
    json_object_foreach(u->limits, glob, v)
    {
        if (fnmatch(glob, tool, 0) != 0)
            continue;
        lowest(calls_per_min, json_object_get(v, "calls_per_min"));
        lowest(calls_in_flight, json_object_get(v, "calls_in_flight"));
    }
    return *calls_per_min || *calls_in_flight;
}

bool gw_bridge_tool_kept(const struct gwfile *f, const char *tool)
{
    const char *rule;
    if (f == NULL || (!f->bridge_include && !f->bridge_exclude))
        return true;
    return verdict(f->bridge_include, f->bridge_exclude, tool, &rule) == GW_INCLUDED;
}

const char *gw_verdict_name(enum gw_verdict v)
{
    switch (v) {
    case GW_INCLUDED:
        return "included";
    case GW_EXCLUDED:
        return "excluded";
    case GW_NOT_INCLUDED:
        return "not included";
    default:
        return "default deny";
    }
}

json_t *gw_include_unmatched(const struct gw_upstream *u, json_t *tools)
{
    json_t *unmatched = json_array(), *glob, *tool;
    size_t i, k;
    json_array_foreach(u->include, i, glob)
    {
        bool matched = false;
        json_array_foreach(tools, k, tool)
        {
            const char *name = json_is_string(tool)
                                   ? json_string_value(tool)
                                   : json_string_value(json_object_get(tool, "name"));
            if (name && fnmatch(json_string_value(glob), name, 0) == 0) {
                matched = true;
                break;
            }
        }
        if (!matched)
            json_array_append(unmatched, glob);
    }
    return unmatched;
}
