/* Unit tests for gwinstance.c's pure part: which project root a call's path argument belongs
 * to. The path must be absolute, resolve (realpath) inside one of the roots component-wise,
 * and never escape by "..", a symlink or a trailing slash; NUL and overlong values are refused
 * before anything is resolved. Works in a fresh directory under /tmp. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "gwinstance.h"

static char base[1024];  /* canonical temp dir */
static char work[1100];  /* base/work: the root */
static char work2[1100]; /* base/work2: a sibling with the same prefix */

static void mk(const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    assert_int_equal(mkdir(p, 0700), 0);
}

static int setup(void **state)
{
    char tmpl[] = "/tmp/gwi-unit-XXXXXX", canon[PATH_MAX];
    (void)state;
    if (!mkdtemp(tmpl) || !realpath(tmpl, canon) || strlen(canon) >= sizeof base)
        return -1;
    strcpy(base, canon);
    snprintf(work, sizeof work, "%s/work", base);
    snprintf(work2, sizeof work2, "%s/work2", base);
    mk("work");
    mk("work2");
    mk("work/proj");
    mk("work/proj/src");
    mk("work/other");
    mk("work2/proj");
    char link[PATH_MAX], target[PATH_MAX];
    snprintf(link, sizeof link, "%s/work/proj/out", base); /* leaves the root */
    snprintf(target, sizeof target, "%s/work2/proj", base);
    if (symlink(target, link) != 0)
        return -1;
    snprintf(link, sizeof link, "%s/into", base); /* outside the root, pointing into it */
    snprintf(target, sizeof target, "%s/work", base);
    if (symlink(target, link) != 0)
        return -1;
    snprintf(link, sizeof link, "%s/work/alias", base); /* stays inside: resolves to proj */
    snprintf(target, sizeof target, "%s/work/proj", base);
    return symlink(target, link) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[PATH_MAX + 16];
    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    return system(cmd) == 0 ? 0 : -1;
}

static void inside_is_component_wise(void **state)
{
    (void)state;
    assert_true(gwi_inside("/srv/work", "/srv/work"));
    assert_true(gwi_inside("/srv/work", "/srv/work/a"));
    assert_true(gwi_inside("/srv/work", "/srv/work/a/b"));
    assert_false(gwi_inside("/srv/work", "/srv/work2"));
    assert_false(gwi_inside("/srv/work", "/srv/work2/a"));
    assert_false(gwi_inside("/srv/work", "/srv"));
    assert_false(gwi_inside("/srv/work", "/srv/wor"));
    assert_true(gwi_inside("/", "/anything"));
    assert_true(gwi_inside("/", "/"));
}

/* Resolves value against the one root `work`; returns the reason (NULL when accepted). */
static const char *resolve(const char *value, size_t len, char *out)
{
    const char *roots[] = {work};
    return gwi_project_root(value, len, roots, 1, NULL, 0, out, PATH_MAX, NULL);
}

static const char *resolve_s(const char *value, char *out)
{
    return resolve(value, strlen(value), out);
}

static void project_root_is_the_first_component(void **state)
{
    char in[PATH_MAX], out[PATH_MAX], want[PATH_MAX];
    (void)state;
    snprintf(want, sizeof want, "%s/proj", work);
    snprintf(in, sizeof in, "%s/proj/src", work);
    assert_null(resolve_s(in, out));
    assert_string_equal(out, want);
    snprintf(in, sizeof in, "%s/proj/", work); /* trailing slash: same root */
    assert_null(resolve_s(in, out));
    assert_string_equal(out, want);
    snprintf(in, sizeof in, "%s/alias/src", work); /* symlink inside the root */
    assert_null(resolve_s(in, out));
    assert_string_equal(out, want);
    char resolved[PATH_MAX], real[PATH_MAX]; /* what the upstream is sent: the resolved path */
    const char *roots[] = {work};
    assert_null(gwi_project_root(in, strlen(in), roots, 1, NULL, 0, out, PATH_MAX, resolved));
    snprintf(real, sizeof real, "%s/proj/src", work);
    assert_string_equal(resolved, real);
    snprintf(in, sizeof in, "%s/other/../proj/src/.", work);
    assert_null(resolve_s(in, out));
    assert_string_equal(out, want);
    snprintf(in, sizeof in, "%s/", work); /* the root itself is its own project */
    assert_null(resolve_s(in, out));
    assert_string_equal(out, work);
}

