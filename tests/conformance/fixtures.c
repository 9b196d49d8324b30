/* fixtures.c — conformance fixtures on top of the engine's provider interface. The deferred
 * ones (logging, progress, sampling, elicitation, reconnection) exercise "finish later". */
#include "fixtures.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "mcp.h"
#include "mem.h"

/* {"error": code, "message": text} with isError: true (the bridge's tool errors have this shape). */
static void bridge_tool_error(struct mcp_call *c, const char *code, const char *msg)
{
    json_t *sc = json_pack("{s:s, s:s}", "error", code, "message", msg);
    char *text = json_dumps(sc, JSON_COMPACT);
    json_t *result = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text",
                               text, "structuredContent", sc, "isError", 1);
    free(text);
    mcp_call_result_take(c, result);
}

/* 1x1 red PNG and a minimal WAV, as the reference server sends them. */
#define TEST_PNG "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
#define TEST_WAV "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

static struct loop *loop;
static char static_text[] = "This is the content of the static text resource.";
static char watched_text[] = "Watched resource content";

static json_t *text_block(const char *text)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", text);
}

static void reply_text(struct mcp_call *c, const char *text)
{
    mcp_call_result_take(c, json_pack("{s:[o]}", "content", text_block(text)));
}

static json_t *empty_schema(void)
{
    return json_pack("{s:s, s:{}}", "type", "object", "properties");
}

/* ---- immediate tools ---- */

static void simple_text(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    reply_text(c, "This is a simple text response for testing.");
}

static void image_content(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    mcp_call_result_take(c, json_pack("{s:[{s:s, s:s, s:s}]}", "content", "type", "image", "data",
                                      TEST_PNG, "mimeType", "image/png"));
}

static void audio_content(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    mcp_call_result_take(c, json_pack("{s:[{s:s, s:s, s:s}]}", "content", "type", "audio", "data",
                                      TEST_WAV, "mimeType", "audio/wav"));
}

static void embedded_resource(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    mcp_call_result_take(
        c, json_pack("{s:[{s:s, s:{s:s, s:s, s:s}}]}", "content", "type", "resource", "resource",
                     "uri", "test://embedded-resource", "mimeType", "text/plain", "text",
                     "This is an embedded resource content."));
}

static void multiple_types(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    mcp_call_result_take(
        c, json_pack("{s:[o, {s:s, s:s, s:s}, {s:s, s:{s:s, s:s, s:s}}]}", "content",
                     text_block("Multiple content types test:"), "type", "image", "data", TEST_PNG,
                     "mimeType", "image/png", "type", "resource", "resource", "uri",
                     "test://mixed-content-resource", "mimeType", "application/json", "text",
                     "{\"test\":\"data\",\"value\":123}"));
}

static void error_handling(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    mcp_call_result_take(c, json_pack("{s:[o], s:b}", "content",
                                      text_block("This tool intentionally returns an error for "
                                                 "testing"),
                                      "isError", 1));
}

/* The reference's schema: $schema, $defs with an $anchor, a $ref, composition (allOf/anyOf)
 * and conditional (if/then/else) keywords, which a server must pass through untouched. */
#define SCHEMA_2020_12                                                                         \
    "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","       \
    "\"$defs\":{\"address\":{\"$anchor\":\"addressDef\",\"type\":\"object\",\"properties\":"    \
    "{\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"                     \
    "\"properties\":{\"name\":{\"type\":\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"},"  \
    "\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},"                   \
    "\"phone\":{\"type\":\"string\"},\"email\":{\"type\":\"string\"}},"                         \
    "\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],"          \
    "\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},"                           \
    "\"required\":[\"contactMethod\"]},\"then\":{\"required\":[\"phone\"]},"                       \
    "\"else\":{\"required\":[\"email\"]},\"additionalProperties\":false}"

static void schema_2020_12(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    char *dump = json_dumps(args, JSON_COMPACT | JSON_PRESERVE_ORDER);
    char *text = xasprintf("JSON Schema 2020-12 tool called with: %s", dump);
    reply_text(c, text);
    free(text);
    free(dump);
}

/* ---- deferred tools: a few steps 50 ms apart ---- */

struct steps {
    struct mcp_call *call;
    struct loop_timer *timer;
    int step;
    void (*run)(struct steps *s);
};

static void steps_cancel(struct mcp_call *c, void *arg)
{
    struct steps *s = arg;
    (void)c;
    loop_timer_cancel(s->timer);
    free(s);
}

static void steps_tick(struct loop *l, void *arg)
{
    struct steps *s = arg;
    (void)l;
    s->timer = NULL;
    s->run(s);
}

