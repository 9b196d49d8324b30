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

static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w, n -= (size_t)w;
    }
    return true;
}

bool envfile_set(const char *path, const char *key, const char *value, char *err, size_t errlen)
{
    struct buf out, old;
    bool ok = false, replaced = false;
    char *tmp = NULL, *dircopy = NULL;
    int fd = -1;

    buf_init(&out, 0);
    buf_init(&old, ENVFILE_MAX);
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

    tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    if (fchmod(fd, 0600) < 0 || !write_all(fd, out.data, out.len) || fsync(fd) < 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        unlink(tmp);
        goto out;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, path) < 0) {
        snprintf(err, errlen, "cannot replace %s: %s", path, strerror(errno));
        unlink(tmp);
        goto out;
    }
    dircopy = xstrdup(path);
    fd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        fsync(fd); /* make the rename itself durable */
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
    free(tmp);
    free(dircopy);
    return ok;
}
