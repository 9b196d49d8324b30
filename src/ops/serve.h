/* serve.h — hermes-mcp serve: the composition root of the server. The providers (the bridge,
 * then the gateway) are built here from the settings and handed to app_run(). */
#ifndef HM_SERVE_H
#define HM_SERVE_H

extern const char serve_usage[];
/* argv[0] is "serve"; returns the process exit code. */
int serve_main(int argc, char **argv);

#endif