/* Runs the next step after ms, or finishes: run() frees s when it answers. */
static void steps_later(struct steps *s, unsigned ms)
{
    s->step++;
    s->timer = loop_timer_add(loop, ms, steps_tick, s);
}

static void steps_start(struct mcp_call *c, void (*run)(struct steps *))
{
    struct steps *s = xcalloc(1, sizeof *s);
    s->call = c;
    s->run = run;
    mcp_call_on_cancel(c, steps_cancel, s);
    run(s);
}

/* How many deferred tools ran to their answer (test://stats), whether or not a client was still
 * there to take it. */
static json_int_t steps_completed;

static void steps_done(struct steps *s, const char *text)
{
    struct mcp_call *c = s->call;
    free(s);
    steps_completed++;
    reply_text(c, text);
}

static void logging_run(struct steps *s)
{
    static const char *msgs[] = {"Tool execution started", "Tool processing data",
                                 "Tool execution completed"};
    mcp_call_log(s->call, "info", "conformance-test-server", json_string(msgs[s->step]));
    if (s->step < 2)
        steps_later(s, 50);
    else
        steps_done(s, "Tool with logging executed successfully");
}

static void with_logging(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    steps_start(c, logging_run);
}

static void progress_run(struct steps *s)
{
    char msg[64];
    int p = s->step * 50;
    snprintf(msg, sizeof msg, "Completed step %d of 100", p);
    mcp_call_progress(s->call, p, 100, msg);
    if (s->step < 2) {
        steps_later(s, 50);
        return;
    }
    /* The reference answers with the token it was given. */
    json_t *tok = mcp_call_progress_token(s->call);
    char *text = json_is_string(tok) ? xstrdup(json_string_value(tok))
                                     : xasprintf("%lld", (long long)json_integer_value(tok));
    steps_done(s, text);
    free(text);
}

static void with_progress(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    steps_start(c, progress_run);
}

static void reconnection_run(struct steps *s)
{
    if (s->step == 0) {
        /* Close the POST stream mid-call; the answer waits for the client's GET resume. */
        mcp_call_close_stream(s->call);
        steps_later(s, 100);
        return;
    }
    steps_done(s, "Reconnection test completed successfully. If you received this, the client "
                  "properly reconnected after stream closure.");
}

static void reconnection(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    steps_start(c, reconnection_run);
}

/* test_wait(ms): a long call for the engine's own tests (cancel, hang-up, drain). Counts how
 * calls ended so a test can tell that cancelled work really stopped. */
static json_int_t waits_completed, waits_cancelled;

struct wait {
    struct mcp_call *call;
    struct loop_timer *timer;
};

static void wait_cancel(struct mcp_call *c, void *arg)
{
    struct wait *w = arg;
    (void)c;
    loop_timer_cancel(w->timer);
    waits_cancelled++;
    free(w);
}

static void wait_done(struct loop *l, void *arg)
{
    struct wait *w = arg;
    struct mcp_call *c = w->call;
    (void)l;
    free(w);
    waits_completed++;
    reply_text(c, "waited");
}

static void wait_tool(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    json_t *ms = json_object_get(args, "ms");
    if (!json_is_integer(ms) || json_integer_value(ms) < 0 || json_integer_value(ms) > 600000) {
        bridge_tool_error(c, "invalid_arguments", "ms must be an integer from 0 to 600000");
        return;
    }
    struct wait *w = xcalloc(1, sizeof *w);
    w->call = c;
    w->timer = loop_timer_add(loop, (uint64_t)json_integer_value(ms), wait_done, w);
    mcp_call_on_cancel(c, wait_cancel, w);
}

static void read_stats(struct mcp_call *c, json_t *params, void *arg)
{
    (void)params, (void)arg;
    json_t *stats = json_pack("{s:I, s:I, s:I}", "completed", waits_completed, "cancelled",
                              waits_cancelled, "steps_completed", steps_completed);
    char *text = json_dumps(stats, JSON_COMPACT);
    mcp_call_result_take(c, json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", "test://stats",
                                      "mimeType", "application/json", "text", text));
    free(text);
    json_decref(stats);
}

/* ---- tools that ask the client ---- */

static void sampling_reply(struct mcp_call *c, json_t *result, json_t *error, void *arg)
{
    (void)arg;
    if (result == NULL) {
        const char *m = json_string_value(json_object_get(error, "message"));
        char *text = xasprintf("Sampling not supported or error: %s", m ? m : "no answer");
        reply_text(c, text);
        free(text);
        return;
    }
    const char *t = json_string_value(json_object_get(json_object_get(result, "content"), "text"));
    char *text = xasprintf("LLM response: %s", t ? t : "No response");
    reply_text(c, text);
    free(text);
}

