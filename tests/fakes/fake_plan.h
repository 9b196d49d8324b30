/* fake_plan.h — the fake agent's "brain": steering directives and the answer. Pure (no I/O,
 * no locks); every function may be called from any thread.
 *
 * A task text (the chat's last user/assistant message, or a run's input) may carry directives,
 * anywhere, that steer what the fake does (tests/fakes/README.md has the full table):
 *
 *   [delay=MS]      total work time in milliseconds (default 50), times --delay-scale
 *   [progress=N]    N tool calls spread over the work time (chat: hermes.tool.progress frames;
 *                   runs: tool.started/tool.completed event pairs), 0..100000
 *   [fail]          the run fails with "simulated failure"; [fail=MESSAGE] picks the message
 *   [partial]       the agent stops early: half the answer, flagged partial/truncated
 *   [text=...]      answer exactly this text (\] is a literal ], \\ a backslash, \n a newline)
 *   [json]          answer with the contract JSON inside a ```json fenced block
 *   [orphan]        runs only: the worker ends without settling the run (stays "running",
 *                   not live), so POST /stop answers 409 run_not_active
 *   [approval]      runs only: before its work the run waits for approval of a command
 *                   (status waiting_for_approval, an `approval` field, an approval.request
 *                   event) until POST /v1/runs/{id}/approval; [approval=COMMAND] names it
 *   [forget]        runs only: once a status request has shown the run ended, the agent no
 *                   longer knows it (404 run_not_found), as Hermes after its retention or a
 *                   restart
 *   [approval2=COMMAND] runs only: once the first approval is given, the run waits again, for
 *                   COMMAND (an agent asking for a second command: the bridge must not let the
 *                   operator's answer to the first reach the second)
 *
 * Without [text] or [json] the answer is the contract JSON, unfenced:
 *   {"status": "completed", "summary": "...", "artifacts": [], "next_steps": []}
 * where the summary is derived from the task (the "## Task" section of a bridge prompt if there is
 * one): a greeting is answered, simple arithmetic ("what is 6 * 7") is computed, anything else is
 * acknowledged. Brackets that are not directives are left alone. */
#ifndef FAKE_PLAN_H
#define FAKE_PLAN_H
#include <stdbool.h>
#include <stddef.h>

#define PLAN_DEFAULT_DELAY_MS 50
#define PLAN_MAX_DELAY_MS 86400000L
#define PLAN_MAX_PROGRESS 100000 /* enough to flood a client that stops reading */
#define PLAN_MAX_REPEAT 1000000

struct plan {
    long delay_ms; /* total work time, already scaled */
    int progress;  /* tool calls to simulate */
    bool fail;
    char *fail_msg; /* owned; set when fail */
    bool partial;
    bool orphan;
    bool forget;     /* [forget]: the run is forgotten once its end was shown */
    char *approval;  /* owned; [approval] / [approval=COMMAND]: the command awaiting approval */
    char *approval2; /* owned; [approval2=COMMAND]: asked once the first is approved */
    bool json_fence;
    char *text;  /* owned; [text=...] or NULL */
    long repeat; /* [repeat=N]: a [text=...] answer N times over (tests the bridge's caps) */
    char *task;  /* owned; the task with directives removed, whitespace collapsed */
};

/* Parses the directives in text (NUL-terminated, may be NULL) into p; delays are multiplied by
 * scale (>= 0). Never fails; p owns its strings until plan_cleanup. */
void plan_parse(struct plan *p, const char *text, double scale);
void plan_cleanup(struct plan *p);

/* A new string: the full answer the agent gives for p (what [partial] and [fail] cut short). */
char *plan_answer(const struct plan *p);
/* A new string: the first half of answer, cut at a character (and if possible word) boundary. */
char *plan_partial_text(const char *answer);

/* One simulated tool: name, emoji and a label/preview built from the task. */
struct plan_tool {
    const char *name;
    const char *emoji;
    char label[160];
};
void plan_tool(const struct plan *p, int index, struct plan_tool *out);

/* The timeline of a piece of work: what happens when, in milliseconds from the start. */
enum plan_step_kind { STEP_TOOL_START, STEP_TOOL_DONE, STEP_DELTA, STEP_END };
struct plan_step {
    long at_ms;
    enum plan_step_kind kind;
    int tool;        /* STEP_TOOL_*: tool index */
    size_t off, len; /* STEP_DELTA: slice of the output text */
};
/* A new array of steps (*n of them, the last one STEP_END at p->delay_ms) for a piece of work
 * whose output text is out_len bytes long (out is used to cut deltas at UTF-8 boundaries). */
struct plan_step *plan_timeline(const struct plan *p, const char *out, size_t out_len, size_t *n);

/* Rough token count of a text (about 4 bytes a token, at least 1 for non-empty text). */
long plan_tokens(const char *s);

#endif
