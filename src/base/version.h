/* version.h — the one place the version is written; serverInfo, /health, /metrics, the
 * User-Agent of smoke and `hermes-mcp version` all take it from here. */
#ifndef HM_VERSION_H
#define HM_VERSION_H

#define HM_VERSION "0.1.0"

#endif