static void sampling(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    json_t *prompt = json_object_get(args, "prompt");
    if (!json_is_string(prompt)) {
        bridge_tool_error(c, "invalid_arguments", "prompt must be a string");
        return;
    }
    json_t *params = json_pack("{s:[{s:s, s:{s:s, s:O}}], s:i}", "messages", "role", "user",
                               "content", "type", "text", "text", prompt, "maxTokens", 100);
    if (!mcp_call_request(c, "sampling/createMessage", params, sampling_reply, NULL))
        reply_text(c, "Sampling not supported or error: the client cannot take requests");
}

static const char *const elicit_prefix[] = {"User response", "Elicitation completed"};

static void elicit_reply(struct mcp_call *c, json_t *result, json_t *error, void *arg)
{
    const char *prefix = elicit_prefix[(uintptr_t)arg];
    if (result == NULL) {
        const char *m = json_string_value(json_object_get(error, "message"));
        char *text = xasprintf("Elicitation not supported or error: %s", m ? m : "no answer");
        reply_text(c, text);
        free(text);
        return;
    }
    json_t *content = json_object_get(result, "content");
    char *dump = json_dumps(content ? content : json_object(), JSON_COMPACT | JSON_ENCODE_ANY);
    const char *action = json_string_value(json_object_get(result, "action"));
    char *text = xasprintf("%s: action=%s, content=%s", prefix, action ? action : "", dump);
    reply_text(c, text);
    free(text);
    free(dump);
}

static void elicit(struct mcp_call *c, const char *message, json_t *schema, uintptr_t prefix)
{
    json_t *params = json_pack("{s:s, s:s, s:o}", "mode", "form", "message", message,
                               "requestedSchema", schema);
    if (!mcp_call_request(c, "elicitation/create", params, elicit_reply, (void *)prefix))
        reply_text(c, "Elicitation not supported or error: the client cannot take requests");
}

static void elicitation(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    json_t *message = json_object_get(args, "message");
    if (!json_is_string(message)) {
        bridge_tool_error(c, "invalid_arguments", "message must be a string");
        return;
    }
    elicit(c, json_string_value(message),
           json_pack("{s:s, s:{s:{s:s, s:s}}, s:[s]}", "type", "object", "properties", "response",
                     "type", "string", "description", "User's response", "required", "response"),
           0);
}

static void elicitation_defaults(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    json_t *props = json_pack(
        "{s:{s:s, s:s, s:s}, s:{s:s, s:s, s:i}, s:{s:s, s:s, s:f}, s:{s:s, s:s, s:[s,s,s], s:s},"
        " s:{s:s, s:s, s:b}}",
        "name", "type", "string", "description", "User name", "default", "John Doe", "age", "type",
        "integer", "description", "User age", "default", 30, "score", "type", "number",
        "description", "User score", "default", 95.5, "status", "type", "string", "description",
        "User status", "enum", "active", "inactive", "pending", "default", "active", "verified",
        "type", "boolean", "description", "Verification status", "default", 1);
    elicit(c, "Please review and update the form fields with defaults",
           json_pack("{s:s, s:o, s:[]}", "type", "object", "properties", props, "required"),
           1);
}

static void elicitation_enums(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    json_t *props = json_object();
    json_object_set_new(props, "untitledSingle",
                        json_pack("{s:s, s:s, s:[s,s,s]}", "type", "string", "description",
                                  "Select one option", "enum", "option1", "option2", "option3"));
    json_object_set_new(
        props, "titledSingle",
        json_pack("{s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]}", "type", "string",
                  "description", "Select one option with titles", "oneOf", "const", "value1",
                  "title", "First Option", "const", "value2", "title", "Second Option", "const",
                  "value3", "title", "Third Option"));
    json_object_set_new(props, "legacyEnum",
                        json_pack("{s:s, s:s, s:[s,s,s], s:[s,s,s]}", "type", "string",
                                  "description", "Select one option (legacy)", "enum", "opt1",
                                  "opt2", "opt3", "enumNames", "Option One", "Option Two",
                                  "Option Three"));
    json_object_set_new(props, "untitledMulti",
                        json_pack("{s:s, s:s, s:i, s:i, s:{s:s, s:[s,s,s]}}", "type", "array",
                                  "description", "Select multiple options", "minItems", 1,
                                  "maxItems", 3, "items", "type", "string", "enum", "option1",
                                  "option2", "option3"));
    json_object_set_new(
        props, "titledMulti",
        json_pack("{s:s, s:s, s:i, s:i, s:{s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]}}", "type",
                  "array", "description", "Select multiple options with titles", "minItems", 1,
                  "maxItems", 3, "items", "anyOf", "const", "value1", "title", "First Choice",
                  "const", "value2", "title", "Second Choice", "const", "value3", "title",
                  "Third Choice"));
    elicit(c, "Please select options from the enum fields",
           json_pack("{s:s, s:o, s:[]}", "type", "object", "properties", props, "required"),
           1);
}

