/* gw_provider.h — the gateway as a provider the app drives (provider.h): GATEWAY_FILE read and
 * linted before anything starts, its upstreams set up after the providers before it. */
#ifndef HM_GW_PROVIDER_H
#define HM_GW_PROVIDER_H
#include <stdbool.h>

#include "provider.h"

struct gw_provider;

/* Reads gateway_file, GATEWAY_FILE (placeholders from env_file, then the process environment),
 * and lints it as serve does against call_timeout_ms (MCP_CALL_TIMEOUT_S), warnings logged;
 * gateway_file NULL: a provider with no upstreams. A reload reads both files again. NULL, with
 * one line on stderr naming file, upstream and key, when serve must refuse the file. */
struct gw_provider *gw_provider_load(const char *gateway_file, const char *env_file,
                                     unsigned call_timeout_ms);
/* STORE_URL and its password (borrowed: they outlive p): the pins and input-round nonces are
 * then shared by every replica. */
void gw_provider_set_store(struct gw_provider *p, const char *url, const char *password);
/* The file's bridge_tools, as a bridge_keep_fn (arg: the gw_provider). */
bool gw_provider_keeps(const char *tool, void *arg);
/* approvals.timeout_s (0: none set). */
unsigned gw_provider_approvals_timeout_s(const struct gw_provider *p);
extern const struct provider_ops gw_provider_ops;
/* After app_run. NULL-safe. */
void gw_provider_free(struct gw_provider *p);

#endif
