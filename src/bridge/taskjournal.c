/* taskjournal.c — the task files' write-ahead journal: records, replay, segments, checkpoints.
 *
 * The checkpoint uses syncfs() of TASKS_DIR's file system rather than an fsync of each file:
 * one call flushes the thousands of files written since the last checkpoint (their data, inodes
 * and directory entries) where per-file fsyncs would each wait for their own device flush. It
 * also flushes other programs' dirty data on that file system, at most once a second while
 * tasks are written (docs/guides/configuration.md says so). */
#include "taskjournal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"
#include "crc32c.h"
#include "log.h"
#include "mem.h"
#include "taskpath.h"

#define REC_MAGIC 0x524a4d48u /* "HMJR" */
#define CTL_MAGIC 0x434a4d48u /* "HMJC" */
#define CTL_SIZE 4096
#define CTL_SLOT 512 /* the two slots sit in different sectors */
#define MAX_SEGS 64
#define SEG_MAX_BYTES (256u << 20) /* a bigger segment file is not ours */
#define NAME_MAX_LEN 63
#define PATH_CAP 200 /* id (128) + '/' + name (63), with room */

struct taskjournal {
    char *dir;
    int dirfd, jfd, ctlfd;
    size_t seg_size;
    unsigned nsegs, checkpoint_ms;
    /* writer thread */
    int segfd[MAX_SEGS];
    unsigned cur;
    size_t off;
    uint64_t next_seq;
    char *buf;
    size_t bufcap;
    /* guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t ck_wake, w_wake;
    uint64_t seglast[MAX_SEGS]; /* highest sequence number in each segment */
    uint64_t applied, ckpt;
    int64_t pending_since; /* CLOCK_MONOTONIC, ms: the first applied after the checkpoint */
    bool urgent, stop, ck_idle;
    unsigned long checkpoints, ck_fails;
    /* checkpoint thread (and the opener before it starts) */
    uint64_t ctl_gen;
    pthread_t ck;
    bool ck_started;
};

/* ---------- encoding ---------- */

static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static size_t rec_size(const struct taskjournal_rec *r)
{
    return TASKJOURNAL_HDR + strlen(r->id) + 1 + strlen(r->name) +
           (r->kind == TASKJOURNAL_WRITE ? r->len : 0);
}

/* Header: magic, format (16) + kind (16), seq, path length, data length, crc, reserved. */
static size_t rec_encode(unsigned char *p, const struct taskjournal_rec *r, uint64_t seq)
{
    size_t il = strlen(r->id), nl = strlen(r->name), pl = il + 1 + nl;
    size_t dl = r->kind == TASKJOURNAL_WRITE ? r->len : 0;
    memset(p, 0, TASKJOURNAL_HDR);
    put32(p, REC_MAGIC);
    put32(p + 4, (uint32_t)TASKJOURNAL_FORMAT | (uint32_t)r->kind << 16);
    put64(p + 8, seq);
    put32(p + 16, (uint32_t)pl);
    put32(p + 20, (uint32_t)dl);
    memcpy(p + TASKJOURNAL_HDR, r->id, il);
    p[TASKJOURNAL_HDR + il] = '/';
    memcpy(p + TASKJOURNAL_HDR + il + 1, r->name, nl);
    if (dl)
        memcpy(p + TASKJOURNAL_HDR + pl, r->data, dl);
    put32(p + 24, crc32c(0, p, TASKJOURNAL_HDR + pl + dl));
    return TASKJOURNAL_HDR + pl + dl;
}

/* ---------- the control file ---------- */

static bool ctl_write(struct taskjournal *j, uint64_t ckpt)
{
    unsigned char s[32] = {0};
    uint64_t gen = j->ctl_gen + 1;
    put32(s, CTL_MAGIC);
    put32(s + 4, TASKJOURNAL_FORMAT);
    put64(s + 8, gen);
    put64(s + 16, ckpt);
    put32(s + 24, crc32c(0, s, sizeof s));
    if (pwrite(j->ctlfd, s, sizeof s, (off_t)(gen % 2) * CTL_SLOT) != (ssize_t)sizeof s ||
        fdatasync(j->ctlfd) < 0) {
        log_error("task journal %s/%s/control: cannot write: %s", j->dir, TASKJOURNAL_DIR,
                  strerror(errno));
        return false;
    }
    j->ctl_gen = gen;
    return true;
}

