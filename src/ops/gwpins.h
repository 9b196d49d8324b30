/* gwpins.h — `hermes-mcp gateway pins` and `gateway accept [NAME]` (gwpins.c). */
#ifndef HM_GWPINS_H
#define HM_GWPINS_H

/* cmd: "pins" or "accept"; name: one exposed tool for accept, NULL for all. Returns the exit
 * code: 0 done, 1 a pins or status file is bad (or NAME unknown), 2 configuration error. */
int gwpins_main(const char *cmd, const char *env_file, const char *name);

#endif
