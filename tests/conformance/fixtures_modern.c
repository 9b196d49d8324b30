/* fixtures_modern.c — the conformance fixtures of MCP 2026-07-28: the input-required (MRTR)
 * tools and prompt, and the diagnostic tools the server-stateless scenario calls, answering
 * as the suite's reference server does (same keys, same texts). They go through the engine's
 * MRTR interface: mcp_call_input_required, mcp_call_input_responses, mcp_call_input_state
 * (sealed by the engine, so the tampered-state scenario is refused before the handler). */
#include "fixtures.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "mem.h"

static void reply_text(struct mcp_call *c, const char *text)
{
    mcp_call_result_take(c, json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text",
                                      text));
}

static json_t *elicit(const char *message, const char *field, const char *type)
{
    return json_pack("{s:s, s:{s:s, s:{s:s, s:{s:{s:s}}, s:[s]}}}", "method",
                     "elicitation/create", "params", "message", message, "requestedSchema",
                     "type", "object", "properties", field, "type", type, "required", field);
}

static json_t *sample(const char *text, int max_tokens)
{
    return json_pack("{s:s, s:{s:[{s:s, s:{s:s, s:s}}], s:i}}", "method",
                     "sampling/createMessage", "params", "messages", "role", "user", "content",
                     "type", "text", "text", text, "maxTokens", max_tokens);
}

static json_t *list_roots(void)
{
    return json_pack("{s:s, s:{}}", "method", "roots/list", "params");
}

/* The answer under key, or NULL. */
static json_t *response(struct mcp_call *c, const char *key)
{
    return json_object_get(mcp_call_input_responses(c), key);
}

/* An elicitation answer's content field, as the reference reads it. */
static const char *answered(struct mcp_call *c, const char *key, const char *field)
{
    const char *v = json_string_value(
        json_object_get(json_object_get(response(c, key), "content"), field));
    return v ? v : "unknown";
}

static const char *state_str(struct mcp_call *c, const char *field)
{
    return json_string_value(json_object_get(mcp_call_input_state(c), field));
}

static void missing_capability(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    if (!mcp_call_client_supports(c, "sampling")) {
        mcp_call_require_capability(c, json_pack("{s:{}}", "sampling"), "sampling");
        return;
    }
    reply_text(c, "Success");
}

static void mrtr_elicitation(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    if (response(c, "user_name")) {
        char *text = xasprintf("Hello, %s!", answered(c, "user_name", "name"));
        reply_text(c, text);
        free(text);
        return;
    }
    mcp_call_input_required(
        c, json_pack("{s:o}", "user_name", elicit("What is your name?", "name", "string")), NULL);
}

static void mrtr_sampling(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    json_t *r = response(c, "sample_request");
    if (r) {
        const char *t = json_string_value(json_object_get(json_object_get(r, "content"), "text"));
        char *text = xasprintf("Sampling result: %s", t ? t : "no response");
        reply_text(c, text);
        free(text);
        return;
    }
    mcp_call_input_required(
        c, json_pack("{s:o}", "sample_request", sample("What is the capital of France?", 100)),
        NULL);
}

static void mrtr_roots(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    json_t *r = response(c, "roots_request");
    if (r) {
        json_t *roots = json_object_get(r, "roots");
        char text[64];
        snprintf(text, sizeof text, "Found %zu root(s)",
                 json_is_array(roots) ? json_array_size(roots) : 0);
        reply_text(c, text);
        return;
    }
    mcp_call_input_required(c, json_pack("{s:o}", "roots_request", list_roots()), NULL);
}

static void mrtr_request_state(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    const char *kind = state_str(c, "kind");
    json_t *ok = json_object_get(json_object_get(response(c, "confirm"), "content"), "ok");
    if (kind && strcmp(kind, "request-state") == 0 && json_is_true(ok)) {
        reply_text(c, "state-ok: requestState validated");
        return;
    }
    mcp_call_input_required(c, json_pack("{s:o}", "confirm", elicit("Please confirm", "ok",
                                                                    "boolean")),
                            json_pack("{s:s}", "kind", "request-state"));
}

static void mrtr_multiple(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    const char *kind = state_str(c, "kind");
    json_t *greeting = response(c, "greeting");
    json_t *roots = json_object_get(response(c, "client_roots"), "roots");
    if (kind && strcmp(kind, "multiple-inputs") == 0 && response(c, "user_name") && greeting &&
        response(c, "client_roots")) {
        const char *g =
            json_string_value(json_object_get(json_object_get(greeting, "content"), "text"));
        char *text = xasprintf("Name: %s; Greeting: %s; Roots: %zu",
                               answered(c, "user_name", "name"), g ? g : "Hello there!",
                               json_is_array(roots) ? json_array_size(roots) : 0);
        reply_text(c, text);
        free(text);
        return;
    }
    mcp_call_input_required(
        c,
        json_pack("{s:o, s:o, s:o}", "user_name", elicit("What is your name?", "name", "string"),
                  "greeting", sample("Generate a greeting", 50), "client_roots", list_roots()),
        json_pack("{s:s}", "kind", "multiple-inputs"));
}

static void mrtr_multi_round(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    json_int_t round = json_integer_value(json_object_get(mcp_call_input_state(c), "round"));
    if (round == 1 && response(c, "step1")) {
        mcp_call_input_required(
            c,
            json_pack("{s:o}", "step2",
                      elicit("Step 2: What is your favorite color?", "color", "string")),
            json_pack("{s:i, s:s}", "round", 2, "name", answered(c, "step1", "name")));
        return;
    }
    if (round == 2 && response(c, "step2")) {
        const char *name = state_str(c, "name");
        char *text = xasprintf("Multi-round complete for %s who likes %s", name ? name : "friend",
                               answered(c, "step2", "color"));
        reply_text(c, text);
        free(text);
        return;
    }
    mcp_call_input_required(
        c, json_pack("{s:o}", "step1", elicit("Step 1: What is your name?", "name", "string")),
        json_pack("{s:i}", "round", 1));
}

