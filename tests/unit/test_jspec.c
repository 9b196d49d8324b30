/* Unit tests for jspec (src/base/jspec.c), the validator of settings documents described as
 * tables: a key the table does not name is refused at its path; keys are checked in table order
 * and stored at their offsets, absent ones get their defaults (a made value goes into the
 * document); nested levels and mappings of free names extend the path; a handler's why is
 * reported at the key; a doc_order level reports the first mistake in the document's order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the headers above first */
#include <cmocka.h>

#include <string.h>

#include "jspec.h"

struct conf {
    bool on;
    unsigned n;
    const char *name;
    json_t *list, *inner_list, *map;
};

static json_t *made(const void *out)
{
    (void)out;
    return json_string("made");
}

static const char *not_x(struct jspec_walk *w, json_t *o, json_t *v, void *out)
{
    (void)w, (void)o, (void)out;
    return strcmp(json_string_value(v), "x") == 0 ? "must not be x" : NULL;
}

static const struct jspec_level inner = {
    .not_object = "must be a mapping",
    .unknown = "is not a known key",
    .keys = (const struct jspec_key[]){{.name = "list",
                                        .type = JSPEC_STRINGS,
                                        .min_items = 1,
                                        .max_items = 2,
                                        .at = offsetof(struct conf, inner_list),
                                        .why = "must list 1 or 2 strings"},
                                       JSPEC_END}};

static const struct jspec_level ordered = {
    .not_object = "must be a mapping",
    .unknown = "is not a known key",
    .doc_order = true,
    .keys = (const struct jspec_key[]){
        {.name = "a", .type = JSPEC_STRING, .at = JSPEC_NOWHERE, .check = not_x},
        {.name = "b", .type = JSPEC_STRING, .at = JSPEC_NOWHERE, .check = not_x},
        JSPEC_END}};

static const struct jspec_level top = {
    .not_object = "must be a mapping",
    .self = "(top)",
    .unknown = "is not a known key",
    .keys = (const struct jspec_key[]){
        {.name = "on",
         .type = JSPEC_BOOL,
         .dflt = 1,
         .at = offsetof(struct conf, on),
         .why = "must be true or false"},
        {.name = "n",
         .type = JSPEC_UINT,
         .lo = 1,
         .hi = 10,
         .dflt = 5,
         .at = offsetof(struct conf, n),
         .why = "must be 1-10"},
        {.name = "name",
         .type = JSPEC_STRING,
         .nonempty = true,
         .check = not_x,
         .absent = made,
         .at = offsetof(struct conf, name),
         .why = "must be a non-empty string"},
        {.name = "inner", .type = JSPEC_OBJECT, .at = JSPEC_NOWHERE, .level = &inner},
        {.name = "map",
         .type = JSPEC_MAP,
         .max_items = 2,
         .level = &ordered,
         .at = offsetof(struct conf, map),
         .why = "must map at most 2 names"},
        JSPEC_END}};

/* Walks text (JSON) into *c; the error, or "" when it passes. */
static const char *walk(const char *text, struct conf *c, json_t **doc)
{
    static char err[256];
    *doc = json_loads(text, 0, NULL);
    assert_non_null(*doc);
    memset(c, 0, sizeof *c);
    struct jspec_walk w = {.err = err, .errlen = sizeof err, .scope = "part p, "};
    err[0] = '\0';
    bool ok = jspec_walk(&w, &top, *doc, c);
    assert_true(ok == (err[0] == '\0'));
    return err;
}

static void defaults_fill_what_is_absent(void **state)
{
    (void)state;
    struct conf c;
    json_t *doc;
    assert_string_equal(walk("{}", &c, &doc), "");
    assert_true(c.on);
    assert_int_equal(c.n, 5);
    assert_string_equal(c.name, "made");
    assert_ptr_equal(c.name, json_string_value(json_object_get(doc, "name"))); /* in the doc */
    assert_null(c.list);
    json_decref(doc);
}

static void values_are_read_and_stored(void **state)
{
    (void)state;
    struct conf c;
    json_t *doc;
    assert_string_equal(walk("{\"on\":\"false\",\"n\":\"10\",\"name\":\"y\",\"inner\":{\"list\":"
                             "[\"a\"]},\"map\":{\"m\":{\"a\":\"z\"}}}",
                             &c, &doc),
                        "");
    assert_false(c.on);
    assert_int_equal(c.n, 10);
    assert_string_equal(c.name, "y");
    assert_int_equal(json_array_size(c.inner_list), 1);
    assert_int_equal(json_object_size(c.map), 1);
    json_decref(doc);
}

static void each_mistake_is_named_at_its_path(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"[]", "part p, key (top): must be a mapping"},
        {"{\"zz\":1}", "part p, key zz: is not a known key"},
        {"{\"on\":\"yes\"}", "part p, key on: must be true or false"},
        {"{\"n\":\"11\"}", "part p, key n: must be 1-10"},
        {"{\"n\":\"0\"}", "part p, key n: must be 1-10"},
        {"{\"name\":\"\"}", "part p, key name: must be a non-empty string"},
        {"{\"name\":\"x\"}", "part p, key name: must not be x"},
        {"{\"inner\":[]}", "part p, key inner: must be a mapping"},
        {"{\"inner\":{\"list\":[]}}", "part p, key inner.list: must list 1 or 2 strings"},
        {"{\"inner\":{\"list\":[\"\"]}}", "part p, key inner.list: must list 1 or 2 strings"},
        {"{\"inner\":{\"lst\":[]}}", "part p, key inner.lst: is not a known key"},
        {"{\"map\":{\"a\":{},\"b\":{},\"c\":{}}}", "part p, key map: must map at most 2 names"},
        {"{\"map\":{\"m\":1}}", "part p, key map.m: must be a mapping"},
        /* doc_order: the first mistake as the document has them */
        {"{\"map\":{\"m\":{\"b\":\"x\",\"zz\":1}}}", "part p, key map.m.b: must not be x"},
        {"{\"map\":{\"m\":{\"zz\":1,\"b\":\"x\"}}}", "part p, key map.m.zz: is not a known key"},
        /* the unknown keys before any value; names from the document cut to 40 bytes */
        {"{\"n\":\"0\",\"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\":1}",
         "part p, key kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk: is not a known key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct conf c;
        json_t *doc;
        const char *err = walk(cases[i][0], &c, &doc);
        if (strcmp(err, cases[i][1]) != 0)
            fail_msg("%s: got '%s', want '%s'", cases[i][0], err, cases[i][1]);
        json_decref(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_fill_what_is_absent),
        cmocka_unit_test(values_are_read_and_stored),
        cmocka_unit_test(each_mistake_is_named_at_its_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