/* The newest valid slot; a fresh (all zero) file means nothing was checkpointed yet. */
static bool ctl_read(struct taskjournal *j, uint64_t *ckpt, char *err, size_t errlen)
{
    unsigned char b[2 * CTL_SLOT] = {0};
    ssize_t n = pread(j->ctlfd, b, sizeof b, 0);
    if (n < 0) {
        snprintf(err, errlen, "task journal %s/%s/control: %s", j->dir, TASKJOURNAL_DIR,
                 strerror(errno));
        return false;
    }
    bool any = false, zero = true;
    *ckpt = 0;
    j->ctl_gen = 0;
    for (int i = 0; i < 2; i++) {
        unsigned char s[32];
        memcpy(s, b + i * CTL_SLOT, sizeof s);
        for (size_t k = 0; k < sizeof s; k++)
            zero &= s[k] == 0;
        uint32_t crc = get32(s + 24);
        put32(s + 24, 0);
        if (get32(s) != CTL_MAGIC || crc32c(0, s, sizeof s) != crc)
            continue;
        if (get32(s + 4) != TASKJOURNAL_FORMAT) {
            snprintf(err, errlen,
                     "task journal %s/%s is of format %u; this build reads format %d: run the "
                     "newer hermes-mcp that wrote it",
                     j->dir, TASKJOURNAL_DIR, (unsigned)get32(s + 4), TASKJOURNAL_FORMAT);
            return false;
        }
        if (!any || get64(s + 8) > j->ctl_gen) {
            j->ctl_gen = get64(s + 8);
            *ckpt = get64(s + 16);
        }
        any = true;
    }
    if (!any && !zero) {
        snprintf(err, errlen,
                 "task journal %s/%s/control is unreadable (no valid slot): the task files "
                 "written last before a crash may be torn; move %s away to start without it",
                 j->dir, TASKJOURNAL_DIR, TASKJOURNAL_DIR);
        return false;
    }
    return true;
}

/* ---------- replay ---------- */

struct rrec {
    uint64_t seq;
    unsigned kind;
    char path[PATH_CAP];
    const unsigned char *data;
    size_t len;
};

static int rrec_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct rrec *)a)->seq, y = ((const struct rrec *)b)->seq;
    return x < y ? -1 : x > y;
}

/* "id/name" with a valid id and a plain name: nothing in the journal writes elsewhere. */
static bool path_ok(const char *p, size_t len)
{
    const char *slash = memchr(p, '/', len);
    if (slash == NULL || !taskpath_id_ok(p, (size_t)(slash - p)))
        return false;
    size_t nl = len - (size_t)(slash - p) - 1;
    if (nl == 0 || nl > NAME_MAX_LEN || slash[1] == '.')
        return false;
    for (size_t i = 0; i < nl; i++)
        if (slash[1 + i] == '/' || slash[1 + i] == '\0')
            return false;
    return true;
}

/* Parses one segment's run of records; -1 on a record of a newer format. */
static int seg_parse(const unsigned char *b, size_t size, struct rrec **v, size_t *n, size_t *cap,
                     uint64_t *maxseq, unsigned *newer)
{
    size_t off = 0;
    uint64_t prev = 0;
    while (size - off >= TASKJOURNAL_HDR) {
        const unsigned char *h = b + off;
        uint32_t pl = get32(h + 16), dl = get32(h + 20);
        if (get32(h) != REC_MAGIC || pl == 0 || pl >= PATH_CAP ||
            pl > size - off - TASKJOURNAL_HDR || dl > size - off - TASKJOURNAL_HDR - pl)
            break;
        unsigned char hdr[TASKJOURNAL_HDR];
        memcpy(hdr, h, sizeof hdr);
        put32(hdr + 24, 0);
        uint32_t crc = crc32c(crc32c(0, hdr, sizeof hdr), h + TASKJOURNAL_HDR, (size_t)pl + dl);
        uint64_t seq = get64(h + 8);
        if (crc != get32(h + 24) || (prev && seq != prev + 1))
            break; /* torn, or an old record after this segment's new ones */
        if ((get32(h + 4) & 0xffff) != TASKJOURNAL_FORMAT) {
            *newer = get32(h + 4) & 0xffff;
            return -1;
        }
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 64;
            *v = xrealloc(*v, *cap * sizeof **v);
        }
        struct rrec *r = &(*v)[(*n)++];
        r->seq = seq;
        r->kind = get32(h + 4) >> 16;
        memcpy(r->path, h + TASKJOURNAL_HDR, pl);
        r->path[pl] = '\0';
        r->data = h + TASKJOURNAL_HDR + pl;
        r->len = dl;
        if (seq > *maxseq)
            *maxseq = seq;
        prev = seq;
        off += TASKJOURNAL_HDR + pl + dl;
    }
    return 0;
}