static void mrtr_tampered(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    const char *kind = state_str(c, "kind");
    if (kind && strcmp(kind, "tamper-test") == 0 && response(c, "confirm")) {
        reply_text(c, "integrity-ok: state verified");
        return;
    }
    mcp_call_input_required(c, json_pack("{s:o}", "confirm", elicit("Please confirm", "ok",
                                                                    "boolean")),
                            json_pack("{s:s}", "kind", "tamper-test"));
}

static void mrtr_capabilities(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    json_t *got = mcp_call_input_responses(c);
    if (json_object_size(got) > 0) {
        char keys[256] = "";
        const char *k;
        json_t *v;
        json_object_foreach(got, k, v)
        {
            (void)v;
            size_t n = strlen(keys);
            snprintf(keys + n, sizeof keys - n, "%s%.40s", n ? "," : "", k);
        }
        char *text = xasprintf("capabilities-ok: received %s", keys);
        reply_text(c, text);
        free(text);
        return;
    }
    json_t *requests = json_object();
    if (mcp_call_client_supports(c, "elicitation"))
        json_object_set_new(requests, "elicit_input",
                            elicit("Elicitation input", "value", "string"));
    if (mcp_call_client_supports(c, "sampling"))
        json_object_set_new(requests, "sample_input", sample("Sample request", 50));
    if (json_object_size(requests) == 0) {
        json_decref(requests);
        reply_text(c, "No supported capabilities declared");
        return;
    }
    mcp_call_input_required(c, requests, json_pack("{s:s}", "kind", "capabilities-test"));
}

/* The response stream carries this call's notifications and its result, never a request. */
static void streaming_elicitation(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    mcp_call_progress(c, 50, 100, NULL);
    reply_text(c, "Streaming complete");
}

/* The engine drops the message unless the request's _meta asked for a log level. */
static void logging_tool(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    mcp_call_log(c, "info", NULL, json_string("Diagnostic trace logging activated"));
    reply_text(c, "Logging evaluated");
}

/* A tool whose region argument a 2026-07-28 client mirrors in an Mcp-Param-Region header
 * (x-mcp-header); the engine checks the header against the body before this runs. */
static void header_param(struct mcp_call *c, json_t *args, void *arg)
{
    (void)arg;
    const char *region = json_string_value(json_object_get(args, "region"));
    char *text = xasprintf("Region: %s", region ? region : "none");
    reply_text(c, text);
    free(text);
}

static void mrtr_prompt(struct mcp_call *c, json_t *args, void *arg)
{
    (void)args, (void)arg;
    if (response(c, "user_context")) {
        char *text = xasprintf("Prompt with context: %s", answered(c, "user_context", "context"));
        mcp_call_result_take(c, json_pack("{s:[{s:s, s:{s:s, s:s}}]}", "messages", "role", "user",
                                          "content", "type", "text", "text", text));
        free(text);
        return;
    }
    mcp_call_input_required(
        c,
        json_pack("{s:o}", "user_context",
                  elicit("What context should the prompt use?", "context", "string")),
        NULL);
}

static void tool(struct mcp_server *m, const char *name, const char *desc, mcp_handler *h)
{
    mcp_add_tool(m, &(struct mcp_tool_def){
                        .name = name, .description = desc,
                        .input_schema = json_pack("{s:s, s:{}}", "type", "object", "properties"),
                        .handler = h});
}

void fixtures_modern_register(struct mcp_server *m)
{
    tool(m, "test_missing_capability", "Test tool requiring sampling", missing_capability);
    tool(m, "test_input_required_result_elicitation",
         "MRTR: returns InputRequiredResult with elicitation request", mrtr_elicitation);
    tool(m, "test_input_required_result_sampling",
         "MRTR: returns InputRequiredResult with sampling request", mrtr_sampling);
    tool(m, "test_input_required_result_list_roots",
         "MRTR: returns InputRequiredResult with roots/list request", mrtr_roots);
    tool(m, "test_input_required_result_request_state",
         "MRTR: returns InputRequiredResult with requestState", mrtr_request_state);
    tool(m, "test_input_required_result_multiple_inputs",
         "MRTR: returns InputRequiredResult with multiple input requests", mrtr_multiple);
    tool(m, "test_input_required_result_multi_round", "MRTR: multi-round InputRequiredResult "
                                                      "workflow",
         mrtr_multi_round);
    tool(m, "test_input_required_result_tampered_state",
         "MRTR: HMAC-signed requestState integrity test", mrtr_tampered);
    tool(m, "test_input_required_result_capabilities",
         "MRTR: respects client capabilities in inputRequests", mrtr_capabilities);
    tool(m, "test_streaming_elicitation", "Diagnostic tool validating response progress streams",
         streaming_elicitation);
    tool(m, "test_logging_tool", "Diagnostic logging validator tool", logging_tool);
    mcp_add_tool(m, &(struct mcp_tool_def){
                        .name = "test_header_param",
                        .description = "Echoes a region mirrored in the Mcp-Param-Region header",
                        .input_schema = json_pack("{s:s, s:{s:{s:s, s:s}}, s:[s]}", "type",
                                                  "object", "properties", "region", "type",
                                                  "string", "x-mcp-header", "Region", "required",
                                                  "region"),
                        .handler = header_param});
    mcp_add_prompt(m, &(struct mcp_prompt_def){
                          .name = "test_input_required_result_prompt",
                          .description = "MRTR: prompt that requires elicitation input",
                          .handler = mrtr_prompt});
}
