/* doctor.h — `hermes-mcp doctor`: checks a setup the way `serve` would use it and prints one
 * line per check (ok, warn, or FAIL with the fix). Never prints a secret. */
#ifndef HM_DOCTOR_H
#define HM_DOCTOR_H

extern const char doctor_usage[];

/* argv: the arguments after the word "doctor". Returns the exit code: 0 when no check failed
 * (warnings allowed), 1 when one did, 2 for a usage error. */
int doctor_main(int argc, char **argv);

#endif