static void escapes_are_refused(void **state)
{
    char in[PATH_MAX], out[PATH_MAX];
    (void)state;
    snprintf(in, sizeof in, "%s/proj/../../work2/proj", work); /* .. */
    assert_non_null(resolve_s(in, out));
    snprintf(in, sizeof in, "%s/..", work);
    assert_non_null(resolve_s(in, out));
    snprintf(in, sizeof in, "%s/proj/out", work); /* symlink leaving the root */
    assert_non_null(resolve_s(in, out));
    snprintf(in, sizeof in, "%s/proj/out/", work);
    assert_non_null(resolve_s(in, out));
    snprintf(in, sizeof in, "%s/proj", work2); /* work2 is not inside work */
    assert_non_null(resolve_s(in, out));
    snprintf(in, sizeof in, "%s/", work2);
    assert_non_null(resolve_s(in, out));
    assert_non_null(resolve_s("work/proj", out)); /* not absolute */
    assert_non_null(resolve_s("", out));
    assert_non_null(resolve_s("~/proj", out));
    snprintf(in, sizeof in, "%s/missing", work); /* must exist */
    assert_non_null(resolve_s(in, out));
    /* Nothing outside the roots is resolved: a path that only a link outside them would bring
     * inside, and one whose ".." leaves them by text, are refused before realpath. */
    snprintf(in, sizeof in, "%s/into/proj", base);
    assert_non_null(resolve_s(in, out));
    snprintf(in, sizeof in, "%s/proj/../../into/proj", work);
    assert_non_null(resolve_s(in, out));
    snprintf(in, sizeof in, "%s//./proj/../proj/src", work); /* folded by text: inside */
    assert_null(resolve_s(in, out));
}

static void nul_and_overlong_are_refused(void **state)
{
    char in[PATH_MAX], out[PATH_MAX];
    (void)state;
    int n = snprintf(in, sizeof in, "%s/proj", work);
    in[n] = '\0';
    memcpy(in + n, "\0/x", 3); /* a NUL inside the JSON string: len covers it */
    assert_non_null(resolve(in, (size_t)n + 3, out));
    size_t big = (size_t)PATH_MAX + 10;
    char *huge = malloc(big + 1);
    assert_non_null(huge);
    memset(huge, 'a', big);
    huge[0] = '/';
    huge[big] = '\0';
    const char *why = resolve(huge, big, out);
    assert_non_null(why);
    assert_null(strstr(why, "aaaa")); /* the reason never echoes the value */
    free(huge);
}

static void roots_are_checked_at_start(void **state)
{
    char out[PATH_MAX], err[200], want[PATH_MAX];
    (void)state;
    assert_true(gwi_canonical_root("~/work/", base, out, sizeof out, NULL, err, sizeof err));
    assert_string_equal(out, work);
    assert_true(gwi_canonical_root(work2, NULL, out, sizeof out, NULL, err, sizeof err));
    assert_string_equal(out, work2);
    snprintf(want, sizeof want, "%s/alias", work); /* a symlinked root resolves */
    char given[PATH_MAX];
    assert_true(gwi_canonical_root(want, NULL, out, sizeof out, given, err, sizeof err));
    assert_string_equal(given, want); /* as written: a call's path may start with either */
    snprintf(want, sizeof want, "%s/proj", work);
    assert_string_equal(out, want);
    assert_false(gwi_canonical_root("relative/dir", NULL, out, sizeof out, NULL, err, sizeof err));
    assert_non_null(strstr(err, "absolute"));
    assert_false(gwi_canonical_root("~/work", NULL, out, sizeof out, NULL, err, sizeof err));
    assert_non_null(strstr(err, "HOME"));
    snprintf(want, sizeof want, "%s/missing", base);
    assert_false(gwi_canonical_root(want, NULL, out, sizeof out, NULL, err, sizeof err));
    assert_non_null(strstr(err, "exist"));
    assert_false(gwi_canonical_root("/etc/hostname", NULL, out, sizeof out, NULL, err, sizeof err));
    assert_non_null(strstr(err, "directory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inside_is_component_wise),
        cmocka_unit_test(project_root_is_the_first_component),
        cmocka_unit_test(escapes_are_refused),
        cmocka_unit_test(nul_and_overlong_are_refused),
        cmocka_unit_test(roots_are_checked_at_start),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
