/* envfile.c — atomic KEY=VALUE updates of a dotenv file. */
#include "envfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "buf.h"
#include "mem.h"

#define ENVFILE_MAX (1024 * 1024)

static bool line_sets(const char *line, size_t n, const char *key)
{
    size_t k = strlen(key);
    while (n && (*line == ' ' || *line == '\t'))
        line++, n--;
    if (n > 7 && strncmp(line, "export ", 7) == 0)
        line += 7, n -= 7;
    if (n <= k || strncmp(line, key, k) != 0)
        return false;
    line += k, n -= k;
    while (n && (*line == ' ' || *line == '\t'))
        line++, n--;
    return n && *line == '=';
}

bool envfile_set(const char *path, const char *key, const char *value, char *err, size_t errlen)
{
    struct buf out, old;
    bool ok = false, replaced = false;
    int fd = -1;

    buf_init(&out, 0);
    buf_init(&old, ENVFILE_MAX);
    /* A fresh account has no ~/.config/hermes-mcp yet: the new levels are private. The folder
     * is checked even when the file exists: in one another user can write to, they could
     * replace the file (and with it the token and the agent command) at any time. */
    char *copy = xstrdup(path);
    bool folder_ok = atomicfile_mkdirs(dirname(copy), 0700, err, errlen);
    free(copy);
    if (!folder_ok)
        goto out;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char chunk[4096];
        ssize_t n;
        while ((n = read(fd, chunk, sizeof chunk)) > 0)
            if (!buf_append(&old, chunk, (size_t)n)) {
                snprintf(err, errlen, "%s is larger than 1 MiB", path);
                goto out;
            }
        close(fd);
        fd = -1;
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        goto out;
    }
    for (const char *p = old.data, *end = old.data + old.len; p && p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t n = eol ? (size_t)(eol - p) : (size_t)(end - p);
        if (line_sets(p, n, key)) {
            if (!replaced)
                buf_printf(&out, "%s=%s\n", key, value);
            replaced = true;
        } else {
            buf_append(&out, p, n);
            buf_appends(&out, "\n");
        }
        p += n + 1;
    }
    if (!replaced)
        buf_printf(&out, "%s=%s\n", key, value);

    if (!atomicfile_write(path, out.data, out.len, 0600, err, errlen))
        goto out;
    ok = true;
out:
    if (fd >= 0)
        close(fd);
    if (out.data)
        memset(out.data, 0, out.len);
    if (old.data)
        memset(old.data, 0, old.len);
    buf_cleanup(&out);
    buf_cleanup(&old);
    return ok;
}
