/* exitcode.c — the exit status table (exitcode.h). */
#include "exitcode.h"

static const struct exitcode_info table[] = {
    {EXIT_OK, "success; `doctor` and `gateway check` also when they printed only warnings; "
              "`serve` after a clean stop (SIGTERM, SIGINT)"},
    {EXIT_FAIL, "the command ran and something failed: a FAIL line of `doctor`, `smoke` or "
                "`gateway check`, a file that cannot be written, a server that cannot be "
                "reached, `serve` failing once its settings were accepted"},
    {EXIT_USAGE, "the command line or the configuration is wrong: an unknown command or "
                 "option, a value missing or malformed, an env file or gateway file `serve` "
                 "refuses; the message says which, and `hermes-mcp help COMMAND` shows the "
                 "usage"},
};

const struct exitcode_info *exitcode_at(size_t i)
{
    return i < sizeof table / sizeof table[0] ? &table[i] : 0;
}