static bool apply_one(struct taskjournal *j, const struct rrec *r, char *err, size_t errlen)
{
    if (!path_ok(r->path, strlen(r->path)) ||
        (r->kind != TASKJOURNAL_WRITE && r->kind != TASKJOURNAL_REMOVE)) {
        log_warn("task journal %s: record %llu names %s: skipped", j->dir,
                 (unsigned long long)r->seq, r->path);
        return true;
    }
    char id[200];
    snprintf(id, sizeof id, "%.*s", (int)(strchr(r->path, '/') - r->path), r->path);
    if (r->kind == TASKJOURNAL_REMOVE) {
        unlinkat(j->dirfd, r->path, 0);
        unlinkat(j->dirfd, id, AT_REMOVEDIR); /* only if that left it empty */
        return true;
    }
    char path[4096], why[256];
    if (mkdirat(j->dirfd, id, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "task journal: cannot create %s/%s: %s", j->dir, id, strerror(errno));
        return false;
    }
    snprintf(path, sizeof path, "%s/%s", j->dir, r->path);
    if (!atomicfile_write(path, r->data, r->len, 0600, why, sizeof why)) {
        snprintf(err, errlen, "task journal: cannot restore %s: %s", path, why);
        return false;
    }
    return true;
}

/* Reads every segment, applies the records after the checkpoint in order, makes them durable
 * and empties the journal. Sets the next sequence number. Caller holds the lock. */
static bool replay(struct taskjournal *j, char *err, size_t errlen)
{
    uint64_t ckpt, maxseq = 0;
    if (!ctl_read(j, &ckpt, err, errlen))
        return false;
    struct rrec *v = NULL;
    size_t n = 0, cap = 0;
    unsigned char *bufs[MAX_SEGS] = {0};
    bool ok = true;
    for (unsigned i = 0; i < MAX_SEGS && ok; i++) {
        char name[16];
        struct stat st;
        snprintf(name, sizeof name, "seg.%u", i);
        int fd = openat(j->jfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        unsigned newer = 0;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= SEG_MAX_BYTES) {
            size_t size = (size_t)st.st_size, got = 0;
            bufs[i] = xmalloc(size ? size : 1);
            while (got < size) {
                ssize_t r = pread(fd, bufs[i] + got, size - got, (off_t)got);
                if (r <= 0)
                    break;
                got += (size_t)r;
            }
            if (seg_parse(bufs[i], got, &v, &n, &cap, &maxseq, &newer) < 0) {
                snprintf(err, errlen,
                         "task journal %s/%s/%s holds a record of format %u; this build reads "
                         "format %d: run the newer hermes-mcp that wrote it",
                         j->dir, TASKJOURNAL_DIR, name, newer, TASKJOURNAL_FORMAT);
                ok = false;
            }
        }
        close(fd);
    }
    size_t applied = 0;
    if (ok && n) {
        qsort(v, n, sizeof *v, rrec_cmp);
        uint64_t want = ckpt + 1;
        for (size_t i = 0; i < n && ok; i++) {
            if (v[i].seq < want)
                continue;
            if (v[i].seq != want)
                break; /* a gap: what follows was never whole */
            ok = apply_one(j, &v[i], err, errlen);
            applied++;
            want++;
        }
        if (ok && applied && syncfs(j->dirfd) < 0) {
            snprintf(err, errlen, "task journal: syncfs of %s: %s", j->dir, strerror(errno));
            ok = false;
        }
        if (ok && applied)
            log_info("task journal %s: %zu task file record(s) replayed", j->dir, applied);
    }
    if (ok && maxseq > ckpt && !ctl_write(j, maxseq)) {
        snprintf(err, errlen, "task journal %s/%s/control: cannot write: %s", j->dir,
                 TASKJOURNAL_DIR, strerror(errno));
        ok = false;
    }
    if (ok)
        j->next_seq = j->applied = j->ckpt = (maxseq > ckpt ? maxseq : ckpt);
    j->next_seq++;
    for (unsigned i = 0; i < MAX_SEGS; i++)
        free(bufs[i]);
    free(v);
    return ok;
}

