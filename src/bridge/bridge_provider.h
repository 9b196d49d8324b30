/* bridge_provider.h — the bridge as a provider the app drives (provider.h). */
#ifndef HM_BRIDGE_PROVIDER_H
#define HM_BRIDGE_PROVIDER_H
#include "bridge.h"
#include "provider.h"

struct bridge_provider;

/* keep (may be NULL: every tool) decides which of its tools the bridge registers (the gateway
 * file's bridge_tools); keep_arg must outlive the provider. */
struct bridge_provider *bridge_provider_new(bridge_keep_fn *keep, void *keep_arg);
extern const struct provider_ops bridge_provider_ops;
/* After app_run. NULL-safe. */
void bridge_provider_free(struct bridge_provider *p);

#endif
