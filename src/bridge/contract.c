/* contract.c — prompt rendering and answer parsing. */
#include "contract.h"

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "mem.h"
#include "utf8.h"

const char contract_default[] =
    "You are a Hermes agent working on a task delegated through an MCP bridge.\n"
    "Do the task, then answer with exactly one JSON object and nothing else:\n"
    "{\"status\": \"completed\" | \"failed\" | \"needs_input\",\n"
    " \"summary\": \"what you did and found, in a few sentences\",\n"
    " \"artifacts\": [\"paths or URLs of files you produced\"],\n"
    " \"next_steps\": [\"what the caller should do next, if anything\"]}\n";

bool contract_text_ok(const char *text, size_t len, char *why, size_t whylen)
{
    size_t i = 0;
    while (i < len && strchr(" \t\r\n", text[i]) && text[i])
        i++;
    if (i == len)
        snprintf(why, whylen, "it is empty");
    else if (len > CONTRACT_FILE_MAX)
        snprintf(why, whylen, "it is larger than 256 KiB");
    else if (!utf8_valid(text, len))
        snprintf(why, whylen, "it is not UTF-8 text (or holds a NUL byte)");
    else
        return true;
    return false;
}

char *contract_prompt(const char *task, const char *context, const char *deliverable,
                      json_t *constraints)
{
    struct buf b;
    size_t i;
    json_t *c;

    buf_init(&b, 0);
    buf_appends(&b, "## Task\n");
    buf_appends(&b, task);
    buf_appends(&b, "\n");
    if (context && *context) {
        buf_appends(&b, "\n## Context\n");
        buf_appends(&b, context);
        buf_appends(&b, "\n");
    }
    if (deliverable && *deliverable) {
        buf_appends(&b, "\n## Deliverable\n");
        buf_appends(&b, deliverable);
        buf_appends(&b, "\n");
    }
    if (json_array_size(constraints) > 0) {
        buf_appends(&b, "\n## Constraints\n");
        json_array_foreach(constraints, i, c)
        {
            buf_appends(&b, "- ");
            buf_appends(&b, json_string_value(c) ? json_string_value(c) : "");
            buf_appends(&b, "\n");
        }
    }
    return buf_detach(&b, NULL);
}

static json_t *string_array(json_t *v)
{
    json_t *out = json_array();
    size_t i;
    json_t *x;
    if (json_is_string(v)) {
        json_array_append(out, v);
        return out;
    }
    json_array_foreach(v, i, x) if (json_is_string(x)) json_array_append(out, x);
    return out;
}

/* Finds a JSON object in text: the whole text, a ```json fenced block, or the outermost {...}. */
static json_t *find_object(const char *text, size_t len)
{
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_object(o))
        return o;
    json_decref(o);
    const char *fence = memmem(text, len, "```", 3);
    if (fence) {
        const char *start = fence + 3;
        const char *end = text + len;
        const char *nl = memchr(start, '\n', (size_t)(end - start));
        if (nl) {
            start = nl + 1;
            const char *close = memmem(start, (size_t)(end - start), "```", 3);
            if (close) {
                o = json_loadb(start, (size_t)(close - start), JSON_REJECT_DUPLICATES, NULL);
                if (json_is_object(o))
                    return o;
                json_decref(o);
            }
        }
    }
    const char *open = memchr(text, '{', len);
    const char *close = NULL;
    for (const char *p = text + len; p > text; p--)
        if (p[-1] == '}') {
            close = p;
            break;
        }
    if (open && close && close > open) {
        o = json_loadb(open, (size_t)(close - open), JSON_REJECT_DUPLICATES, NULL);
        if (json_is_object(o))
            return o;
        json_decref(o);
    }
    return NULL;
}

json_t *contract_parse_answer(const char *text, size_t len)
{
    json_t *o = find_object(text, len);
    json_t *out;

    if (o && (json_object_get(o, "summary") || json_object_get(o, "status"))) {
        json_t *status = json_object_get(o, "status");
        json_t *summary = json_object_get(o, "summary");
        out = json_pack("{s:s, s:s, s:o, s:o}", "status",
                        json_is_string(status) ? json_string_value(status) : "completed", "summary",
                        json_is_string(summary) ? json_string_value(summary) : "", "artifacts",
                        string_array(json_object_get(o, "artifacts")), "next_steps",
                        string_array(json_object_get(o, "next_steps")));
        json_t *details = json_deep_copy(o);
        json_object_del(details, "status");
        json_object_del(details, "summary");
        json_object_del(details, "artifacts");
        json_object_del(details, "next_steps");
        if (json_object_size(details) > 0)
            json_object_set(out, "details", details);
        json_decref(details);
        json_decref(o);
        return out;
    }
    json_decref(o);
    /* Plain text: it is the summary. Keep it valid UTF-8 whatever the agent sent. */
    json_t *s = json_stringn(text, len);
    if (s == NULL)
        s = json_string("(the agent's answer was not valid UTF-8)");
    out = json_pack("{s:s, s:o, s:[], s:[]}", "status", "completed", "summary", s, "artifacts",
                    "next_steps");
    return out;
}