/* ---------- open, lock ---------- */

static void jfree(struct taskjournal *j)
{
    for (unsigned i = 0; i < MAX_SEGS; i++)
        if (j->segfd[i] >= 0)
            close(j->segfd[i]);
    if (j->ctlfd >= 0)
        close(j->ctlfd); /* releases the lock */
    if (j->jfd >= 0)
        close(j->jfd);
    if (j->dirfd >= 0)
        close(j->dirfd);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->ck_wake);
    pthread_cond_destroy(&j->w_wake);
    free(j->buf);
    free(j->dir);
    free(j);
}

static struct taskjournal *jnew(const char *dir, const struct taskjournal_opts *o)
{
    struct taskjournal *j = xcalloc(1, sizeof *j);
    j->dir = xstrdup(dir);
    j->dirfd = j->jfd = j->ctlfd = -1;
    for (unsigned i = 0; i < MAX_SEGS; i++)
        j->segfd[i] = -1;
    j->seg_size = o && o->seg_size ? o->seg_size : 4u << 20;
    j->nsegs = o && o->nsegs ? o->nsegs : 4;
    j->nsegs = j->nsegs < 2 ? 2 : j->nsegs > MAX_SEGS ? MAX_SEGS : j->nsegs;
    j->checkpoint_ms = o && o->checkpoint_ms ? o->checkpoint_ms : 1000;
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->ck_wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&j->w_wake, NULL);
    return j;
}

/* A new file of size bytes whose blocks are written (zeros) and durable, with its entry. */
static int file_create(struct taskjournal *j, const char *name, size_t size)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, ".%s.new", name);
    int fd = openat(j->jfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    char *zero = xcalloc(1, 64 * 1024);
    bool ok = true;
    for (size_t off = 0; off < size && ok; off += 64 * 1024) {
        size_t k = size - off < 64 * 1024 ? size - off : 64 * 1024;
        ok = pwrite(fd, zero, k, (off_t)off) == (ssize_t)k;
    }
    free(zero);
    if (!ok || fdatasync(fd) < 0 || renameat(j->jfd, tmp, j->jfd, name) < 0 || fsync(j->jfd) < 0) {
        int e = errno;
        close(fd);
        unlinkat(j->jfd, tmp, 0);
        errno = e;
        return -1;
    }
    return fd;
}