/* ---- resources ---- */

static void read_text(struct mcp_call *c, json_t *params, void *arg)
{
    const char *text = arg;
    const char *uri = json_string_value(json_object_get(params, "uri"));
    mcp_call_result_take(c, json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
                                      "text/plain", "text", text));
}

static void read_binary(struct mcp_call *c, json_t *params, void *arg)
{
    (void)arg;
    const char *uri = json_string_value(json_object_get(params, "uri"));
    mcp_call_result_take(c, json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
                                      "image/png", "blob", TEST_PNG));
}

static void read_template(struct mcp_call *c, json_t *params, void *arg)
{
    (void)arg;
    const char *uri = json_string_value(json_object_get(params, "uri"));
    const char *id = json_string_value(json_object_get(json_object_get(params, "vars"), "id"));
    char *data = xasprintf("Data for ID: %s", id);
    json_t *body = json_pack("{s:s, s:b, s:s}", "id", id, "templateTest", 1, "data", data);
    char *text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
    mcp_call_result_take(c, json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
                                      "application/json", "text", text));
    free(text);
    free(data);
    json_decref(body);
}

/* ---- prompts ---- */

static json_t *user_msg(json_t *content)
{
    return json_pack("{s:s, s:o}", "role", "user", "content", content);
}

static void prompt_simple(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    mcp_call_result_take(c, json_pack("{s:[o]}", "messages",
                                      user_msg(text_block("This is a simple prompt for testing."))));
}

static void prompt_args(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    const char *a1 = json_string_value(json_object_get(args, "arg1"));
    const char *a2 = json_string_value(json_object_get(args, "arg2"));
    if (a1 == NULL || a2 == NULL) {
        mcp_call_error(c, -32602, "Invalid params: arg1 and arg2 are required strings");
        return;
    }
    char *text = xasprintf("Prompt with arguments: arg1='%s', arg2='%s'", a1, a2);
    mcp_call_result_take(c, json_pack("{s:[o]}", "messages", user_msg(text_block(text))));
    free(text);
}

static void prompt_resource(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    const char *uri = json_string_value(json_object_get(args, "resourceUri"));
    if (uri == NULL) {
        mcp_call_error(c, -32602, "Invalid params: resourceUri is a required string");
        return;
    }
    json_t *res = json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "resource", "resource", "uri", uri,
                            "mimeType", "text/plain", "text",
                            "Embedded resource content for testing.");
    mcp_call_result_take(
        c, json_pack("{s:[o, o]}", "messages", user_msg(res),
                     user_msg(text_block("Please process the embedded resource above."))));
}

static void prompt_image(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    json_t *img = json_pack("{s:s, s:s, s:s}", "type", "image", "data", TEST_PNG, "mimeType",
                            "image/png");
    mcp_call_result_take(c, json_pack("{s:[o, o]}", "messages", user_msg(img),
                                      user_msg(text_block("Please analyze the image above."))));
}

static void complete(struct mcp_call *c, json_t *params, void *arg)
{
    (void)params, (void)arg;
    mcp_call_result_take(c, json_pack("{s:{s:[], s:i, s:b}}", "completion", "values", "total", 0,
                                      "hasMore", 0));
}

static void tool(struct mcp_server *m, const char *name, const char *desc, json_t *schema,
                 mcp_handler *h)
{
    mcp_add_tool(m, &(struct mcp_tool_def){.name = name, .description = desc,
                                           .input_schema = schema ? schema : empty_schema(),
                                           .handler = h});
}

static json_t *string_arg_schema(const char *name, const char *desc)
{
    return json_pack("{s:s, s:{s:{s:s, s:s}}, s:[s]}", "type", "object", "properties", name,
                     "type", "string", "description", desc, "required", name);
}

static json_t *prompt_arg(const char *name, const char *desc)
{
    return json_pack("{s:s, s:s, s:b}", "name", name, "description", desc, "required", 1);
}

