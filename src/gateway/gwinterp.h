/* gwinterp.h — ${VAR} and ${env:VAR} placeholders in every string of a JSON document (the
 * gateway file), so secrets stay in the env file or the environment and out of the YAML. Pure. */
#ifndef HM_GWINTERP_H
#define HM_GWINTERP_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gwfile.h"

/* Replaces the placeholders in every string value under doc (keys are left alone); a value
 * put in is not scanned again. A "$" not followed by "{" is literal. Fails, with one line in
 * err naming where ("upstream NAME, key env.KEY" or "key bridge_tools...") and the variable but
 * never a value, on an unset variable, a malformed placeholder, a NUL byte in a string, or a
 * string longer than GW_MAX_STRING. */
bool gwinterp_doc(json_t *doc, gw_lookup_fn *lookup, void *arg, char *err, size_t errlen);

#endif
