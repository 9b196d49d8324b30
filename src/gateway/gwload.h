/* gwload.h — reading the gateway file from disk: the one place with I/O around the pure parser.
 * The file may hold secrets (headers, env), so, like the agents registry, it must be mode 600
 * and a regular file (a FIFO or device is refused at once, never waited on). */
#ifndef HM_GWLOAD_H
#define HM_GWLOAD_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gwfile.h"

#define GW_FILE_MAX (1024 * 1024)

/* Reads and parses path; placeholders come from env (the env file's KEY=VALUE object, may be
 * NULL), then the process environment. On failure returns false with one line in err that
 * starts "gateway file PATH: " and names the upstream and key but never a value. */
bool gwload_file(const char *path, json_t *env, struct gwfile *out, char *err, size_t errlen);

#endif
