/* fuzz_jrpc.c — libFuzzer target for jrpc.h: parse a body, classify each message, key its id,
 * build the replies (and a request / notification echo) from what was classified, dump them and
 * check they read back. Invariants the engine relies on are checked; a violation aborts.
 *
 * Each body is also read through metacache_parse (twice, so the second reuses the cached
 * _meta): it must give exactly what jrpc_parse gives, error code and message included.
 *
 * FUZZ_JRPC_SKIP_PARSE_MSG=1 in the environment skips the check that a parse error's message
 * is valid UTF-8 (a known bug: see the check), so the rest can be fuzzed until it is fixed. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "jrpc.h"
#include "metacache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Dumps m, reads it back and checks the copy is equal with the same id; frees m. */
static void dump_and_check(json_t *m, json_t *id)
{
    CHECK(m != NULL);
    CHECK(json_is_object(m));
    json_t *v = json_object_get(m, "jsonrpc");
    CHECK(json_is_string(v) && strcmp(json_string_value(v), "2.0") == 0);
    char *text = json_dumps(m, JSON_COMPACT);
    CHECK(text != NULL);
    json_error_t je;
    /* As jrpc_parse reads: a "\u0000" in a string value is valid JSON (params may hold one). */
    json_t *back = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    CHECK(back != NULL);
    CHECK(json_equal(back, m));
    if (id != NULL)
        CHECK(json_equal(json_object_get(back, "id"), id));
    json_decref(back);
    free(text);
    json_decref(m);
}

static void check_id_key(json_t *id)
{
    char big[512], small[8];
    memset(big, 'Z', sizeof big);
    bool ok = jrpc_id_key(id, big, sizeof big);
    if (id == NULL || !(json_is_string(id) || json_is_integer(id))) {
        CHECK(!ok);
        return;
    }
    if (ok) {
        CHECK(memchr(big, '\0', sizeof big) != NULL);
        CHECK((json_is_string(id) && strncmp(big, "s:", 2) == 0) ||
              (json_is_integer(id) && strncmp(big, "i:", 2) == 0));
        if (json_is_integer(id)) {
            char want[64];
            snprintf(want, sizeof want, "i:%" JSON_INTEGER_FORMAT, json_integer_value(id));
            CHECK(strcmp(big, want) == 0);
        }
    } else {
        CHECK(json_is_string(id)); /* only a long string id may not fit */
    }
    if (jrpc_id_key(id, small, sizeof small))
        CHECK(strlen(small) < sizeof small);
}

static void one(json_t *m)
{
    struct jrpc_msg msg;
    jrpc_classify(m, &msg);

    if (msg.id != NULL)
        CHECK(json_is_string(msg.id) || json_is_integer(msg.id));
    switch (msg.kind) {
    case JRPC_REQUEST:
        CHECK(msg.id != NULL && msg.method != NULL && msg.method[0] != '\0');
        CHECK(msg.params == NULL || json_is_object(msg.params));
        CHECK(msg.result == NULL && msg.error == NULL);
        break;
    case JRPC_NOTIFICATION:
        CHECK(msg.id == NULL && json_object_get(m, "id") == NULL);
        CHECK(msg.method != NULL && msg.method[0] != '\0');
        CHECK(msg.params == NULL || json_is_object(msg.params));
        break;
    case JRPC_RESPONSE:
        CHECK(msg.id != NULL && msg.method == NULL);
        CHECK((msg.result != NULL) != (msg.error != NULL));
        CHECK(msg.error == NULL || json_is_object(msg.error));
        break;
    case JRPC_INVALID:
        CHECK(msg.why.code == JRPC_INVALID_REQUEST || msg.why.code == JRPC_INVALID_PARAMS);
        CHECK(memchr(msg.why.msg, '\0', sizeof msg.why.msg) != NULL && msg.why.msg[0] != '\0');
        break;
    default:
        CHECK(!"unknown kind");
    }

    check_id_key(msg.id);

    /* The replies the engine would send. */
    if (msg.id != NULL) {
        dump_and_check(jrpc_result(msg.id, json_pack("{s:b}", "ok", 1)), msg.id);
        dump_and_check(jrpc_error(msg.id, JRPC_METHOD_NOT_FOUND, "Method not found"), msg.id);
    }
    if (msg.kind == JRPC_INVALID) {
        json_t *e = jrpc_error(msg.id, msg.why.code, msg.why.msg);
        CHECK(e != NULL);
        json_t *id = json_object_get(e, "id");
        CHECK(msg.id != NULL ? json_equal(id, msg.id) : json_is_null(id));
        dump_and_check(e, NULL);
    }
    if (msg.method != NULL) {
        json_t *p = msg.params ? json_deep_copy(msg.params) : NULL;
        if (msg.id != NULL)
            dump_and_check(jrpc_request(msg.id, msg.method, p), msg.id);
        else
            dump_and_check(jrpc_notification(msg.method, p), NULL);
    }
}

/* metacache_parse(p) must be jrpc_parse(p): same document, or the same error. */
static void check_meta_cache(const char *p, size_t n, json_t *root, const struct jrpc_why *why)
{
    static struct meta_cache *cache;
    if (cache == NULL)
        cache = metacache_new();
    for (int round = 0; round < 2; round++) {
        struct jrpc_why w;
        memset(&w, 0, sizeof w);
        json_t *r = metacache_parse(cache, p, n, &w);
        CHECK((r == NULL) == (root == NULL));
        if (r != NULL) {
            CHECK(json_equal(r, root));
            CHECK(w.id == NULL);
        } else {
            CHECK(w.code == why->code && strcmp(w.msg, why->msg) == 0);
            CHECK((w.id == NULL) == (why->id == NULL));
            CHECK(w.id == NULL || json_equal(w.id, why->id));
        }
        json_decref(w.id);
        json_decref(r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jrpc_why why;
    memset(&why, 0, sizeof why);
    static int skip_parse_msg = -1;
    if (skip_parse_msg < 0) {
        const char *e = getenv("FUZZ_JRPC_SKIP_PARSE_MSG");
        skip_parse_msg = e != NULL && strcmp(e, "1") == 0;
    }
    json_t *root = jrpc_parse((const char *)data, size, &why);
    check_meta_cache((const char *)data, size, root, &why);
    if (root == NULL) {
        CHECK(why.code == JRPC_PARSE_ERROR || why.code == JRPC_INVALID_REQUEST);
        CHECK(memchr(why.msg, '\0', sizeof why.msg) != NULL && why.msg[0] != '\0');
        /* The engine sends why.msg back in a JSON string: it must be UTF-8, or jrpc_error gives
         * NULL (and mcp.c would dump NULL). */
        json_t *msg = json_string(why.msg);
        if (msg == NULL && skip_parse_msg) {
            json_decref(why.id);
            return 0;
        }
        CHECK(msg != NULL && "jrpc_parse: why.msg is not valid UTF-8");
        json_decref(msg);
        /* A salvaged id (a NUL in a key) is one the engine would echo: valid as an id. */
        CHECK(why.id == NULL || json_is_integer(why.id) || json_is_string(why.id));
        dump_and_check(jrpc_error(why.id, why.code, why.msg), NULL);
        json_decref(why.id);
        return 0;
    }
    CHECK(json_is_object(root) || (json_is_array(root) && json_array_size(root) > 0));
    if (json_is_array(root)) {
        size_t i;
        json_t *el;
        json_array_foreach(root, i, el) one(el);
    } else {
        one(root);
    }
    json_decref(root);
    return 0;
}
