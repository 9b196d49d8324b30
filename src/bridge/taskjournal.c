/* taskjournal.c — the task files' write-ahead journal: records, replay, segments, checkpoints.
 *
 * The checkpoint uses syncfs() of TASKS_DIR's file system rather than an fsync of each file:
 * one call flushes the thousands of files written since the last checkpoint (their data, inodes
 * and directory entries) where per-file fsyncs would each wait for their own device flush. It
 * also flushes other programs' dirty data on that file system, at most once a second while
 * tasks are written (docs/guides/configuration.md says so).
 *
 * A failed flush (syncfs, fdatasync) is never retried: the kernel may have dropped the dirty
 * pages it could not write and reports the error once, so a second flush could succeed over
 * lost data. Like PostgreSQL (data_sync_retry=off), the server then logs the reason and exits
 * non-zero; the next start replays the journal, which still holds every record past the last
 * good checkpoint. syncfs reports write-back errors only since Linux 5.8; on an older kernel a
 * checkpoint can miss an I/O error of a task file (the journal's own fdatasync still reports). */
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
#include "taskjournal_int.h"

#define WAIT_MAX_MS 60000   /* the writer waits this long for a checkpoint at most */
#define CLOSE_WAIT_MS 10000 /* and shutdown for the last one */
#define QUIET_MS 15         /* no write for this long: the writer went quiet, checkpoint now */

/* A write or a flush of the journal or of the task files failed: never retried, the server
 * stops (the head of this file says why). */
static _Noreturn void jstop(const char *dir, const char *what, int e)
{
    log_error("task journal %s: %s: %s; stopping the server: its next start replays the "
              "journal",
              dir, what, strerror(e));
    _exit(EXIT_FAILURE);
}

/* ---------- encoding ---------- */

static size_t rec_size(const struct taskjournal_rec *r)
{
    return TASKJOURNAL_HDR + strlen(r->id) + 1 + strlen(r->name) +
           (r->kind == TASKJOURNAL_WRITE ? r->len : 0);
}

/* Header: magic, format (16) + kind (16), seq, path length, data length, crc, and the record's
 * index in its write (replay tells a torn write's tail from records written after a hole). */
static size_t rec_encode(unsigned char *p, const struct taskjournal_rec *r, uint64_t seq,
                         uint32_t idx)
{
    size_t il = strlen(r->id), nl = strlen(r->name), pl = il + 1 + nl;
    size_t dl = r->kind == TASKJOURNAL_WRITE ? r->len : 0;
    memset(p, 0, TASKJOURNAL_HDR);
    tj_put32(p, REC_MAGIC);
    tj_put32(p + 4, (uint32_t)TASKJOURNAL_FORMAT | (uint32_t)r->kind << 16);
    tj_put64(p + 8, seq);
    tj_put32(p + 16, (uint32_t)pl);
    tj_put32(p + 20, (uint32_t)dl);
    tj_put32(p + 28, idx);
    memcpy(p + TASKJOURNAL_HDR, r->id, il);
    p[TASKJOURNAL_HDR + il] = '/';
    memcpy(p + TASKJOURNAL_HDR + il + 1, r->name, nl);
    if (dl)
        memcpy(p + TASKJOURNAL_HDR + pl, r->data, dl);
    tj_put32(p + 24, crc32c(0, p, TASKJOURNAL_HDR + pl + dl));
    return TASKJOURNAL_HDR + pl + dl;
}

/* ---------- the control file ---------- */

bool taskjournal_ctl_write(struct taskjournal *j, uint64_t ckpt)
{
    unsigned char s[32] = {0};
    uint64_t gen = j->ctl_gen + 1;
    tj_put32(s, CTL_MAGIC);
    tj_put32(s + 4, TASKJOURNAL_FORMAT);
    tj_put64(s + 8, gen);
    tj_put64(s + 16, ckpt);
    tj_put32(s + 24, crc32c(0, s, sizeof s));
    if (pwrite(j->ctlwfd, s, sizeof s, (off_t)(gen % 2) * CTL_SLOT) != (ssize_t)sizeof s ||
        fdatasync(j->ctlwfd) < 0) {
        log_error("task journal %s/%s/control: cannot write: %s", j->dir, TASKJOURNAL_DIR,
                  strerror(errno));
        return false;
    }
    j->ctl_gen = gen;
    return true;
}

