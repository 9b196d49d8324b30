/* gwpins.h — `hermes-mcp gateway pins`, `gateway accept [NAME]` and `gateway unpin NAME`
 * (gwpins.c). */
#ifndef HM_GWPINS_H
#define HM_GWPINS_H

/* cmd: "pins", "accept" or "unpin"; name: one exposed tool (accept: NULL for all); expect: the
 * sha256 accept requires of name's pin (NULL: the one this replica last read). Returns the
 * exit code: 0 done, 1 a pins or status file is bad (or NAME unknown, or a pin moved), 2
 * configuration error. */
int gwpins_main(const char *cmd, const char *env_file, const char *name, const char *expect);

#endif
