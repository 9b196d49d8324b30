/* runapproval.c — the agent's own approvals in the operator's queue.
 *
 * A Hermes run may stop at a dangerous command and wait for a person (status
 * waiting_for_approval, its `approval` field). Nobody watches the agent's own prompt when the
 * work came through the bridge, so a run the bridge follows that waits is put in the same queue
 * as the gateway's approve-guarded calls: `hermes-mcp approvals` lists it (principal: the caller
 * whose task it is; tool: the agent's description, masked and capped; summary: the command and
 * the run), and `approve`/`deny` (or the queue's timeout, a deny) is sent to the agent as
 * POST /v1/runs/{id}/approval {choice: once|deny}. When the run stops waiting by other means
 * (cancelled, decided at the agent, ended) the entry is withdrawn.
 *
 * The follow job's polls are what see the wait; a poll already under way when a decision was
 * sent may still show the wait it answered, so a wait is only believed from a poll sent after
 * the decision reached the agent (poll_seq, approval_fence).
 *
 * The agent's approval route names no approval, only the run: an answer meant for command A
 * would approve whatever the run waits for when it arrives. So each entry keeps a fingerprint
 * of the approval it was queued for; a poll that shows another one replaces the entry, and a
 * decision is sent only after a fresh look at the run shows that same approval still waiting. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentclient.h"
#include "agentfile.h"
#include "approvals.h"
#include "bridge_internal.h"
#include "buf.h"
#include "crypto.h"
#include "log.h"
#include "mcp.h"
#include "mem.h"
#include "strmap.h"
#include "tasks.h"

#define TOOL_TEXT_MAX 120 /* bytes of the agent's description shown as the queue's tool */

/* The caller whose task it is, as tasks list shows it (mcp_caller_label: a principal's name,
 * "#" and the start of a digest, "-" for none), from request.json; NULL while that file is
 * still being written (the run starts before it is durable): the next poll asks again. */
static char *task_principal(struct bridge *b, const char *task_id)
{
    json_t *req = NULL;
    char *who = NULL;
    char label[80];
    if (tasks_read(b->tasks, task_id, "request.json", TASKS_REQUEST_MAX, &req) == TASKS_OK) {
        mcp_caller_label(json_string_value(json_object_get(req, "owner")), label, sizeof label);
        who = xstrdup(label);
    } else if (!tasks_pending(b->tasks, task_id)) {
        who = xstrdup("-");
    }
    json_decref(req);
    return who;
}

static void decision_sent(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct job *j = arg;
    (void)r;
    j->approval_req = NULL;
    j->approval_fence = j->poll_seq; /* a poll under way now may predate the decision */
    if (res->status == 200)
        log_info("task %s: the operator's decision reached run %s", j->id, j->run_id);
    else if (res->status == 409)
        log_info("task %s: run %s no longer waited for approval when the operator decided", j->id,
                 j->run_id);
    else
        log_warn("task %s: the operator's decision could not be sent to run %s (HTTP %ld); it is "
                 "queued again if the run still waits",
                 j->id, j->run_id, res->status);
}

/* What the operator decides on: the command, its description and the choices (not the whole
 * field, which an agent may extend with something that changes at each poll). */
