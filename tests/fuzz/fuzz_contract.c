/* fuzz_contract.c — libFuzzer target for contract.h. The raw input (not NUL-terminated, so ASan
 * sees any read past its end) is read as an agent's answer: the result must be the documented
 * object (string status and summary, arrays of strings artifacts and next_steps, an optional
 * non-empty details object) that dumps as JSON and reads back equal, whatever bytes came in; an
 * answer without '{' is plain text and is the summary itself (or a fixed note if not UTF-8).
 *
 * The input split at NUL bytes is also rendered as a prompt: task, context, deliverable, then
 * constraints (the UTF-8 ones, as bridge.c only passes JSON strings). The prompt must start with
 * the task and hold every non-empty part in its section, and be UTF-8 when the parts are.
 *
 * The input is also read as a contract file: when contract_text_ok accepts it, it must go into
 * a JSON request (UTF-8, no NUL) as bridge.c sends it. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 12

static bool is_string_array(json_t *a)
{
    size_t i;
    json_t *v;
    if (!json_is_array(a))
        return false;
    json_array_foreach(a, i, v) if (!json_is_string(v)) return false;
    return true;
}

static bool utf8(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    json_decref(j);
    return j != NULL;
}

static void fuzz_answer(const char *text, size_t len)
{
    json_t *o = contract_parse_answer(text, len);
    CHECK(json_is_object(o));

    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) CHECK(strcmp(k, "status") == 0 || strcmp(k, "summary") == 0 ||
                                       strcmp(k, "artifacts") == 0 ||
                                       strcmp(k, "next_steps") == 0 || strcmp(k, "details") == 0);
    CHECK(json_is_string(json_object_get(o, "status")));
    CHECK(json_is_string(json_object_get(o, "summary")));
    CHECK(is_string_array(json_object_get(o, "artifacts")));
    CHECK(is_string_array(json_object_get(o, "next_steps")));
    json_t *details = json_object_get(o, "details");
    if (details != NULL) {
        CHECK(json_is_object(details) && json_object_size(details) > 0);
        CHECK(json_object_get(details, "status") == NULL);
        CHECK(json_object_get(details, "summary") == NULL);
    }

    /* It is stored as result.json and sent as structuredContent: it must dump and read back. */
    char *dump = json_dumps(o, JSON_COMPACT);
    CHECK(dump != NULL);
    json_error_t je;
    json_t *back = json_loads(dump, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &je);
    CHECK(back != NULL && json_equal(back, o));
    json_decref(back);
    free(dump);

    /* No '{': no object to find, so the text is the answer. */
    if (memchr(text, '{', len) == NULL) {
        const char *st = json_string_value(json_object_get(o, "status"));
        CHECK(strcmp(st, "completed") == 0);
        CHECK(json_array_size(json_object_get(o, "artifacts")) == 0);
        CHECK(json_array_size(json_object_get(o, "next_steps")) == 0);
        json_t *summary = json_object_get(o, "summary");
        if (utf8(text, len))
            CHECK(json_string_length(summary) == len &&
                  memcmp(json_string_value(summary), text, len) == 0);
        else
            CHECK(json_string_length(summary) > 0);
    }
    json_decref(o);
}

static void check_section(const char *prompt, const char *title, const char *part)
{
    if (part == NULL || part[0] == '\0')
        return;
    size_t n = strlen(title) + strlen(part) + 4;
    char *want = malloc(n);
    if (want == NULL)
        abort();
    snprintf(want, n, "\n%s\n%s\n", title, part);
    CHECK(strstr(prompt, want) != NULL);
    free(want);
}

static void fuzz_prompt(const char *text, size_t len)
{
    char *part[MAX_PARTS];
    size_t np = 0, off = 0;
    bool all_utf8 = true;
    while (np < MAX_PARTS) {
        const char *nul = memchr(text + off, '\0', len - off);
        size_t n = nul ? (size_t)(nul - (text + off)) : len - off;
        if (np < 3) /* task, context, deliverable; the constraints kept are UTF-8 */
            all_utf8 = all_utf8 && utf8(text + off, n);
        part[np++] = fuzz_dup(text + off, n);
        if (nul == NULL)
            break;
        off += n + 1;
    }
    const char *task = part[0];
    const char *context = np > 1 ? part[1] : NULL;
    const char *deliverable = np > 2 ? part[2] : NULL;
    json_t *constraints = NULL;
    if (np > 3) {
        constraints = json_array();
        for (size_t i = 3; i < np; i++) {
            json_t *c = json_string(part[i]);
            if (c != NULL)
                json_array_append_new(constraints, c);
        }
    }

    char *prompt = contract_prompt(task, context, deliverable, constraints);
    CHECK(prompt != NULL);
    CHECK(strncmp(prompt, "## Task\n", 8) == 0);
    CHECK(strncmp(prompt + 8, task, strlen(task)) == 0);
    CHECK(prompt[8 + strlen(task)] == '\n');
    check_section(prompt, "## Context", context);
    check_section(prompt, "## Deliverable", deliverable);
    if (json_array_size(constraints) > 0) {
        CHECK(strstr(prompt, "\n## Constraints\n") != NULL);
        size_t i;
        json_t *c;
        json_array_foreach(constraints, i, c)
        {
            size_t n = json_string_length(c) + 4;
            char *want = malloc(n);
            if (want == NULL)
                abort();
            snprintf(want, n, "- %s\n", json_string_value(c));
            CHECK(strstr(prompt, want) != NULL);
            free(want);
        }
    }
    /* The prompt goes to the agent in a JSON body. */
    if (all_utf8)
        CHECK(utf8(prompt, strlen(prompt)));
    free(prompt);
    json_decref(constraints);
    for (size_t i = 0; i < np; i++)
        free(part[i]);
}

static void fuzz_contract_file(const char *text, size_t len)
{
    char why[100];
    if (!contract_text_ok(text, len, why, sizeof why)) {
        CHECK(why[0] != '\0');
        return;
    }
    CHECK(len > 0 && len <= CONTRACT_FILE_MAX && memchr(text, '\0', len) == NULL);
    char *s = fuzz_dup(text, len);
    json_t *body = json_pack("{s:s}", "instructions", s);
    CHECK(body != NULL);
    json_decref(body);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_contract_file((const char *)data, size);
    fuzz_answer((const char *)data, size);
    fuzz_prompt((const char *)data, size);
    return 0;
}
