/* taskjournal_int.h — what taskjournal.c (segments, checkpoints) and taskjournal_replay.c
 * (reading the journal back after a crash) share: the journal's state and on-disk encoding. */
#ifndef HM_TASKJOURNAL_INT_H
#define HM_TASKJOURNAL_INT_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define REC_MAGIC 0x524a4d48u /* "HMJR" */
#define CTL_MAGIC 0x434a4d48u /* "HMJC" */
#define CTL_SIZE 8192
#define CTL_SLOT 4096    /* the two slots sit in different pages and sectors */
#define CTL_OLD_SLOT 512 /* where a 4 KiB control file kept its second slot */
#define MAX_SEGS 64
#define SEG_MAX_BYTES (64u << 20)     /* a bigger segment file is not ours */
#define REPLAY_MAX_BYTES (256u << 20) /* what replay reads at most, all segments together */
#define NAME_MAX_LEN 63
#define PATH_CAP 200 /* id (128) + '/' + name (63), with room */

struct taskjournal {
    char *dir;
    int dirfd, jfd, ctlfd, ctlwfd; /* ctlwfd: for writing (an offline reader opens it late) */
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
    int64_t last_write;    /* CLOCK_MONOTONIC, ms: the last applied */
    bool urgent, stop, ck_idle, ck_done;
    unsigned long checkpoints;
    /* checkpoint thread (and the opener before it starts) */
    uint64_t ctl_gen;
    pthread_t ck;
    bool ck_started;
};

static inline void tj_put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static inline void tj_put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static inline uint32_t tj_get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t tj_get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The control file: the newest valid slot (false with a reason in err), or a new one. */
bool taskjournal_ctl_read(struct taskjournal *j, uint64_t *ckpt, char *err, size_t errlen);
bool taskjournal_ctl_write(struct taskjournal *j, uint64_t ckpt);
/* Reads every segment, applies the records after the checkpoint in order, makes them durable
 * and empties the journal; sets the next sequence number. Caller holds the lock. */
bool taskjournal_replay(struct taskjournal *j, char *err, size_t errlen);
/* The highest sequence number of a whole record in the segments (0: none), for a reader that
 * waits for a running server's checkpoint to cover it; false with err on a read error. */
bool taskjournal_scan_max(struct taskjournal *j, uint64_t *maxseq, char *err, size_t errlen);

#endif
