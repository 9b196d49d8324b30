/* taskjournal.h — the write-ahead journal of the task files: group commit for the file store.
 *
 * The task writer appends a batch's records (a task file's path and exact bytes, or its
 * removal) to the journal with one write and ONE fdatasync, then writes the files themselves
 * without fsync: a record is durable once taskjournal_append returns. A checkpoint thread makes
 * the files durable later, many at once (syncfs of TASKS_DIR's file system), and records the
 * sequence number it reached; the segment that held those records is then reused.
 *
 * On disk, in TASKS_DIR/.journal/: `control` (8 KiB: two slots 4 KiB apart, each magic, format,
 * generation, the checkpointed sequence number and a CRC-32C; the newest valid slot counts) and
 * segments `seg.0` ... of a fixed size, their blocks written with zeros once when created (so that
 * a later fdatasync flushes data only, no metadata), reused in turn. A record is a header (magic,
 * format, kind, sequence number, path length, data length, CRC-32C of all of it, the record's index
 * in its write) then the path and the bytes. Replay takes, in sequence order from the checkpoint
 * on, each record that is whole (CRC): a torn write ends it; a whole record written after a
 * missing one is an error (taskjournal_replay.c).
 *
 * A failed write or flush of the journal, or a failed checkpoint, stops the server (it exits
 * non-zero; the next start replays), as PostgreSQL does by default: nothing is written after
 * a hole, and no checkpoint is recorded over data the kernel may have dropped.
 *
 * The opener (a server) holds an flock on `control` while it runs; an offline reader
 * (taskjournal_recover) that finds it held replays nothing and reads the files, which the
 * running server wrote into the page cache. */
#ifndef HM_TASKJOURNAL_H
#define HM_TASKJOURNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TASKJOURNAL_DIR ".journal"
#define TASKJOURNAL_FORMAT 1
#define TASKJOURNAL_HDR 32 /* bytes of a record's header */

enum taskjournal_kind { TASKJOURNAL_WRITE = 1, TASKJOURNAL_REMOVE = 2 };

/* A record: the task file id/name gets data (len bytes), or is removed. */
struct taskjournal_rec {
    enum taskjournal_kind kind;
    const char *id;
    const char *name;
    const char *data;
    size_t len;
};

struct taskjournal_opts {
    size_t seg_size;        /* bytes per segment (0: 4 MiB) */
    unsigned nsegs;         /* segments (0: 4; at least 2) */
    unsigned checkpoint_ms; /* a checkpoint this long after the first write it covers (0: 1000) */
};

struct taskjournal;

/* Opens the journal of the task directory dir (a real path), replaying first what a crash left
 * (each file rewritten atomically inside its task directory, then syncfs, then the journal
 * emptied). Waits up to 2 s for the lock; NULL with *busy set if another process still holds it,
 * NULL with a reason in err if the journal cannot be read or is of a newer format. o may be NULL.
 */
struct taskjournal *taskjournal_open(const char *dir, const struct taskjournal_opts *o, bool *busy,
                                     char *err, size_t errlen);
/* A final checkpoint (waited for 10 s at most), then the lock is released. NULL-safe. */
void taskjournal_close(struct taskjournal *j);

/* For an offline reader of dir: replays what a crashed server left. 1 done (or nothing to do),
 * 0 a running server holds the journal (its files are current: read them), -1 error (err). */
int taskjournal_recover(const char *dir, char *err, size_t errlen);
/* For an offline reader that removes task files: as taskjournal_recover, but when a running
 * server holds the journal, waits (up to wait_ms) until its checkpoint covers every record in
 * the journal now, so that none replays a removed task after a crash. 1 done, 0 not in time
 * (err), -1 error (err). */
int taskjournal_settle(const char *dir, unsigned wait_ms, char *err, size_t errlen);

/* Writer thread. Whether r fits in a segment (a bigger one is written the durable way). */
bool taskjournal_fits(const struct taskjournal *j, const struct taskjournal_rec *r);
/* Journals the longest prefix of r[0..n) that fits in one segment, with one write and one
 * fdatasync (waiting first, if every segment waits for its checkpoint); returns how many
 * records are durable (0: no segment could be made, logged; a failed write or fdatasync stops
 * the server). Each must fit. */
size_t taskjournal_append(struct taskjournal *j, const struct taskjournal_rec *r, size_t n);
/* Writer thread: every record appended so far is in its file (a checkpoint may cover it). */
void taskjournal_applied(struct taskjournal *j);
/* Writer thread: returns once a checkpoint covers every record appended so far (they are all
 * applied), so that none replays over a file written another way after it. A checkpoint that
 * fails, or takes over 60 s, stops the server. */
void taskjournal_checkpoint(struct taskjournal *j);
/* Any thread: returns once a checkpoint covers every record applied so far (as above), e.g.
 * before task files are removed outside the journal. */
void taskjournal_sync(struct taskjournal *j);

/* Checkpoints done so far (tests). */
unsigned long taskjournal_checkpoints(struct taskjournal *j);

#endif
