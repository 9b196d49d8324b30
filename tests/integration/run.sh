#!/usr/bin/env bash
# Integration tests: start the real binaries and drive them with Node's test runner, raw HTTP
# and the official TypeScript SDK client.
#   tests/integration/run.sh [FILE...]     the given files (default: every *.test.mjs under
#                                          tests/integration/ and tests/hostile/, subfolders too)
# Files run HM_TEST_JOBS at a time (default: three per core); a file with a line starting
# "// serial:" (the reason follows) runs afterwards, alone: it measures wall time, watches an
# idle server or needs the CPU to itself. HM_BUILD picks the build flavour (build/release or
# build/asan). The log of the parallel pass is HM_INTEGRATION_LOG ($HM_BUILD/integration.log),
# the serial pass's beside it (-serial.log), per-file durations in -durations.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
node=$(scripts/node-tools.sh node22 sdk inspector mcp-remote client puppeteer oidc otel | tail -1)
# Let the tests and their helpers, at any depth under tests/, import the SDK by its package name.
ln -sfn ../tools/sdk/node_modules tests/node_modules
# The flavour under test (build/release or build/asan), read by lib.mjs; make passes its own.
export HM_BUILD=${HM_BUILD:-build/release}
for b in hermes-mcp conformance-server fake-agent; do
    [ -x "$HM_BUILD/$b" ] || { echo "integration: $HM_BUILD/$b missing (make -j2 all build/conformance-server fakes; SANITIZE=1 for build/asan)"; exit 1; }
done
# Arguments pick test files; the default is all of them.
files=("$@")
[ ${#files[@]} -gt 0 ] ||
    mapfile -t files < <(find tests/integration tests/hostile -name '*.test.mjs' -not -path '*/node_modules/*' | sort)
parallel=(); serial=()
for f in "${files[@]}"; do
    if grep -q '^// serial:' "$f"; then serial+=("$f"); else parallel+=("$f"); fi
done
# Three files per core: a file mostly waits on the servers it started and on their timers (with
# two per core the suite kept 2 cores about 40% busy), so more files at once fill the cores.
jobs=${HM_TEST_JOBS:-$(( $(nproc 2>/dev/null || echo 2) * 3 ))}
log=${HM_INTEGRATION_LOG:-$HM_BUILD/integration.log}
mkdir -p "$(dirname "$log")"
durations=${log%.log}-durations.txt
# Slowest first, by the last run's times where there are some (a file not timed yet counts as
# slow), so that a long file does not start last and keep the others waiting. A flavour not run
# yet goes by another's times (the ASan run after the first release run of a fresh clone).
order=$durations
if [ ! -s "$order" ]; then
    for f in "$root"/build/*/integration-durations.txt; do [ -s "$f" ] && { order=$f; break; }; done
fi
if [ -s "$order" ] && [ ${#parallel[@]} -gt 1 ]; then
    mapfile -t parallel < <(printf '%s\n' "${parallel[@]}" |
        awk 'NR == FNR { t[$NF] = $1; next } { print ($0 in t ? t[$0] : 1e9) "\t" $0 }' "$order" - |
        sort -s -t $'\t' -k1,1rn | cut -f2-)
fi
previous=$(cat "$durations" 2>/dev/null || true)
: > "$durations"

pass=0; fail=0; skipped=0; status=0
# run_pass LOG CONCURRENCY FILE...: one run of Node's runner; adds its counts to the totals.
run_pass() {
    local plog=$1 conc=$2 rc n
    shift 2
    # A file (or test) still running after 10 minutes is stuck: it fails, and the run goes on,
    # rather than holding the suite until CI's own limit.
    "$node" --test --test-concurrency="$conc" --test-timeout=600000 \
        --test-reporter=spec --test-reporter-destination=stdout \
        --test-reporter=./tests/lib/durations.mjs --test-reporter-destination="$plog.d" \
        "$@" 2>&1 | tee "$plog" | grep -vE '^\s*$' | tail -n 400
    rc=${PIPESTATUS[0]}
    cat "$plog.d" >> "$durations"; rm -f "$plog.d"
    n=$(sed -n 's/^ℹ pass \([0-9]*\)/\1/p' "$plog" | tail -1)
    [ -n "$n" ] || { echo "integration: no summary in $plog"; status=1; }
    pass=$((pass + ${n:-0}))
    n=$(sed -n 's/^ℹ fail \([0-9]*\)/\1/p' "$plog" | tail -1); fail=$((fail + ${n:-0}))
    n=$(sed -n 's/^ℹ skipped \([0-9]*\)/\1/p' "$plog" | tail -1); skipped=$((skipped + ${n:-0}))
    [ "$rc" -eq 0 ] || status=$rc
}
logs=()
if [ ${#parallel[@]} -gt 0 ]; then
    echo "integration: ${#parallel[@]} files, $jobs at a time"
    run_pass "$log" "$jobs" "${parallel[@]}"
    logs+=("$log")
fi
if [ ${#serial[@]} -gt 0 ]; then
    echo "integration: ${#serial[@]} files marked serial, one at a time: ${serial[*]##*/}"
    run_pass "${log%.log}-serial.log" 1 "${serial[@]}"
    logs+=("${log%.log}-serial.log")
fi
echo "integration: slowest files (all in $durations):"
sort -rn "$durations" | sed -n '1,5p' # reads all: no SIGPIPE for sort under pipefail
# Files not run this time keep their last time, for the next run's order.
{ cat "$durations"
  printf '%s\n' "$previous" | awk 'NR == FNR { seen[$NF] = 1; next } NF && !($NF in seen)' "$durations" -
} | sort -rn > "$durations.new" && mv "$durations.new" "$durations"
echo "integration: $pass passed, $fail failed, $skipped skipped"
[ "$status" -eq 0 ] || exit "$status"
[ "$pass" -gt 0 ] || { echo "integration: FAIL: no test ran"; exit 1; }
# A skipped test is a test that did not run: it fails the run, unless a developer who knowingly
# lacks a tool (nginx, strace, chromium) sets HM_ALLOW_SKIP=1 on their own machine.
if [ "$skipped" -gt 0 ] && [ "${HM_ALLOW_SKIP:-0}" != 1 ]; then
    echo "integration: FAIL: ${skipped} skipped (scripts/deps.sh installs what they need; HM_ALLOW_SKIP=1 lets them skip)"
    grep -hE '^\s*﹣ ' "${logs[@]}" | sed -n '1,20p'
    exit 1
fi
