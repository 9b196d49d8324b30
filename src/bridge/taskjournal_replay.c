/* taskjournal_replay.c — reading the task journal back after a crash, and applying it.
 *
 * Replay takes, in sequence order from the checkpoint on, every whole record (CRC). Records
 * after a missing one are an error unless they belong to the same write as the missing one:
 * that write was torn by the crash and never acknowledged (its fdatasync never returned). A
 * later write after a hole means the disk lost one reported durable: replay refuses, with the
 * counts, rather than drop acknowledged records in silence.
 *
 * Replay writes only inside TASKS_DIR: each task directory is opened with O_NOFOLLOW and its
 * file written, renamed and removed through that descriptor, only under the three names a task
 * has; and it refuses a journal that another user owns or could have written. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "crc32c.h"
#include "log.h"
#include "mem.h"
#include "taskjournal.h"
#include "taskjournal_int.h"
#include "taskpath.h"

struct rrec {
    uint64_t seq, first; /* first: the sequence number that began its write */
    unsigned kind;
    char path[PATH_CAP];
    const unsigned char *data;
    size_t len;
};

struct rset {
    struct rrec *v;
    size_t n, cap;
    uint64_t ckpt, maxseq;
    unsigned newer;
    unsigned char *bufs[MAX_SEGS];
    char foreign[64]; /* the first journal file another user owns or could write, if any */
};

static int rrec_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct rrec *)a)->seq, y = ((const struct rrec *)b)->seq;
    return x < y ? -1 : x > y;
}

