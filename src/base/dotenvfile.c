/* dotenvfile.c — read an env file, then parse it. */
#include "dotenvfile.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dotenv.h"
#include "readfile.h"

#define ENV_FILE_MAX (1024 * 1024)

json_t *dotenvfile_read(const char *path, unsigned *mode, char *err, size_t errlen)
{
    struct stat st;
    size_t len = 0;
    char what[PATH_MAX + 16], why[200];

    snprintf(what, sizeof what, "env file %s", path);
    char *text = readfile_capped(path, what, ENV_FILE_MAX, &st, &len, err, errlen);
    if (text == NULL)
        return NULL;
    json_t *env = dotenv_parse(text, len, why, sizeof why);
    if (env == NULL)
        snprintf(err, errlen, "env file %s: %s", path, why);
    explicit_bzero(text, len); /* it may hold the token; a memset before free may be elided */
    free(text);
    *mode = (unsigned)(st.st_mode & 07777);
    return env;
}
