/* smoke.h — `hermes-mcp smoke`: checks a running server end to end, as an MCP client would
 * (health, 401 without a token, initialize, the exact tool set, a sync task, its result and
 * files, path-traversal rejection, the body limit). Blocking; runs on its own, never inside the
 * server's loop. */
#ifndef HM_SMOKE_H
#define HM_SMOKE_H

extern const char smoke_usage[];

/* argv holds the arguments after the word "smoke". Returns the exit code: 0 every check
 * passed, 1 a check failed or the server cannot be reached, 2 usage or configuration error. */
int smoke_main(int argc, char **argv);

#endif
