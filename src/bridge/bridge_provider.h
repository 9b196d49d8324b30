/* bridge_provider.h — the bridge as a provider the app drives (provider.h). */
#ifndef HM_BRIDGE_PROVIDER_H
#define HM_BRIDGE_PROVIDER_H
#include "bridge.h"
#include "provider.h"

struct bridge_provider;

/* Fills o with the server's settings as they are now (its strings need only last until the
 * bridge call that takes o returns). Called at setup and after each reload of the settings. */
typedef void bridge_opts_fn(struct bridge_opts *o, void *arg);

/* opts tells the bridge its settings (opts_arg must outlive the provider); keep (may be NULL:
 * every tool) decides which of its tools the bridge registers (the gateway file's
 * bridge_tools); keep_arg must outlive the provider. */
struct bridge_provider *bridge_provider_new(bridge_opts_fn *opts, void *opts_arg,
                                            bridge_keep_fn *keep, void *keep_arg);
extern const struct provider_ops bridge_provider_ops;
/* After app_run. NULL-safe. */
void bridge_provider_free(struct bridge_provider *p);

#endif