/* 1 locked, 0 held by another process, -1 error. The control file is created if missing. */
static int jlock(struct taskjournal *j, bool create, unsigned wait_ms, char *err, size_t errlen)
{
    j->dirfd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (j->dirfd < 0 && errno == ENOENT && !create)
        return 2; /* no task directory yet: nothing to replay */
    if (j->dirfd < 0) {
        snprintf(err, errlen, "TASKS_DIR %s: %s", j->dir, strerror(errno));
        return -1;
    }
    if (create && mkdirat(j->dirfd, TASKJOURNAL_DIR, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "task journal %s/%s: %s", j->dir, TASKJOURNAL_DIR, strerror(errno));
        return -1;
    }
    j->jfd = openat(j->dirfd, TASKJOURNAL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (j->jfd >= 0)
        j->ctlfd = openat(j->jfd, "control", O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (j->ctlfd < 0 && errno == ENOENT && !create)
        return 2; /* no journal: nothing to replay */
    if (j->ctlfd < 0 && errno == ENOENT)
        j->ctlfd = file_create(j, "control", CTL_SIZE);
    if (j->ctlfd < 0) {
        snprintf(err, errlen, "task journal %s/%s/control: %s", j->dir, TASKJOURNAL_DIR,
                 strerror(errno));
        return -1;
    }
    for (unsigned waited = 0;; waited += 50) {
        if (flock(j->ctlfd, LOCK_EX | LOCK_NB) == 0)
            return 1;
        if (errno != EWOULDBLOCK) {
            snprintf(err, errlen, "task journal %s/%s/control: cannot lock: %s", j->dir,
                     TASKJOURNAL_DIR, strerror(errno));
            return -1;
        }
        if (waited >= wait_ms)
            return 0;
        nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
    }
}

int taskjournal_recover(const char *dir, char *err, size_t errlen)
{
    struct taskjournal *j = jnew(dir, NULL);
    int rc = jlock(j, false, 0, err, errlen);
    if (rc == 1)
        rc = replay(j, err, errlen) ? 1 : -1;
    else if (rc == 2)
        rc = 1;
    jfree(j);
    return rc;
}

static void *checkpointer(void *arg);

struct taskjournal *taskjournal_open(const char *dir, const struct taskjournal_opts *o, bool *busy,
                                     char *err, size_t errlen)
{
    struct taskjournal *j = jnew(dir, o);
    *busy = false;
    int rc = jlock(j, true, 2000, err, errlen);
    if (rc == 0) {
        *busy = true;
        snprintf(err, errlen, "another process holds the task journal %s/%s", dir, TASKJOURNAL_DIR);
    }
    if (rc != 1 || !replay(j, err, errlen)) {
        jfree(j);
        return NULL;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    j->ck_started = pthread_create(&j->ck, &attr, checkpointer, j) == 0;
    pthread_attr_destroy(&attr);
    if (!j->ck_started) {
        snprintf(err, errlen, "cannot start the task journal's checkpoint thread");
        jfree(j);
        return NULL;
    }
    return j;
}

void taskjournal_close(struct taskjournal *j)
{
    if (j == NULL)
        return;
    pthread_mutex_lock(&j->mu);
    j->stop = true;
    pthread_cond_signal(&j->ck_wake);
    pthread_mutex_unlock(&j->mu);
    pthread_join(j->ck, NULL); /* it checkpoints what is left first */
    jfree(j);
}

unsigned long taskjournal_checkpoints(struct taskjournal *j)
{
    pthread_mutex_lock(&j->mu);
    unsigned long n = j->checkpoints;
    pthread_mutex_unlock(&j->mu);
    return n;
}

/* ---------- checkpoints ---------- */

static int64_t now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void wait_until_ms(struct taskjournal *j, int64_t at)
{
    struct timespec until = {.tv_sec = at / 1000, .tv_nsec = (long)(at % 1000) * 1000000};
    pthread_cond_timedwait(&j->ck_wake, &j->mu, &until);
}

/* When the files written since the last checkpoint are made durable: under steady writing,
 * once the first of them is checkpoint_ms old (the writer asks, as it applies a batch); at
 * once when the writer waits for a segment; at close. Never on a timer: what was written last
 * before the writer went quiet stays journaled (a crash replays it) until more comes, so an
 * idle server makes no system call at all. */
static bool checkpoint_due(const struct taskjournal *j)
{
    return j->urgent ||
           (j->applied != j->ckpt && now_ms() - j->pending_since >= (int64_t)j->checkpoint_ms);
}

static void *checkpointer(void *arg)
{
    struct taskjournal *j = arg;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        if (j->stop && j->applied == j->ckpt)
            break;
        if (!j->stop && !checkpoint_due(j)) {
            j->ck_idle = true;
            pthread_cond_wait(&j->ck_wake, &j->mu);
            j->ck_idle = false;
            continue;
        }
        uint64_t target = j->applied;
        j->urgent = false;
        pthread_mutex_unlock(&j->mu);
        bool ok = syncfs(j->dirfd) == 0;
        if (!ok)
            log_error("task journal: syncfs of %s: %s", j->dir, strerror(errno));
        ok = ok && ctl_write(j, target);
        pthread_mutex_lock(&j->mu);
        if (ok) {
            j->ckpt = target;
            j->checkpoints++;
            j->pending_since = now_ms();
            pthread_cond_broadcast(&j->w_wake);
        } else if (j->stop) {
            break; /* the next start replays */
        } else {
            j->ck_fails++;
            pthread_cond_broadcast(&j->w_wake);
            wait_until_ms(j, now_ms() + 1000);
        }
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

void taskjournal_applied(struct taskjournal *j)
{
    pthread_mutex_lock(&j->mu);
    if (j->next_seq - 1 != j->applied) {
        if (j->applied == j->ckpt)
            j->pending_since = now_ms();
        j->applied = j->next_seq - 1;
        if (j->ck_idle && checkpoint_due(j))
            pthread_cond_signal(&j->ck_wake);
    }
    pthread_mutex_unlock(&j->mu);
}

void taskjournal_checkpoint(struct taskjournal *j)
{
    taskjournal_applied(j);
    pthread_mutex_lock(&j->mu);
    unsigned long fails = j->ck_fails; /* a disk that fails: the caller goes on, errors logged */
    while (j->ckpt < j->applied && j->ck_fails == fails) {
        j->urgent = true;
        pthread_cond_signal(&j->ck_wake);
        pthread_cond_wait(&j->w_wake, &j->mu);
    }
    pthread_mutex_unlock(&j->mu);
}

/* ---------- appending ---------- */

bool taskjournal_fits(const struct taskjournal *j, const struct taskjournal_rec *r)
{
    return rec_size(r) <= j->seg_size && strlen(r->id) + 1 + strlen(r->name) < PATH_CAP &&
           (r->kind != TASKJOURNAL_WRITE || r->len <= UINT32_MAX);
}

static bool seg_open(struct taskjournal *j, unsigned i)
{
    if (j->segfd[i] >= 0)
        return true;
    char name[16];
    struct stat st;
    snprintf(name, sizeof name, "seg.%u", i);
    int fd = openat(j->jfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 &&
        (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != j->seg_size)) {
        close(fd); /* another size: made anew (its records are checkpointed) */
        fd = -1;
    }
    if (fd < 0)
        fd = file_create(j, name, j->seg_size);
    if (fd < 0) {
        log_error("task journal %s/%s/%s: cannot create: %s", j->dir, TASKJOURNAL_DIR, name,
                  strerror(errno));
        return false;
    }
    j->segfd[i] = fd;
    return true;
}

/* The next segment, once its records are checkpointed (the writer waits: backpressure). */
static void seg_next(struct taskjournal *j)
{
    unsigned next = (j->cur + 1) % j->nsegs;
    pthread_mutex_lock(&j->mu);
    j->urgent = true; /* a checkpoint now frees the segments behind this one */
    pthread_cond_signal(&j->ck_wake);
    while (j->seglast[next] > j->ckpt)
        pthread_cond_wait(&j->w_wake, &j->mu);
    pthread_mutex_unlock(&j->mu);
    j->cur = next;
    j->off = 0;
}

size_t taskjournal_append(struct taskjournal *j, const struct taskjournal_rec *r, size_t n)
{
    if (n == 0)
        return 0;
    if (j->off + rec_size(&r[0]) > j->seg_size)
        seg_next(j);
    if (!seg_open(j, j->cur))
        return 0;
    size_t m = 0, len = 0;
    while (m < n && j->off + len + rec_size(&r[m]) <= j->seg_size)
        len += rec_size(&r[m++]);
    if (len > j->bufcap) {
        free(j->buf);
        j->bufcap = len > 65536 ? len : 65536;
        j->buf = xmalloc(j->bufcap);
    }
    size_t at = 0;
    for (size_t i = 0; i < m; i++)
        at += rec_encode((unsigned char *)j->buf + at, &r[i], j->next_seq + i);
    size_t put = 0;
    while (put < len) {
        ssize_t w = pwrite(j->segfd[j->cur], j->buf + put, len - put, (off_t)(j->off + put));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        put += (size_t)w;
    }
    /* Past here the sequence numbers are spent either way: replay stops at a torn record. */
    j->next_seq += m;
    j->off += len;
    pthread_mutex_lock(&j->mu);
    j->seglast[j->cur] = j->next_seq - 1;
    pthread_mutex_unlock(&j->mu);
    if (put < len || fdatasync(j->segfd[j->cur]) < 0) {
        log_error("task journal %s/%s: cannot write: %s", j->dir, TASKJOURNAL_DIR,
                  put < len ? "short write" : strerror(errno));
        return 0;
    }
    return m;
}
