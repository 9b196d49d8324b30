/* Unit tests for gw_plan_surface (gwsurface.c), the one place the exposure rules live for both
 * `serve` and `gateway check --probe`: include/exclude verdicts, prefixed names clients accept,
 * collisions with the bridge's tools and between upstreams (a refused item claims nothing),
 * tools and prompts in name spaces of their own, resource URIs and templates sharing one (two
 * templates that differ only in their variable names collide), unfit URIs and templates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "gwsurface.h"

static struct gw_upstream cfg(const char *name, const char *prefix, const char *include)
{
    return (struct gw_upstream){.name = name,
                                .prefix = prefix,
                                .include = include ? json_pack("[s]", include) : NULL,
                                .resources = true,
                                .prompts = true};
}

static const struct gw_plan_item *find(const struct gw_plan *p, enum gw_plan_kind kind, size_t up,
                                       const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->items[i].kind == kind && p->items[i].up == up && strcmp(p->items[i].name, name) == 0)
            return &p->items[i];
    fail_msg("no item %s", name);
    return NULL;
}

static void tools_verdicts_names_and_collisions(void **state)
{
    (void)state;
    struct gw_upstream a = cfg("a", "x_", "*"), b = cfg("b", "x_", "s*"), c = cfg("c", "", NULL);
    json_t *ta = json_pack("[{s:s},{s:s},{s:s}]", "name", "search", "name", "bad name", "name",
                           "whoami"),
           *tb = json_pack("[{s:s},{s:s}]", "name", "search", "name", "list"),
           *tc = json_pack("[{s:s}]", "name", "x");
    struct gw_plan_upstream in[] = {
        {.cfg = &a, .tools = ta}, {.cfg = &b, .tools = tb}, {.cfg = &c, .tools = tc}};
    const char *taken[] = {"x_whoami"};
    struct gw_plan p;
    gw_plan_surface(in, 3, taken, 1, &p);
    assert_int_equal(p.n, 6);
    const struct gw_plan_item *it = find(&p, GW_PLAN_TOOL, 0, "search");
    assert_int_equal(it->status, GW_PLAN_EXPOSED);
    assert_string_equal(it->exposed, "x_search");
    assert_string_equal(it->rule, "*");
    assert_int_equal(find(&p, GW_PLAN_TOOL, 0, "bad name")->status, GW_PLAN_BAD_NAME);
    it = find(&p, GW_PLAN_TOOL, 0, "whoami");
    assert_int_equal(it->status, GW_PLAN_TAKEN);
    assert_string_equal(it->owner, "the bridge's own tool");
    it = find(&p, GW_PLAN_TOOL, 1, "search");
    assert_int_equal(it->status, GW_PLAN_TAKEN);
    assert_string_equal(it->owner, "upstream a, tool 'search'");
    assert_true(gw_plan_refused(it));
    it = find(&p, GW_PLAN_TOOL, 1, "list");
    assert_int_equal(it->status, GW_PLAN_LEFT_OUT);
    assert_int_equal(it->verdict, GW_NOT_INCLUDED);
    assert_null(it->exposed);
    assert_false(gw_plan_refused(it));
    assert_int_equal(find(&p, GW_PLAN_TOOL, 2, "x")->verdict, GW_DEFAULT_DENY);
    assert_string_equal(gw_plan_tool_owner(&p, "x_search"), "upstream a, tool 'search'");
    assert_null(gw_plan_tool_owner(&p, "x_bad name")); /* refused: claims nothing */
    gw_plan_free(&p);
    json_decref(ta), json_decref(tb), json_decref(tc);
    json_decref(a.include), json_decref(b.include);
}

static void a_refused_item_claims_nothing(void **state)
{
    (void)state;
    struct gw_upstream a = cfg("a", "", "*"), b = cfg("b", "", "*");
    json_t *ta = json_pack("[{s:s},{s:s}]", "name", "t", "name", "t"),
           *tb = json_pack("[{s:s}]", "name", "t");
    struct gw_plan_upstream in[] = {{.cfg = &a, .tools = ta}, {.cfg = &b, .tools = tb}};
    struct gw_plan p;
    gw_plan_surface(in, 2, NULL, 0, &p);
    assert_int_equal(p.items[0].status, GW_PLAN_EXPOSED);
    assert_int_equal(p.items[1].status, GW_PLAN_TAKEN);
    assert_string_equal(p.items[2].owner, "upstream a, tool 't'");
    gw_plan_free(&p);
    json_decref(ta), json_decref(tb), json_decref(a.include), json_decref(b.include);
}

