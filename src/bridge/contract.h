/* contract.h — what goes to the agent and how its answer is read. Pure; fuzzed.
 * The contract (HERMES_CONTRACT_PATH, or the built-in default) is sent as system instructions;
 * the task, its context, deliverable and constraints are rendered into the user prompt. The
 * agent answers with the contract's JSON {status, summary, artifacts, next_steps}, possibly in a
 * fenced code block; anything else is plain text and becomes the summary. */
#ifndef HM_CONTRACT_H
#define HM_CONTRACT_H
#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>

#define CONTRACT_FILE_MAX (256 * 1024)

extern const char contract_default[];

/* True when text (a contract file's content) can be sent to the agent: not blank, at most
 * CONTRACT_FILE_MAX bytes, UTF-8 without NUL bytes. Otherwise false with the reason in why. */
bool contract_text_ok(const char *text, size_t len, char *why, size_t whylen);

/* A new string: the prompt for a task. context, deliverable may be NULL; constraints may be
 * NULL or an array of strings. */
char *contract_prompt(const char *task, const char *context, const char *deliverable,
                      json_t *constraints);
/* A new object {status, summary, artifacts, next_steps} from the agent's answer text.
 * status defaults to "completed"; artifacts and next_steps are arrays of strings (other items
 * are dropped); extra keys the agent sent are kept under "details". */
json_t *contract_parse_answer(const char *text, size_t len);

#endif
