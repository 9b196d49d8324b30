#!/usr/bin/env bash
# Runs the unit-test binaries given as arguments, HM_JOBS at a time (default: the number of
# cores), each under a timeout with its output in <binary>.log, then prints each one's result in
# the order given and one summary line.
set -u
jobs=${HM_JOBS:-$(nproc 2>/dev/null || echo 2)}
[ "$#" -gt 0 ] || { echo "unit: no test binaries given"; exit 1; }
rm -f "${@/%/.rc}"
# Each binary's exit status goes to <binary>.rc (124: it timed out).
printf '%s\0' "$@" | xargs -0 -n 1 -P "$jobs" sh -c 'timeout 60 "$1" > "$1.log" 2>&1; echo $? > "$1.rc"' unit
pass=0; fail=0; failed=()
for t in "$@"; do
    rc=$(cat "$t.rc" 2>/dev/null || echo 1)
    if [ "$rc" = 0 ]; then
        pass=$((pass + 1))
        grep -h "PASSED" "$t.log" | sed "s|^|$(basename "$t"): |"
    else
        fail=$((fail + 1)); failed+=("$(basename "$t")")
        cat "$t.log"
        [ "$rc" = 124 ] && echo "$(basename "$t"): timed out after 60 s"
    fi
done
rm -f "${@/%/.rc}"
# cmocka's summary line per program: "[  SKIPPED ] N test(s), listed below:".
skipped=$(cat "${@/%/.log}" 2>/dev/null | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s).*/\1/p' | awk '{n += $1} END {print n + 0}')
echo "unit: $pass passed, $fail failed ${failed[*]:-}, $skipped tests skipped"
[ "$fail" -eq 0 ] || exit 1
# A skipped test did not run: it fails the run unless HM_ALLOW_SKIP=1 (a developer's own machine).
if [ "$skipped" -gt 0 ] && [ "${HM_ALLOW_SKIP:-0}" != 1 ]; then
    grep -h '^\[  SKIPPED \] [^0-9]' "${@/%/.log}" | sort -u | sed 's/^/unit: /'
    echo "unit: FAIL: $skipped skipped (HM_ALLOW_SKIP=1 lets them skip)"
    exit 1
fi
