/* gwpin.c — the canonical hash of a tool definition and the pins/status files. An upstream
 * that changes a tool's description or schema after it was approved (a "rug pull") could turn
 * a harmless tool into an instruction to the model; hashing exactly the fields a client sees
 * makes any such change visible. Canonical JSON (sorted keys, compact) makes the hash
 * independent of the upstream's key order. The files sit beside GATEWAY_FILE, as the OAuth
 * token store's companions sit beside it: they describe that file's upstreams, and the
 * operator who owns that file (mode 600) owns them. */
#include "gwpin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomicfile.h"
#include "crypto.h"
#include "hex.h"
#include "mem.h"
#include "readfile.h"

#define PINS_FILE_MAX (16u * 1024u * 1024u)

static const char *const pinned_fields[] = {"name",        "title",        "description",
                                            "inputSchema", "outputSchema", "annotations"};
#define NFIELDS (sizeof pinned_fields / sizeof pinned_fields[0])

json_t *gw_pin_definition(json_t *tool)
{
    json_t *def = json_object();
    for (size_t i = 0; i < NFIELDS; i++) {
        json_t *v = json_object_get(tool, pinned_fields[i]);
        if (v)
            json_object_set(def, pinned_fields[i], v);
    }
    return def;
}

void gw_pin_hash(json_t *tool, char out[GW_PIN_HEX])
{
    unsigned char d[32];
    json_t *def = gw_pin_definition(tool);
    char *text = json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(def);
    crypto_sha256(text ? text : "", text ? strlen(text) : 0, d);
    free(text);
    hex_encode(d, sizeof d, out);
}

json_t *gw_pin_fields_differ(json_t *old_def, json_t *new_def)
{
    json_t *fields = json_array();
    for (size_t i = 0; i < NFIELDS; i++) {
        json_t *a = json_object_get(old_def, pinned_fields[i]);
        json_t *b = json_object_get(new_def, pinned_fields[i]);
        if ((a == NULL) != (b == NULL) || (a && !json_equal(a, b)))
            json_array_append_new(fields, json_string(pinned_fields[i]));
    }
    return fields;
}

char *gw_pins_path(const char *gateway_file)
{
    return xasprintf("%s.pins", gateway_file);
}

char *gw_pins_status_path(const char *gateway_file)
{
    return xasprintf("%s.pins-status", gateway_file);
}

static json_t *read_doc(const char *path, const char *key, bool *exists, char *err, size_t errlen)
{
    struct stat st;
    size_t len;
    json_error_t jerr;
    *exists = false;
    if (stat(path, &st) != 0 && errno == ENOENT)
        return json_pack("{s:{}}", key);
    char *text = readfile_capped(path, path, PINS_FILE_MAX, &st, &len, err, errlen);
    if (text == NULL)
        return NULL;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!json_is_object(doc) || !json_is_object(json_object_get(doc, key))) {
        snprintf(err, errlen, "%s is not a gateway %s file (line %d: %s)", path, key, jerr.line,
                 doc ? "no such object at the top" : jerr.text);
        json_decref(doc);
        return NULL;
    }
    *exists = true;
    return doc;
}

json_t *gw_pins_read(const char *path, bool *exists, char *err, size_t errlen)
{
    return read_doc(path, "pins", exists, err, errlen);
}

json_t *gw_pins_read_status(const char *path, bool *exists, char *err, size_t errlen)
{
    return read_doc(path, "tools", exists, err, errlen);
}

bool gw_pins_write(const char *path, json_t *doc, char *err, size_t errlen)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (text == NULL) {
        snprintf(err, errlen, "cannot encode %s", path);
        return false;
    }
    size_t n = strlen(text);
    text[n] = '\n';
    bool ok = atomicfile_write(path, text, n + 1, 0600, err, errlen);
    free(text);
    return ok;
}