/* "id/name" with a valid id and one of a task's file names: nothing else is replayed. */
static bool path_ok(const char *p, size_t len)
{
    const char *slash = memchr(p, '/', len);
    if (slash == NULL || !taskpath_id_ok(p, (size_t)(slash - p)))
        return false;
    const char *name = slash + 1;
    size_t nl = len - (size_t)(name - p);
    static const char *const names[] = {"request.json", "run.json", "result.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (nl == strlen(names[i]) && memcmp(name, names[i], nl) == 0)
            return true;
    return false;
}

/* The record at b (size bytes left), if whole: its header fields. */
static bool rec_whole(const unsigned char *h, size_t size, uint32_t *pl, uint32_t *dl)
{
    if (size < TASKJOURNAL_HDR || tj_get32(h) != REC_MAGIC)
        return false;
    *pl = tj_get32(h + 16);
    *dl = tj_get32(h + 20);
    if (*pl == 0 || *pl >= PATH_CAP || *pl > size - TASKJOURNAL_HDR ||
        *dl > size - TASKJOURNAL_HDR - *pl)
        return false;
    unsigned char hdr[TASKJOURNAL_HDR];
    memcpy(hdr, h, sizeof hdr);
    tj_put32(hdr + 24, 0);
    return crc32c(crc32c(0, hdr, sizeof hdr), h + TASKJOURNAL_HDR, (size_t)*pl + *dl) ==
           tj_get32(h + 24);
}

static void rset_add(struct rset *s, const unsigned char *h, uint32_t pl, uint32_t dl)
{
    uint64_t seq = tj_get64(h + 8);
    if (seq > s->maxseq)
        s->maxseq = seq;
    if (seq <= s->ckpt)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    struct rrec *r = &s->v[s->n++];
    r->seq = seq;
    r->first = seq - tj_get32(h + 28);
    r->kind = tj_get32(h + 4) >> 16;
    memcpy(r->path, h + TASKJOURNAL_HDR, pl);
    r->path[pl] = '\0';
    r->data = h + TASKJOURNAL_HDR + pl;
    r->len = dl;
}

/* One segment: its run of records, then every whole record past where that run ends (a torn
 * write's tail, an old record of a reused segment, or one written after a hole). -1 on a
 * record of a newer format. */
static int seg_parse(struct rset *s, const unsigned char *b, size_t size)
{
    size_t off = 0;
    uint64_t prev = 0;
    uint32_t pl, dl;
    while (rec_whole(b + off, size - off, &pl, &dl)) {
        uint64_t seq = tj_get64(b + off + 8);
        if (prev && seq != prev + 1)
            break;
        if ((tj_get32(b + off + 4) & 0xffff) != TASKJOURNAL_FORMAT) {
            s->newer = tj_get32(b + off + 4) & 0xffff;
            return -1;
        }
        rset_add(s, b + off, pl, dl);
        prev = seq;
        off += TASKJOURNAL_HDR + pl + dl;
    }
    for (; off + TASKJOURNAL_HDR <= size; off++) {
        const unsigned char *h = memchr(b + off, REC_MAGIC & 0xff, size - off);
        if (h == NULL)
            break;
        off = (size_t)(h - b);
        if (rec_whole(h, size - off, &pl, &dl) &&
            (tj_get32(h + 4) & 0xffff) == TASKJOURNAL_FORMAT) {
            rset_add(s, h, pl, dl);
            off += TASKJOURNAL_HDR + pl + dl - 1;
        }
    }
    return 0;
}

static void note_foreign(struct rset *s, int fd, const char *name)
{
    struct stat st;
    if (s->foreign[0] == '\0' && fstat(fd, &st) == 0 &&
        (st.st_uid != geteuid() || (st.st_mode & 022)))
        snprintf(s->foreign, sizeof s->foreign, "%s", name);
}

/* Reads the control file and every segment into s; false with err. */
static bool read_all(struct taskjournal *j, struct rset *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (!taskjournal_ctl_read(j, &s->ckpt, err, errlen))
        return false;
    note_foreign(s, j->jfd, TASKJOURNAL_DIR);
    note_foreign(s, j->ctlfd, TASKJOURNAL_DIR "/control");
    size_t total = 0;
    for (unsigned i = 0; i < MAX_SEGS; i++) {
        char name[16];
        struct stat st;
        snprintf(name, sizeof name, "seg.%u", i);
        int fd = openat(j->jfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
            continue;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            (size_t)st.st_size > SEG_MAX_BYTES ||
            (total += (size_t)st.st_size) > REPLAY_MAX_BYTES) {
            snprintf(err, errlen,
                     "task journal %s/%s/%s: %s; refusing to replay: a segment is a regular file "
                     "of at most %u MiB, %u MiB in all",
                     j->dir, TASKJOURNAL_DIR, name,
                     fd < 0 ? strerror(errno) : "not a segment this server wrote",
                     SEG_MAX_BYTES >> 20, REPLAY_MAX_BYTES >> 20);
            if (fd >= 0)
                close(fd);
            return false;
        }
        note_foreign(s, fd, name);
        size_t size = (size_t)st.st_size, got = 0;
        s->bufs[i] = xmalloc(size ? size : 1);
        while (got < size) {
            ssize_t r = pread(fd, s->bufs[i] + got, size - got, (off_t)got);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        close(fd);
        if (seg_parse(s, s->bufs[i], got) < 0) {
            snprintf(err, errlen,
                     "task journal %s/%s/%s holds a record of format %u; this build reads format "
                     "%d: run the newer hermes-mcp that wrote it",
                     j->dir, TASKJOURNAL_DIR, name, s->newer, TASKJOURNAL_FORMAT);
            return false;
        }
    }
    return true;
}

static void rset_free(struct rset *s)
{
    for (unsigned i = 0; i < MAX_SEGS; i++)
        free(s->bufs[i]);
    free(s->v);
}

bool taskjournal_scan_max(struct taskjournal *j, uint64_t *maxseq, char *err, size_t errlen)
{
    struct rset s;
    bool ok = read_all(j, &s, err, errlen);
    *maxseq = s.maxseq;
    rset_free(&s);
    return ok;
}

/* The task directory id, opened without following a link (created if create). */
static int id_open(struct taskjournal *j, const char *id, bool create, char *err, size_t errlen)
{
    int fd = openat(j->dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdirat(j->dirfd, id, 0700) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "task journal: cannot create %s/%s: %s", j->dir, id,
                     strerror(errno));
            return -1;
        }
        fd = openat(j->dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0 && !(errno == ENOENT && !create)) {
        int e = errno;
        struct stat st;
        bool link = fstatat(j->dirfd, id, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
        snprintf(err, errlen,
                 "task journal: %s/%s is not a task directory (%s; a symbolic link is never "
                 "followed): refusing to replay into it",
                 j->dir, id, link ? "a symbolic link" : strerror(e));
        errno = e;
    }
    return fd;
}

static bool apply_one(struct taskjournal *j, const struct rrec *r, char *err, size_t errlen)
{
    if (!path_ok(r->path, strlen(r->path)) ||
        (r->kind != TASKJOURNAL_WRITE && r->kind != TASKJOURNAL_REMOVE)) {
        snprintf(err, errlen,
                 "task journal %s: record %llu names %s, not a task file: refusing to replay",
                 j->dir, (unsigned long long)r->seq, r->path);
        return false;
    }
    char id[PATH_CAP];
    const char *name = strchr(r->path, '/') + 1;
    snprintf(id, sizeof id, "%.*s", (int)(name - 1 - r->path), r->path);
    int fd = id_open(j, id, r->kind == TASKJOURNAL_WRITE, err, errlen);
    if (fd < 0)
        return r->kind == TASKJOURNAL_REMOVE && errno == ENOENT;
    bool ok = true;
    if (r->kind == TASKJOURNAL_REMOVE) {
        unlinkat(fd, name, 0);
        close(fd);
        unlinkat(j->dirfd, id, AT_REMOVEDIR); /* only if that left it empty */
        return true;
    }
    /* No fsync here: the syncfs after the last record makes them all durable at once. */
    char tmp[80];
    snprintf(tmp, sizeof tmp, ".%s.replay", name);
    int f = openat(fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f < 0 || !atomicfile_write_all(f, (const char *)r->data, r->len) ||
        renameat(fd, tmp, fd, name) < 0) {
        snprintf(err, errlen, "task journal: cannot restore %s/%s: %s", j->dir, r->path,
                 strerror(errno));
        unlinkat(fd, tmp, 0);
        ok = false;
    }
    if (f >= 0)
        close(f);
    close(fd);
    return ok;
}

/* Of the records past the first gap: how many belong to the torn write the gap is in, and
 * how many were written after it (lost: the error). */
static void past_gap(const struct rset *s, size_t i, uint64_t want, size_t *torn, size_t *lost,
                     uint64_t *last)
{
    uint64_t prev = want - 1;
    for (; i < s->n; i++) {
        if (s->v[i].seq == prev)
            continue; /* the same record seen twice */
        prev = s->v[i].seq;
        *last = prev;
        if (s->v[i].first <= want)
            ++*torn;
        else
            ++*lost;
    }
}

bool taskjournal_replay(struct taskjournal *j, char *err, size_t errlen)
{
    struct rset s;
    bool ok = read_all(j, &s, err, errlen);
    size_t applied = 0, torn = 0, lost = 0, go = 0;
    uint64_t want = s.ckpt + 1, last = 0;
    if (ok) {
        if (s.n)
            qsort(s.v, s.n, sizeof *s.v, rrec_cmp);
        for (; go < s.n && s.v[go].seq <= want; go++)
            if (s.v[go].seq == want)
                want++;
        past_gap(&s, go, want, &torn, &lost, &last);
    }
    if (ok && lost) {
        snprintf(err, errlen,
                 "task journal %s/%s: record %llu is missing but %zu later record(s), up to "
                 "%llu, are whole (%zu before the gap): the disk lost a write it reported "
                 "durable; refusing to replay. Move %s aside to start with the task files as "
                 "they are",
                 j->dir, TASKJOURNAL_DIR, (unsigned long long)want, lost, (unsigned long long)last,
                 go, TASKJOURNAL_DIR);
        ok = false;
    }
    if (ok && s.foreign[0] && (go || s.maxseq > s.ckpt)) {
        snprintf(err, errlen,
                 "task journal %s/%s is owned by another user or writable by group or others; "
                 "refusing to replay it: run this as the user the server runs as (uid of the "
                 "journal), with the journal's files mode 0600",
                 j->dir, s.foreign);
        ok = false;
    }
    if (ok && s.maxseq > s.ckpt && j->ctlwfd < 0) {
        j->ctlwfd = openat(j->jfd, "control", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (j->ctlwfd < 0) {
            snprintf(err, errlen, "task journal %s/%s/control: %s (replaying needs to write it)",
                     j->dir, TASKJOURNAL_DIR, strerror(errno));
            ok = false;
        }
    }
    for (size_t i = 0; ok && i < go; i++)
        if (s.v[i].seq > s.ckpt && (i == 0 || s.v[i].seq != s.v[i - 1].seq)) {
            ok = apply_one(j, &s.v[i], err, errlen);
            applied++;
        }
    if (ok && applied && syncfs(j->dirfd) < 0) {
        snprintf(err, errlen, "task journal: syncfs of %s: %s", j->dir, strerror(errno));
        ok = false;
    }
    if (ok && applied)
        log_info("task journal %s: %zu task file record(s) replayed", j->dir, applied);
    if (ok && torn)
        log_info("task journal %s: %zu record(s) of a write the crash cut short were never "
                 "acknowledged: not replayed",
                 j->dir, torn);
    if (ok && s.maxseq > s.ckpt && !taskjournal_ctl_write(j, s.maxseq)) {
        snprintf(err, errlen, "task journal %s/%s/control: cannot write: %s", j->dir,
                 TASKJOURNAL_DIR, strerror(errno));
        ok = false;
    }
    if (ok)
        j->next_seq = j->applied = j->ckpt = (s.maxseq > s.ckpt ? s.maxseq : s.ckpt);
    j->next_seq++;
    rset_free(&s);
    return ok;
}