static void prompts_have_a_name_space_of_their_own(void **state)
{
    (void)state;
    struct gw_upstream a = cfg("a", "p_", "*"), b = cfg("b", "p_", NULL);
    json_t *ta = json_pack("[{s:s}]", "name", "greet"),
           *pa = json_pack("[{s:s},{s:s}]", "name", "greet", "name", "no/slash"),
           *pb = json_pack("[{s:s}]", "name", "greet");
    b.prompts = true;
    struct gw_plan_upstream in[] = {{.cfg = &a, .tools = ta, .prompts = pa},
                                    {.cfg = &b, .prompts = pb}};
    struct gw_plan p;
    gw_plan_surface(in, 2, NULL, 0, &p);
    assert_int_equal(find(&p, GW_PLAN_TOOL, 0, "greet")->status, GW_PLAN_EXPOSED);
    const struct gw_plan_item *it = find(&p, GW_PLAN_PROMPT, 0, "greet");
    assert_int_equal(it->status, GW_PLAN_EXPOSED); /* a tool's name is no prompt's */
    assert_string_equal(it->exposed, "p_greet");
    assert_int_equal(find(&p, GW_PLAN_PROMPT, 0, "no/slash")->status, GW_PLAN_BAD_NAME);
    it = find(&p, GW_PLAN_PROMPT, 1, "greet");
    assert_int_equal(it->status, GW_PLAN_TAKEN);
    assert_string_equal(it->owner, "upstream a, prompt 'greet'");
    gw_plan_free(&p);
    /* prompts: false plans none */
    b.prompts = false;
    gw_plan_surface(in, 2, NULL, 0, &p);
    assert_int_equal(p.n, 3);
    gw_plan_free(&p);
    json_decref(ta), json_decref(pa), json_decref(pb), json_decref(a.include);
}

static void uris_and_templates_share_one_space(void **state)
{
    (void)state;
    struct gw_upstream a = cfg("a", "", NULL), b = cfg("b", "", NULL);
    char long_uri[2100];
    memset(long_uri, 'u', sizeof long_uri - 1);
    long_uri[sizeof long_uri - 1] = '\0';
    json_t *ra = json_pack("[{s:s},{s:s},{s:s}]", "uri", "file:///a", "uri", "", "uri", long_uri),
           *tpa = json_pack("[{s:s},{s:s}]", "uriTemplate", "file:///{name}.txt", "uriTemplate",
                            "file:///{+path}"),
           *rb = json_pack("[{s:s}]", "uri", "file:///a"),
           *tpb = json_pack("[{s:s}]", "uriTemplate", "file:///{other}.txt");
    struct gw_plan_upstream in[] = {{.cfg = &a, .resources = ra, .templates = tpa},
                                    {.cfg = &b, .resources = rb, .templates = tpb}};
    struct gw_plan p;
    gw_plan_surface(in, 2, NULL, 0, &p);
    assert_int_equal(find(&p, GW_PLAN_RESOURCE, 0, "file:///a")->status, GW_PLAN_EXPOSED);
    const struct gw_plan_item *it = find(&p, GW_PLAN_RESOURCE, 0, "");
    assert_int_equal(it->status, GW_PLAN_UNFIT);
    assert_false(gw_plan_refused(it)); /* skipped with a warning, not a refusal */
    assert_int_equal(find(&p, GW_PLAN_RESOURCE, 0, long_uri)->status, GW_PLAN_UNFIT);
    assert_int_equal(find(&p, GW_PLAN_TEMPLATE, 0, "file:///{name}.txt")->status, GW_PLAN_EXPOSED);
    it = find(&p, GW_PLAN_TEMPLATE, 0, "file:///{+path}");
    assert_int_equal(it->status, GW_PLAN_UNFIT);
    assert_string_equal(it->unfit, "only {name} parts are served, not RFC 6570 operators");
    it = find(&p, GW_PLAN_RESOURCE, 1, "file:///a");
    assert_int_equal(it->status, GW_PLAN_TAKEN);
    assert_string_equal(it->owner, "upstream a");
    it = find(&p, GW_PLAN_TEMPLATE, 1, "file:///{other}.txt"); /* matches the same URIs */
    assert_int_equal(it->status, GW_PLAN_TAKEN);
    assert_string_equal(it->owner, "upstream a's 'file:///{name}.txt'");
    gw_plan_free(&p);
    /* not ready: nothing planned */
    in[1] = (struct gw_plan_upstream){.cfg = &b};
    gw_plan_surface(in, 2, NULL, 0, &p);
    assert_int_equal(p.n, 5);
    gw_plan_free(&p);
    json_decref(ra), json_decref(tpa), json_decref(rb), json_decref(tpb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tools_verdicts_names_and_collisions),
        cmocka_unit_test(a_refused_item_claims_nothing),
        cmocka_unit_test(prompts_have_a_name_space_of_their_own),
        cmocka_unit_test(uris_and_templates_share_one_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
