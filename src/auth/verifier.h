/* verifier.h — checks the owner's consent passphrase off the event loop. scrypt takes
 * about 0.1 s of CPU and 32 MiB by design; run on the loop it would stall every other client for
 * that long, so one worker thread does it and hands the answer back through an eventfd the loop
 * watches. One thread checks one passphrase at a time (memory stays bounded), and the queue is
 * capped. The loop thread owns everything except the worker's side of the queue. */
#ifndef HM_VERIFIER_H
#define HM_VERIFIER_H
#include <stdbool.h>
#include <stddef.h>

struct loop;
struct verifier;

enum verify_result { VERIFY_OK, VERIFY_WRONG, VERIFY_CANCELLED };
/* Runs on the loop thread once per submitted check; VERIFY_CANCELLED only from verifier_free,
 * to let ctx go. */
typedef void verifier_done_cb(void *ctx, enum verify_result result);

#define VERIFIER_QUEUE_MAX 16 /* checks waiting or running */

/* NULL with errno when the eventfd cannot be made. delay_ms (tests only) is added to every
 * check, on the worker, so a test can hold one open for long enough to see the loop answer
 * others meanwhile. The thread starts at the first check. */
struct verifier *verifier_new(struct loop *l, unsigned delay_ms);
/* Queues a check of pass (len bytes, copied and wiped after use) against the stored line;
 * done(ctx, ...) runs later from the loop, never from inside this call. False (done never runs)
 * when the queue is full or the thread cannot start. */
bool verifier_submit(struct verifier *v, const char *line, const char *pass, size_t len,
                     verifier_done_cb *done, void *ctx);
/* Checks submitted and not yet answered. */
size_t verifier_pending(const struct verifier *v);
/* NULL-safe. Waits for the check under way, then calls done(ctx, VERIFY_CANCELLED) for every
 * check not answered yet. */
void verifier_free(struct verifier *v);

#endif
