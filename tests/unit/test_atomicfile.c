/* Unit tests for atomicfile_mkdirs: the folder that will hold a secret file (token gen's env
 * file) is created private, and a folder another user could replace the file in is refused:
 * one owned by someone else, one writable by its group or others, a new level made inside a
 * folder someone else owns, a symbolic link where a new level is to be made. */
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

#include "atomicfile.h"
#include "scratch.h"

static char dir[] = "/tmp/hm-atomicfile-XXXXXX";
static const uid_t nobody = 65534;

static char *in(const char *name)
{
    static char p[4][256];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/%s", dir, name);
    return p[i];
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_mode & 07777;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A folder that belongs to another user: one chowned to nobody as root (the test machines),
 * root's own /usr otherwise. */
static const char *foreign_folder(const char *name, mode_t mode)
{
    if (geteuid() != 0)
        return "/usr";
    char *p = in(name);
    assert_int_equal(mkdir(p, mode), 0);
    assert_int_equal(chmod(p, mode), 0);
    assert_int_equal(chown(p, nobody, nobody), 0);
    return p;
}

static void creates_the_missing_levels_private(void **state)
{
    (void)state;
    char err[300] = "";
    mode_t old = umask(022);
    assert_int_equal(mkdir(in("home"), 0755), 0);
    bool ok = atomicfile_mkdirs(in("home/.config/hermes-mcp"), 0700, err, sizeof err);
    umask(old);
    assert_true(ok);
    assert_int_equal(mode_of(in("home/.config")), 0700);
    assert_int_equal(mode_of(in("home/.config/hermes-mcp")), 0700);
    assert_int_equal(mode_of(in("home")), 0755); /* an existing level is left as it is */
    /* Again, all levels existing: fine. Slashes doubled or trailing change nothing. */
    assert_true(atomicfile_mkdirs(in("home//.config/hermes-mcp/"), 0700, err, sizeof err));
}

/* /tmp (root's, world-writable, sticky) may hold a new level: nobody else can rename ours. */
static void creates_a_level_in_a_sticky_shared_folder(void **state)
{
    (void)state;
    char err[300] = "";
    assert_int_equal(mkdir(in("tmp"), 01777), 0);
    assert_int_equal(chmod(in("tmp"), 01777), 0);
    assert_true(atomicfile_mkdirs(in("tmp/mine/env-dir"), 0700, err, sizeof err));
    assert_int_equal(mode_of(in("tmp/mine")), 0700);
    /* But the shared folder itself does not hold the file. */
    assert_false(atomicfile_mkdirs(in("tmp"), 0700, err, sizeof err));
    assert_non_null(strstr(err, in("tmp")));
    assert_non_null(strstr(err, "writable by its group or others"));
}

static void refuses_a_final_folder_of_another_user(void **state)
{
    (void)state;
    char err[300] = "";
    const char *theirs = foreign_folder("theirs", 0700);
    assert_false(atomicfile_mkdirs(theirs, 0700, err, sizeof err));
    assert_non_null(strstr(err, theirs));
    assert_non_null(strstr(err, "belongs to uid"));
    assert_non_null(strstr(err, "another user could replace the file"));
}

static void refuses_a_group_or_world_writable_final_folder(void **state)
{
    (void)state;
    char err[300] = "";
    assert_int_equal(mkdir(in("team"), 0770), 0);
    assert_int_equal(chmod(in("team"), 0770), 0);
    assert_false(atomicfile_mkdirs(in("team"), 0700, err, sizeof err));
    assert_non_null(strstr(err, in("team")));
    assert_non_null(strstr(err, "chmod go-w"));
    assert_int_equal(chmod(in("team"), 0755), 0);
    assert_true(atomicfile_mkdirs(in("team"), 0700, err, sizeof err));
}

/* /tmp/x made by another user, then --env-file /tmp/x/y/env: they could rename our y away and
 * put their own in its place. */
static void refuses_a_new_level_inside_a_folder_of_another_user(void **state)
{
    (void)state;
    char err[300] = "";
    const char *theirs = foreign_folder("x", 0755);
    char want[300];
    snprintf(want, sizeof want, "%s/y", theirs);
    assert_false(atomicfile_mkdirs(want, 0700, err, sizeof err));
    assert_false(exists(want));
    assert_non_null(strstr(err, want));
    /* Not as root the stand-in is root's /usr, a fine parent the user just cannot write. */
    if (geteuid() == 0)
        assert_non_null(strstr(err, "belongs to uid 65534, who could replace it"));
}

/* A level to be created that is a symbolic link (say to a folder the link's owner will make
 * later) is refused, and nothing is created where it points. A symlink to another user's
 * folder is refused too, by the final folder's check. */
static void refuses_a_symbolic_link_where_a_level_is_created(void **state)
{
    (void)state;
    char err[300] = "";
    assert_int_equal(symlink(in("later"), in("link")), 0);
    assert_false(atomicfile_mkdirs(in("link/env-dir"), 0700, err, sizeof err));
    assert_false(exists(in("later")));
    assert_non_null(strstr(err, in("link")));
    assert_non_null(strstr(err, "symbolic link"));
    assert_false(atomicfile_mkdirs(in("link"), 0700, err, sizeof err));
    assert_false(exists(in("later")));

    const char *theirs = foreign_folder("theirs2", 0700);
    assert_int_equal(symlink(theirs, in("link2")), 0);
    assert_false(atomicfile_mkdirs(in("link2"), 0700, err, sizeof err));
    assert_non_null(strstr(err, "belongs to uid"));
}

/* An existing level that links to a folder of one's own (~/.config kept in a dotfiles
 * checkout) is followed. */
static void follows_an_existing_link_to_an_own_folder(void **state)
{
    (void)state;
    char err[300] = "";
    assert_int_equal(mkdir(in("dotfiles"), 0700), 0);
    assert_int_equal(symlink(in("dotfiles"), in("dotconfig")), 0);
    assert_true(atomicfile_mkdirs(in("dotconfig/hermes-mcp"), 0700, err, sizeof err));
    assert_int_equal(mode_of(in("dotfiles/hermes-mcp")), 0700);
}

static void names_a_level_that_is_not_a_folder(void **state)
{
    (void)state;
    char err[300] = "";
    FILE *f = fopen(in("plain"), "w");
    assert_non_null(f);
    fclose(f);
    assert_false(atomicfile_mkdirs(in("plain/sub"), 0700, err, sizeof err));
    char want[300];
    snprintf(want, sizeof want, "%s is not a folder", in("plain"));
    assert_string_equal(err, want);
}

SCRATCH_FIXTURES(dir)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(creates_the_missing_levels_private),
        cmocka_unit_test(creates_a_level_in_a_sticky_shared_folder),
        cmocka_unit_test(refuses_a_final_folder_of_another_user),
        cmocka_unit_test(refuses_a_group_or_world_writable_final_folder),
        cmocka_unit_test(refuses_a_new_level_inside_a_folder_of_another_user),
        cmocka_unit_test(refuses_a_symbolic_link_where_a_level_is_created),
        cmocka_unit_test(follows_an_existing_link_to_an_own_folder),
        cmocka_unit_test(names_a_level_that_is_not_a_folder),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
