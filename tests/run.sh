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
echo "unit: $pass passed, $fail failed ${failed[*]:-}"
[ "$fail" -eq 0 ]
