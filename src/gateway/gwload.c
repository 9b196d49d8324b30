/* gwload.c — the gateway file from disk: capped read (readfile), mode check, and placeholder
 * values from the env file first, then the process environment, as issue 14 specifies. */
#include "gwload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "readfile.h"

static const char *lookup(const char *var, void *arg)
{
    json_t *v = json_object_get(arg, var);
    if (json_is_string(v))
        return json_string_value(v);
    return getenv(var);
}

bool gwload_file(const char *path, json_t *env, struct gwfile *out, char *err, size_t errlen)
{
    char why[400];
    struct stat st;
    size_t len;

    memset(out, 0, sizeof *out);
    char *text = readfile_capped(path, "it", GW_FILE_MAX, &st, &len, why, sizeof why);
    if (text == NULL) {
        snprintf(err, errlen, "gateway file %s: %s", path, why);
        return false;
    }
    bool ok = false;
    if (st.st_mode & 077)
        snprintf(err, errlen,
                 "gateway file %s: mode %03o lets other users read it (it may hold secrets); "
                 "chmod 600 it",
                 path, (unsigned)(st.st_mode & 0777));
    else if (!gwfile_parse(text, len, lookup, env, out, why, sizeof why))
        snprintf(err, errlen, "gateway file %s: %s", path, why);
    else
        ok = true;
    free(text);
    return ok;
}
