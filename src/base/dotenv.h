/* dotenv.h — parser for KEY=VALUE files (the env file, the agent's env file). Pure; fuzzed.
 * Accepts comments (#), blank lines, an optional "export ", single- or double-quoted values
 * (double quotes understand \n \" \\), and unquoted values with trailing spaces or " #comment"
 * removed. Keys are [A-Za-z_][A-Za-z0-9_]*. */
#ifndef HM_DOTENV_H
#define HM_DOTENV_H
#include <jansson.h>
#include <stddef.h>

/* Returns a new JSON object of string values (later keys win), or NULL with a one-line reason
 * naming the line in err. */
json_t *dotenv_parse(const char *text, size_t len, char *err, size_t errlen);

#endif
