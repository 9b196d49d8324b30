#!/usr/bin/env bash
# Runs each libFuzzer target for FUZZ_SECONDS on a scratch copy of its seed corpus and prints one
# line per target: "fuzz <target>: <N> runs in <S> s, <C> crashes". Exits 1 if any target crashed.
# Usage: tests/fuzz/run.sh [TARGET...] (binaries are $FUZZ_BUILD/fuzz_TARGET; no TARGET: all).
set -u
all_targets=(jrpc dotenv hdr sse registry taskpath contract chatchunk gwfile tokens form clientdoc clientmeta) # as FUZZ_TARGETS in mk/fuzz.mk
if [ "$#" -eq 0 ]; then set -- "${all_targets[@]}"; fi
secs=${FUZZ_SECONDS:-10}
build=${FUZZ_BUILD:-build/fuzz}
here=$(cd "$(dirname "$0")" && pwd)
artifacts=$build/artifacts
mkdir -p "$artifacts"
failed=()
for t in "$@"; do
    bin=$build/fuzz_$t
    work=$build/corpus/$t   # scratch: libFuzzer adds new inputs here, never to tests/fuzz/corpus
    log=$build/$t.log
    rm -rf "$work"
    mkdir -p "$work"
    if [ -d "$here/corpus/$t" ]; then cp -R "$here/corpus/$t/." "$work/"; fi
    dict=()
    if [ -f "$here/$t.dict" ]; then dict=(-dict="$here/$t.dict"); fi
    stamp=$build/.$t.stamp
    : > "$stamp"
    start=$(date +%s)
    "$bin" -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=2048 -max_len=65536 \
        -timeout=30 -artifact_prefix="$artifacts/$t-" "${dict[@]}" "$work" > "$log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    runs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log" | tail -n 1)
    new=$(find "$artifacts" -maxdepth 1 -type f -name "$t-*" -newer "$stamp" | sort)
    crashes=$(printf '%s' "$new" | grep -c . || true)
    if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
    rm -f "$stamp"
    echo "fuzz $t: ${runs:-?} runs in $took s, $crashes crashes"
    if [ "$crashes" -ne 0 ]; then
        failed+=("$t")
        [ -n "$new" ] && printf '  artifact: %s\n' $new
        echo "  log: $log"
        grep -E -A 40 '^==[0-9]+==ERROR|runtime error|invariant violated|deadly signal' "$log" \
            | head -n 60 | sed 's/^/  /'
    fi
done
if [ "${#failed[@]}" -ne 0 ]; then
    echo "fuzz: crashes in ${failed[*]}"
    exit 1
fi
