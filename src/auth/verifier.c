/* verifier.c — the consent passphrase's scrypt on a work queue (see verifier.h for why): the
 * loop submits a job, the queue's worker checks it and the answer comes back on the loop. Jobs
 * are malloc'd by the loop and wiped and freed by the loop, after the callback. */
#include "verifier.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "mem.h"
#include "passphrase.h"
#include "workq.h"

struct job {
    struct workq_job q;
    char line[PASSPHRASE_LINE_MAX];
    char pass[PASSPHRASE_MAX];
    size_t len;
    bool ok;
    verifier_done_cb *done;
    void *ctx;
};

struct verifier {
    struct workq *wq;
    unsigned delay_ms;
    bool closing; /* verifier_free: every answer not given yet is VERIFY_CANCELLED */
};

static void job_free(struct job *j)
{
    explicit_bzero(j, sizeof *j);
    free(j);
}

static void nap(unsigned ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* Worker thread: one check at a time (batch_max 1), so memory stays bounded. */
static void check(struct list *batch, void *arg)
{
    const struct verifier *v = arg;
    LIST_FOREACH(node, batch)
    {
        struct job *j = list_entry(node, struct job, q.link);
        j->ok = passphrase_verify(j->line, j->pass, j->len);
        explicit_bzero(j->pass, sizeof j->pass);
        if (v->delay_ms)
            nap(v->delay_ms);
    }
}

static void checked(struct workq_job *qj, enum workq_end end, void *arg)
{
    const struct verifier *v = arg;
    struct job *j = list_entry(qj, struct job, q);
    enum verify_result r = j->ok ? VERIFY_OK : VERIFY_WRONG;
    j->done(j->ctx, end == WORKQ_DONE && !v->closing ? r : VERIFY_CANCELLED);
    job_free(j);
}

struct verifier *verifier_new(struct loop *l, unsigned delay_ms)
{
    struct verifier *v = xcalloc(1, sizeof *v);
    v->delay_ms = delay_ms;
    struct workq_opts o = {
        .name = "passphrase", .loop = l, .work = check, .done = checked, .arg = v, .batch_max = 1};
    v->wq = workq_new(&o);
    if (v->wq == NULL) {
        int e = errno;
        free(v);
        errno = e;
        return NULL;
    }
    return v;
}

bool verifier_submit(struct verifier *v, const char *line, const char *pass, size_t len,
                     verifier_done_cb *done, void *ctx)
{
    if (workq_pending(v->wq) >= VERIFIER_QUEUE_MAX || len > PASSPHRASE_MAX)
        return false;
    struct job *j = xcalloc(1, sizeof *j);
    snprintf(j->line, sizeof j->line, "%s", line);
    memcpy(j->pass, pass, len);
    j->len = len;
    j->done = done;
    j->ctx = ctx;
    if (!workq_submit(v->wq, &j->q)) {
        log_warn("oauth: cannot start the passphrase checking thread");
        job_free(j);
        return false;
    }
    return true;
}

size_t verifier_pending(const struct verifier *v)
{
    return workq_pending(v->wq);
}

void verifier_free(struct verifier *v)
{
    if (v == NULL)
        return;
    v->closing = true;
    workq_free(v->wq, WORKQ_CANCEL, 0); /* waits for the check under way */
    free(v);
}
