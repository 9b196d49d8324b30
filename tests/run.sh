#!/usr/bin/env bash
# Runs each unit-test binary under a timeout and prints one summary line.
set -u
pass=0; fail=0; failed=()
for t in "$@"; do
    if timeout 60 "$t" > "$t.log" 2>&1; then
        pass=$((pass + 1))
        grep -h "PASSED" "$t.log" | sed "s|^|$(basename "$t"): |"
    else
        fail=$((fail + 1)); failed+=("$(basename "$t")")
        cat "$t.log"
    fi
done
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
