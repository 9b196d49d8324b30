/* gwpin.h — pinned tool definitions (the rug-pull guard). An exposed tool's
 * definition (name, title, description, inputSchema, outputSchema, annotations) is hashed as
 * canonical JSON; the hashes live in a pins file beside GATEWAY_FILE, and what the server last
 * saw (with the differences) in a status file beside it. Both JSON, mode 600, atomic. */
#ifndef HM_GWPIN_H
#define HM_GWPIN_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define GW_PIN_HEX 65 /* a SHA-256 in lowercase hex, plus the NUL */

/* The definition fields that are pinned, copied out of an upstream's tool (a new object). */
json_t *gw_pin_definition(json_t *tool);
/* SHA-256 of the definition as canonical JSON (keys sorted at every depth, compact). */
void gw_pin_hash(json_t *tool, char out[GW_PIN_HEX]);
/* Which pinned fields differ between two definitions: a new array of field names. */
json_t *gw_pin_fields_differ(json_t *old_def, json_t *new_def);

/* The pins file and the status file for a GATEWAY_FILE path (new strings). */
char *gw_pins_path(const char *gateway_file);
char *gw_pins_status_path(const char *gateway_file);

/* Reads a pins file: {"pins": {exposed name: {upstream, tool, sha256, definition}}}. A file
 * that does not exist gives *exists false and an empty object; a bad one gives NULL and err. */
json_t *gw_pins_read(const char *path, bool *exists, char *err, size_t errlen);
/* Reads a status file: {"tools": {exposed name: {upstream, tool, seen, pinned, withheld,
 * fields (when withheld), definition}}}; as gw_pins_read otherwise. */
json_t *gw_pins_read_status(const char *path, bool *exists, char *err, size_t errlen);
/* Writes doc to path (atomic, mode 600); false with err. */
bool gw_pins_write(const char *path, json_t *doc, char *err, size_t errlen);

#endif
