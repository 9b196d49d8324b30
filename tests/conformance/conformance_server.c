/* conformance_server.c — the engine plus the official fixtures, for the conformance suite.
 * Sessions on, authentication off (the suite's client sends no credentials), loopback only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "config.h"
#include "fixtures.h"
#include "provider.h"

static bool fixtures_setup(void *self, const struct provider_host *h)
{
    return fixtures_register(h->mcp, h->loop, self);
}

static const struct provider_ops fixtures_ops = {.name = "fixtures", .setup = fixtures_setup,
                                                 .teardown = fixtures_teardown};

int main(int argc, char **argv)
{
    struct config cfg;
    char err[256];
    unsigned long port = 0, call_timeout_ms = 0, drain_grace_s = 0;

    for (int i = 1; i < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--port") && i + 1 < argc) {
            port = strtoul(argv[++i], &end, 10);
            if (*end || port > 65535) {
                fprintf(stderr, "conformance-server: bad port '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--call-timeout") && i + 1 < argc) {
            call_timeout_ms = strtoul(argv[++i], &end, 10);
            if (*end || call_timeout_ms > 86400000) {
                fprintf(stderr, "conformance-server: bad call timeout '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--drain-grace") && i + 1 < argc) {
            drain_grace_s = strtoul(argv[++i], &end, 10);
            if (*end || drain_grace_s > 3600) {
                fprintf(stderr, "conformance-server: bad drain grace '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--help")) {
            puts("usage: conformance-server [--port N] [--call-timeout MS] [--drain-grace S]\n"
                 "  --port N          0, the default, picks a free port\n"
                 "  --call-timeout MS cancel calls running longer (default: no limit)\n"
                 "  --drain-grace S   on SIGTERM, let calls in flight finish for up to S seconds\n"
                 "                    (default 0: answer them 503 at once)");
            return 0;
        } else {
            fprintf(stderr, "conformance-server: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!config_load(&cfg, NULL, err, sizeof err)) {
        fprintf(stderr, "conformance-server: %s\n", err);
        return 2;
    }
    cfg.port = (unsigned)port;
    cfg.sessions = true;
    cfg.rate_per_min = 0; /* the suite fires far more than 30 requests a minute */
    cfg.call_timeout_ms = (unsigned)call_timeout_ms;
    cfg.drain_grace_s = (unsigned)drain_grace_s;
    const struct provider fixtures = {&fixtures_ops, NULL};
    struct app_opts o = {.cfg = &cfg, .service = "hermes-mcp-conformance",
                         .providers = &fixtures, .nproviders = 1};
    int rc = app_run(&o);
    config_cleanup(&cfg);
    return rc;
}
