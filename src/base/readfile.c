/* readfile.c — whole-file reads with a cap, safe against FIFOs and devices (readfile.h). */
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mem.h"

static void size_words(size_t n, char *out, size_t outlen)
{
    if (n >= 1024 * 1024 && n % (1024 * 1024) == 0)
        snprintf(out, outlen, "%zu MiB", n / (1024 * 1024));
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(out, outlen, "%zu KiB", n / 1024);
    else
        snprintf(out, outlen, "%zu bytes", n);
}

char *readfile_capped(const char *path, const char *what, size_t max, struct stat *st, size_t *len,
                      char *err, size_t errlen)
{
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer (fstat refuses it next). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", what, strerror(errno));
        return NULL;
    }
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", what);
        close(fd);
        return NULL;
    }
    if ((size_t)st->st_size > max) {
        char words[32];
        size_words(max, words, sizeof words);
        snprintf(err, errlen, "%s is larger than %s", what, words);
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)st->st_size < max ? (size_t)st->st_size : max;
    char *text = xmalloc(cap + 1);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, text + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "cannot read %s: %s", what, strerror(errno));
            close(fd);
            explicit_bzero(text, n); /* it may hold a secret (a memset before free may go) */
            free(text);
            return NULL;
        }
        if (r == 0 || (n += (size_t)r) == cap)
            break;
    }
    char more;
    /* The probe runs at the cap too: a file of exactly max bytes that grew meanwhile would
     * otherwise come back cut at max, as if whole. */
    if (n < cap || read(fd, &more, 1) == 1) {
        /* Shorter or longer than fstat said: someone writes it in place right now (our own
         * writers rename a finished file into place instead). Better no answer than half. */
        snprintf(err, errlen, "%s changed while it was being read; try again", what);
        close(fd);
        memset(text, 0, n);
        free(text);
        return NULL;
    }
    close(fd);
    text[n] = '\0';
    *len = n;
    return text;
}