/* The newest valid slot; a fresh (all zero) file means nothing was checkpointed yet. */
bool taskjournal_ctl_read(struct taskjournal *j, uint64_t *ckpt, char *err, size_t errlen)
{
    unsigned char b[CTL_SIZE] = {0};
    ssize_t n = pread(j->ctlfd, b, sizeof b, 0);
    if (n < 0) {
        snprintf(err, errlen, "task journal %s/%s/control: %s", j->dir, TASKJOURNAL_DIR,
                 strerror(errno));
        return false;
    }
    bool any = false, zero = true;
    *ckpt = 0;
    j->ctl_gen = 0;
    static const size_t at[] = {0, CTL_OLD_SLOT, CTL_SLOT};
    for (int i = 0; i < 3; i++) {
        unsigned char s[32];
        memcpy(s, b + at[i], sizeof s);
        for (size_t k = 0; k < sizeof s; k++)
            zero &= s[k] == 0;
        uint32_t crc = tj_get32(s + 24);
        tj_put32(s + 24, 0);
        if (tj_get32(s) != CTL_MAGIC || crc32c(0, s, sizeof s) != crc)
            continue;
        if (tj_get32(s + 4) != TASKJOURNAL_FORMAT) {
            snprintf(err, errlen,
                     "task journal %s/%s is of format %u; this build reads format %d: run the "
                     "newer hermes-mcp that wrote it",
                     j->dir, TASKJOURNAL_DIR, (unsigned)tj_get32(s + 4), TASKJOURNAL_FORMAT);
            return false;
        }
        if (!any || tj_get64(s + 8) > j->ctl_gen) {
            j->ctl_gen = tj_get64(s + 8);
            *ckpt = tj_get64(s + 16);
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

/* ---------- open, lock ---------- */

static void jfree(struct taskjournal *j)
{
    for (unsigned i = 0; i < MAX_SEGS; i++)
        if (j->segfd[i] >= 0)
            close(j->segfd[i]);
    if (j->ctlwfd >= 0 && j->ctlwfd != j->ctlfd)
        close(j->ctlwfd);
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
    j->dirfd = j->jfd = j->ctlfd = j->ctlwfd = -1;
    for (unsigned i = 0; i < MAX_SEGS; i++)
        j->segfd[i] = -1;
    j->seg_size = o && o->seg_size ? o->seg_size : 4u << 20;
    j->seg_size = j->seg_size > SEG_MAX_BYTES ? SEG_MAX_BYTES : j->seg_size;
    j->nsegs = o && o->nsegs ? o->nsegs : 4;
    j->nsegs = j->nsegs < 2 ? 2 : j->nsegs > MAX_SEGS ? MAX_SEGS : j->nsegs;
    while (j->nsegs > 2 && j->nsegs * j->seg_size > REPLAY_MAX_BYTES)
        j->nsegs--; /* what replay reads back stays bounded */
    j->checkpoint_ms = o && o->checkpoint_ms ? o->checkpoint_ms : 1000;
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->ck_wake, &ca);
    pthread_cond_init(&j->w_wake, &ca);
    pthread_condattr_destroy(&ca);
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

/* 1 locked, 0 held by another process, 2 nothing to replay, -1 error. The server (create)
 * makes the journal if missing; an offline reader opens the control file read-only (a lock
 * needs no more) and for writing only if it has something to replay. */
static int jlock(struct taskjournal *j, bool create, unsigned wait_ms, char *err, size_t errlen)
{
    j->dirfd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (j->dirfd < 0 && errno == ENOENT && !create)
        return 2; /* no task directory yet: nothing to replay */
    if (j->dirfd < 0) {
        snprintf(err, errlen, "TASKS_DIR %s: %s", j->dir, strerror(errno));
        return -1;
    }
    if (create && mkdirat(j->dirfd, TASKJOURNAL_DIR, 0700) == 0) {
        if (fsync(j->dirfd) < 0) { /* the new folder's entry outlives a crash, as its files */
            snprintf(err, errlen, "TASKS_DIR %s: fsync: %s", j->dir, strerror(errno));
            return -1;
        }
    } else if (create && errno != EEXIST) {
        snprintf(err, errlen, "task journal %s/%s: %s", j->dir, TASKJOURNAL_DIR, strerror(errno));
        return -1;
    }
    j->jfd = openat(j->dirfd, TASKJOURNAL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (j->jfd >= 0)
        j->ctlfd = openat(j->jfd, "control", (create ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
    if (j->ctlfd < 0 && errno == ENOENT && !create)
        return 2; /* no journal: nothing to replay */
    if (j->ctlfd < 0 && errno == ENOENT && j->jfd >= 0)
        j->ctlfd = file_create(j, "control", CTL_SIZE);
    if (j->ctlfd < 0) {
        snprintf(err, errlen, "task journal %s/%s/control: %s", j->dir, TASKJOURNAL_DIR,
                 strerror(errno));
        return -1;
    }
    if (create)
        j->ctlwfd = j->ctlfd;
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
        rc = taskjournal_replay(j, err, errlen) ? 1 : -1;
    else if (rc == 2)
        rc = 1;
    jfree(j);
    return rc;
}

int taskjournal_settle(const char *dir, unsigned wait_ms, char *err, size_t errlen)
{
    struct taskjournal *j = jnew(dir, NULL);
    int rc = jlock(j, false, 0, err, errlen);
    uint64_t maxseq, ckpt = 0;
    if (rc == 0) { /* a server holds it: wait for its checkpoint to cover what is there now */
        rc = taskjournal_scan_max(j, &maxseq, err, errlen) ? 0 : -1;
        for (unsigned waited = 0; rc == 0; waited += 50) {
            if (!taskjournal_ctl_read(j, &ckpt, err, errlen))
                rc = -1;
            else if (ckpt >= maxseq)
                rc = 1;
            else if (waited >= wait_ms)
                break;
            else
                nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
        }
        if (rc == 0)
            snprintf(err, errlen,
                     "the server that holds the task journal %s/%s has not checkpointed it in "
                     "%u ms; try again",
                     dir, TASKJOURNAL_DIR, wait_ms);
    } else if (rc == 1) {
        rc = taskjournal_replay(j, err, errlen) ? 1 : -1;
    } else if (rc == 2) {
        rc = 1;
    }
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
    if (rc != 1 || !taskjournal_replay(j, err, errlen)) {
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

static int64_t now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void wait_until_ms(pthread_cond_t *c, pthread_mutex_t *mu, int64_t at)
{
    struct timespec until = {.tv_sec = at / 1000, .tv_nsec = (long)(at % 1000) * 1000000};
    pthread_cond_timedwait(c, mu, &until);
}

void taskjournal_close(struct taskjournal *j)
{
    if (j == NULL)
        return;
    pthread_mutex_lock(&j->mu);
    j->stop = true;
    pthread_cond_signal(&j->ck_wake);
    /* The last checkpoint, for a while: a disk that hangs leaves it to the next start. */
    int64_t until = now_ms() + CLOSE_WAIT_MS;
    while (!j->ck_done && now_ms() < until)
        wait_until_ms(&j->w_wake, &j->mu, until);
    bool done = j->ck_done;
    pthread_mutex_unlock(&j->mu);
    if (!done) {
        log_error("task journal %s: the last checkpoint has not finished in %d s; the next "
                  "start replays the journal",
                  j->dir, CLOSE_WAIT_MS / 1000);
        return; /* the thread still uses j: left to the exit */
    }
    pthread_join(j->ck, NULL);
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

/* When the files written since the last checkpoint are made durable: under steady writing,
 * once the first of them is checkpoint_ms old; QUIET_MS after the last write when no more come;
 * at once when a writer waits for one; at close.
 * The checkpoint thread sleeps with a timeout only while something is not checkpointed yet,
 * so an idle server makes one checkpoint after its last write and then no system call. */
static int64_t checkpoint_at(const struct taskjournal *j)
{
    int64_t steady = j->pending_since + (int64_t)j->checkpoint_ms, quiet = j->last_write + QUIET_MS;
    return steady < quiet ? steady : quiet;
}

static bool checkpoint_due(const struct taskjournal *j)
{
    return j->urgent || (j->applied != j->ckpt && now_ms() >= checkpoint_at(j));
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
            if (j->applied != j->ckpt)
                wait_until_ms(&j->ck_wake, &j->mu, checkpoint_at(j));
            else
                pthread_cond_wait(&j->ck_wake, &j->mu);
            j->ck_idle = false;
            continue;
        }
        uint64_t target = j->applied;
        j->urgent = false;
        pthread_mutex_unlock(&j->mu);
        /* Never retried, never followed by a control write: see the head of this file. */
        if (syncfs(j->dirfd) < 0)
            jstop(j->dir, "syncfs (a checkpoint)", errno);
        if (!taskjournal_ctl_write(j, target))
            jstop(j->dir, "writing the control file", errno);
        pthread_mutex_lock(&j->mu);
        j->ckpt = target;
        j->checkpoints++;
        j->pending_since = now_ms();
        pthread_cond_broadcast(&j->w_wake);
    }
    j->ck_done = true;
    pthread_cond_broadcast(&j->w_wake);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

void taskjournal_applied(struct taskjournal *j)
{
    pthread_mutex_lock(&j->mu);
    if (j->next_seq - 1 != j->applied) {
        bool clean = j->applied == j->ckpt; /* the checkpointer sleeps with no timeout */
        j->last_write = now_ms();
        if (clean)
            j->pending_since = j->last_write;
        j->applied = j->next_seq - 1;
        if (j->ck_idle && (clean || checkpoint_due(j)))
            pthread_cond_signal(&j->ck_wake);
    }
    pthread_mutex_unlock(&j->mu);
}

/* Caller holds mu: returns once the checkpoint reaches target (or seglast[seg] of the segment
 * seg, if seg >= 0). A checkpoint that fails stops the server; one that takes longer than
 * WAIT_MAX_MS too (the disk hangs: the next start replays). */
static void wait_ckpt(struct taskjournal *j, uint64_t target, int seg)
{
    int64_t until = now_ms() + WAIT_MAX_MS;
    while (j->ckpt < (seg >= 0 ? j->seglast[seg] : target)) {
        j->urgent = true;
        pthread_cond_signal(&j->ck_wake);
        if (now_ms() >= until)
            jstop(j->dir, "a checkpoint has not finished in 60 s", ETIMEDOUT);
        wait_until_ms(&j->w_wake, &j->mu, until);
    }
}

void taskjournal_checkpoint(struct taskjournal *j)
{
    taskjournal_applied(j);
    pthread_mutex_lock(&j->mu);
    wait_ckpt(j, j->applied, -1);
    pthread_mutex_unlock(&j->mu);
}

void taskjournal_sync(struct taskjournal *j)
{
    pthread_mutex_lock(&j->mu);
    wait_ckpt(j, j->applied, -1);
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
    wait_ckpt(j, 0, (int)next); /* a checkpoint now frees the segments behind this one */
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
        return 0; /* nothing written: the caller writes the durable way */
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
        at += rec_encode((unsigned char *)j->buf + at, &r[i], j->next_seq + i, (uint32_t)i);
    size_t put = 0;
    while (put < len) {
        ssize_t w = pwrite(j->segfd[j->cur], j->buf + put, len - put, (off_t)(j->off + put));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            jstop(j->dir, "cannot append to the journal", w < 0 ? errno : EIO);
        put += (size_t)w;
    }
    /* A failed flush leaves a hole nothing may be written after: the server stops. */
    if (fdatasync(j->segfd[j->cur]) < 0)
        jstop(j->dir, "fdatasync of the journal", errno);
    j->next_seq += m;
    j->off += len;
    pthread_mutex_lock(&j->mu);
    j->seglast[j->cur] = j->next_seq - 1;
    pthread_mutex_unlock(&j->mu);
    return m;
}