bool fixtures_register(struct mcp_server *m, struct loop *l, void *arg)
{
    (void)arg;
    loop = l;
    tool(m, "test_simple_text", "Tests simple text content response", NULL, simple_text);
    tool(m, "test_image_content", "Tests image content response", NULL, image_content);
    tool(m, "test_audio_content", "Tests audio content response", NULL, audio_content);
    tool(m, "test_embedded_resource", "Tests embedded resource content response", NULL,
         embedded_resource);
    tool(m, "test_multiple_content_types",
         "Tests response with multiple content types (text, image, resource)", NULL,
         multiple_types);
    tool(m, "test_tool_with_logging", "Tests tool that emits log messages during execution", NULL,
         with_logging);
    tool(m, "test_tool_with_progress", "Tests tool that reports progress notifications", NULL,
         with_progress);
    tool(m, "test_error_handling", "Tests error response handling", NULL, error_handling);
    tool(m, "test_reconnection",
         "Tests SSE stream disconnection and client reconnection (SEP-1699). Server will close "
         "the stream mid-call and send the result after client reconnects.",
         NULL, reconnection);
    tool(m, "test_sampling", "Tests server-initiated sampling (LLM completion request)",
         string_arg_schema("prompt", "The prompt to send to the LLM"), sampling);
    tool(m, "test_elicitation", "Tests server-initiated elicitation (user input request)",
         string_arg_schema("message", "The message to show the user"), elicitation);
    tool(m, "test_elicitation_sep1034_defaults",
         "Tests elicitation with default values per SEP-1034", NULL, elicitation_defaults);
    tool(m, "test_elicitation_sep1330_enums",
         "Tests elicitation with enum schema improvements per SEP-1330", NULL, elicitation_enums);
    tool(m, "json_schema_2020_12_tool",
         "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
         json_loads(SCHEMA_2020_12, 0, NULL), schema_2020_12);

    tool(m, "test_wait", "Waits ms milliseconds, then answers; stops at once when cancelled",
         json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "ms", "type",
                   "integer", "required", "ms"),
         wait_tool);
    mcp_add_resource(m, &(struct mcp_resource_def){
        .uri = "test://stats", .name = "stats", .description = "How test_wait calls ended, how many deferred tools finished",
        .mime_type = "application/json", .handler = read_stats});
    mcp_add_resource(m, &(struct mcp_resource_def){
        .uri = "test://static-text", .name = "static-text", .title = "Static Text Resource",
        .description = "A static text resource for testing", .mime_type = "text/plain",
        .handler = read_text, .arg = static_text});
    mcp_add_resource(m, &(struct mcp_resource_def){
        .uri = "test://static-binary", .name = "static-binary", .title = "Static Binary Resource",
        .description = "A static binary resource (image) for testing", .mime_type = "image/png",
        .handler = read_binary});
    mcp_add_resource(m, &(struct mcp_resource_def){
        .uri = "test://watched-resource", .name = "watched-resource", .title = "Watched Resource",
        .description = "A resource that auto-updates every 3 seconds", .mime_type = "text/plain",
        .handler = read_text, .arg = watched_text});
    mcp_add_template(m, &(struct mcp_template_def){
        .uri_template = "test://template/{id}/data", .name = "template",
        .title = "Resource Template", .description = "A resource template with parameter "
                                                     "substitution",
        .mime_type = "application/json", .handler = read_template});

    mcp_add_prompt(m, &(struct mcp_prompt_def){.name = "test_simple_prompt",
                                               .title = "Simple Test Prompt",
                                               .description = "A simple prompt without arguments",
                                               .handler = prompt_simple});
    mcp_add_prompt(m, &(struct mcp_prompt_def){
        .name = "test_prompt_with_arguments", .title = "Prompt With Arguments",
        .description = "A prompt with required arguments",
        .arguments = json_pack("[o, o]", prompt_arg("arg1", "First test argument"),
                               prompt_arg("arg2", "Second test argument")),
        .handler = prompt_args});
    mcp_add_prompt(m, &(struct mcp_prompt_def){
        .name = "test_prompt_with_embedded_resource", .title = "Prompt With Embedded Resource",
        .description = "A prompt that includes an embedded resource",
        .arguments = json_pack("[o]", prompt_arg("resourceUri", "URI of the resource to embed")),
        .handler = prompt_resource});
    mcp_add_prompt(m, &(struct mcp_prompt_def){.name = "test_prompt_with_image",
                                               .title = "Prompt With Image",
                                               .description = "A prompt that includes image "
                                                              "content",
                                               .handler = prompt_image});
    mcp_set_completion(m, complete, NULL);
    fixtures_modern_register(m);
    fixtures_tasks_register(m, l);
    return true;
}

void fixtures_teardown(void *arg)
{
    (void)arg;
    fixtures_tasks_free();
}