static void fingerprint(json_t *approval, unsigned char out[32])
{
    json_t *what = json_pack("{s:O*, s:O*, s:O*}", "command", json_object_get(approval, "command"),
                             "description", json_object_get(approval, "description"), "choices",
                             json_object_get(approval, "choices"));
    char *text = json_dumps(what, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(what);
    crypto_sha256(text ? text : "", text ? strlen(text) : 0, out);
    free(text);
}

/* The run as the agent sees it now: the decision goes only if it still waits for the approval
 * the operator was shown. */
static void decision_checked(struct agent_req *r, const struct agent_result *res, void *arg)
{
    struct job *j = arg;
    (void)r;
    j->approval_req = NULL;
    json_t *run = res->status == 200 ? json_loadb(res->body, res->body_len, 0, NULL) : NULL;
    const char *st = json_string_value(json_object_get(run, "status"));
    unsigned char now[32];
    fingerprint(json_object_get(run, "approval"), now);
    bool same = st && strcmp(st, "waiting_for_approval") == 0 &&
                crypto_equal(now, j->approval_fp, sizeof now);
    json_decref(run);
    if (!same || j->key == NULL || j->base_url == NULL) {
        j->approval_fence = j->poll_seq; /* the next poll queues what it waits for now */
        log_event(EV_APPROVAL_DECISION_UNSENT,
                  LOG_FIELDS(LF_S("task", j->id), LF_S("run", j->run_id)),
                  "task %s: the operator's decision was not sent to run %s: %s", j->id, j->run_id,
                  res->status != 200 ? "the run could not be read"
                                     : "it no longer waits for the approval that was decided");
        return;
    }
    char path[200], body[32];
    snprintf(path, sizeof path, "/v1/runs/%s/approval", j->run_id);
    snprintf(body, sizeof body, "{\"choice\":\"%s\"}", j->approval_choice);
    char *url = agentcfg_url(j->base_url, path);
    struct agent_opts o = {.method = "POST",
                           .url = url,
                           .key = j->key,
                           .body = body,
                           .body_len = strlen(body),
                           .connect_timeout_ms = CONNECT_TIMEOUT_MS,
                           .deadline_ms = 30000,
                           .max_response = RESPONSE_MAX,
                           .on_done = decision_sent,
                           .arg = j,
                           .label = j->agent,
                           .endpoint = "approval"};
    j->approval_req = agent_request(j->b->http, &o);
    free(url);
}

/* The queue's callback: approved → once; denied or timed out → deny, each sent once the run
 * is seen still waiting for the same approval. Nothing is freed here. */
static void on_decision(void *arg, enum approval_outcome outcome, const char *reason,
                        const char *decider)
{
    struct job *j = arg;
    const char *choice = outcome == APPROVAL_APPROVED ? "once" : "deny";
    j->approval_id[0] = '\0';
    if (decider && strcmp(decider, "shutdown") == 0) {
        /* The server stopping is nobody's decision: the run waits at the agent, and the next
         * process follows it and queues it again. */
        log_info("task %s: run %s still waits for approval (server stopping)", j->id, j->run_id);
        return;
    }
    log_info("task %s: run %s %s by %s%s%s", j->id, j->run_id,
             outcome == APPROVAL_APPROVED ? "approved" : "denied",
             outcome == APPROVAL_TIMED_OUT ? "the approval timeout"
             : decider                     ? decider
                                           : "-",
             reason ? ": " : "", reason ? reason : "");
    if (j->key == NULL || j->base_url == NULL)
        return; /* the agent is gone: the run is followed as before */
    snprintf(j->approval_choice, sizeof j->approval_choice, "%s", choice);
    char path[200];
    snprintf(path, sizeof path, "/v1/runs/%s", j->run_id);
    char *url = agentcfg_url(j->base_url, path);
    struct agent_opts o = {.method = "GET",
                           .url = url,
                           .key = j->key,
                           .connect_timeout_ms = CONNECT_TIMEOUT_MS,
                           .deadline_ms = 30000,
                           .max_response = RESPONSE_MAX,
                           .on_done = decision_checked,
                           .arg = j,
                           .label = j->agent,
                           .endpoint = "run"};
    j->approval_req = agent_request(j->b->http, &o);
    free(url);
}

/* A string of the agent's (NULs included: text after one is what runs too) masked, each NUL
 * shown as the two characters \0, so the operator's one line hides nothing. Caller frees. */
static char *masked_line(const json_t *v)
{
    size_t n = 0;
    char *m = approvals_mask_textn(json_string_value(v), json_string_length(v), &n);
    struct buf out;
    buf_init(&out, 0);
    for (size_t i = 0; i < n; i++)
        if (m[i] == '\0')
            buf_appends(&out, "\\0");
        else
            buf_append(&out, m + i, 1);
    free(m);
    size_t len;
    char *line = buf_detach(&out, &len);
    return line ? line : xstrdup("");
}

static void queue_approval(struct job *j, json_t *approval)
{
    struct bridge *b = j->b;
    char *who = task_principal(b, j->id);
    if (who == NULL)
        return;
    json_t *desc = json_object_get(approval, "description");
    json_t *cmd = json_object_get(approval, "command");
    json_t *shown = json_string_length(desc) ? desc : json_string_length(cmd) ? cmd : NULL;
    char tool[TOOL_TEXT_MAX + 220]; /* agent and run (up to 64 and 127 bytes), the text */
    char *text = shown ? masked_line(shown) : xstrdup("approval requested");
    if (strlen(text) > TOOL_TEXT_MAX) { /* cut on a character boundary */
        size_t cut = TOOL_TEXT_MAX - 3;
        while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
            cut--;
        memcpy(text + cut, "...", 4);
    }
    /* The run id is named here: in the arguments it would be masked (it looks random). */
    snprintf(tool, sizeof tool, "agent %s run %s: %s", j->agent, j->run_id, text);
    free(text);
    size_t n = 0;
    char *command = approvals_mask_textn(json_string_length(cmd) ? json_string_value(cmd) : "",
                                         json_string_length(cmd), &n);
    json_t *args = json_pack("{s:o, s:s}", "command", json_stringn(command, n), "task_id", j->id);
    free(command);
    const char *id = approvals_add(b->approvals, who, tool, args, on_decision, j);
    json_decref(args);
    fingerprint(approval, j->approval_fp);
    if (id) {
        snprintf(j->approval_id, sizeof j->approval_id, "%s", id);
        log_info("task %s: run %s waits for the operator's approval (id %s)", j->id, j->run_id, id);
    } else if (!j->approval_full_said) { /* said once per run, not at every poll */
        j->approval_full_said = true;
        log_warn("task %s: run %s waits for approval, but the operator's queue is full (or %s "
                 "has %u requests waiting already); it is queued once there is room",
                 j->id, j->run_id, who, APPROVALS_PER_PRINCIPAL);
    }
    free(who);
}

void runapproval_seen(struct job *j, json_t *run)
{
    const char *st = json_string_value(json_object_get(run, "status"));
    bool waits = st && strcmp(st, "waiting_for_approval") == 0;
    if (!waits) {
        if (j->approval_id[0]) { /* decided at the agent, or stopping */
            approvals_withdraw(j->b->approvals, j->approval_id);
            log_info("task %s: run %s no longer waits for approval; withdrawn", j->id, j->run_id);
            j->approval_id[0] = '\0';
        }
        return;
    }
    json_t *approval = json_object_get(run, "approval");
    if (j->approval_id[0] && !j->approval_req) {
        unsigned char now[32];
        fingerprint(approval, now);
        if (crypto_equal(now, j->approval_fp, sizeof now))
            return;
        /* Answered at the agent meanwhile, and now it asks for something else. */
        approvals_withdraw(j->b->approvals, j->approval_id);
        log_info("task %s: run %s now waits for another approval; the request for the one "
                 "before is withdrawn",
                 j->id, j->run_id);
        j->approval_id[0] = '\0';
    }
    if (j->b->approvals == NULL || j->approval_id[0] || j->approval_req ||
        j->poll_seq <= j->approval_fence)
        return;
    queue_approval(j, approval);
}

void runapproval_drop(struct job *j)
{
    agent_cancel(j->approval_req);
    j->approval_req = NULL;
    if (j->approval_id[0])
        approvals_withdraw(j->b->approvals, j->approval_id);
    j->approval_id[0] = '\0';
}

const char *runapproval_pending(struct bridge *b, const char *task_id)
{
    struct job *j = strmap_get(b->jobs, task_id);
    return j && j->approval_id[0] ? j->approval_id : NULL;
}
