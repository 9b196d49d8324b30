#!/usr/bin/env bash
# Runs the libFuzzer targets, FUZZ_JOBS at a time (default: the number of cores), and prints one
# line per target in the order given. Exits 1 if any target crashed.
#   tests/fuzz/run.sh [TARGET...]            fuzzes each target for FUZZ_SECONDS (default 10) on
#       a scratch copy of its seed corpus: "fuzz <target>: <N> runs in <S> s, <C> crashes".
#   tests/fuzz/run.sh --replay [TARGET...]   runs each input of tests/fuzz/corpus/<target>/ once
#       (no fuzzing; make check): "fuzz replay <target>: <N> inputs, <C> crashes".
# No TARGET: all of FUZZ_TARGETS in mk/fuzz.mk. Binaries are $FUZZ_BUILD/fuzz_TARGET.
set -u
here=$(cd "$(dirname "$0")" && pwd)
mode=fuzz
if [ "${1:-}" = --replay ]; then mode=replay; shift; fi
one_only=0
if [ "${1:-}" = --one ]; then mode=$2; one_only=1; shift 2; fi # from the parallel loop below
if [ "$#" -eq 0 ]; then
    # FUZZ_TARGETS := a b \ (continued) c: the words after := up to the first line without "\".
    set -- $(sed -n '/^FUZZ_TARGETS[[:space:]]*:=/,/[^\\]$/p' "$here/../../mk/fuzz.mk" |
        sed 's/^FUZZ_TARGETS[[:space:]]*:=//; s/\\$//')
fi
secs=${FUZZ_SECONDS:-10}
build=${FUZZ_BUILD:-build/fuzz}
artifacts=$build/artifacts
mkdir -p "$artifacts"

# One target: its line goes to $build/<target>.result, its libFuzzer output to <target>.log.
one() {
    local t=$1 bin=$build/fuzz_$1 log=$build/$1.log res=$build/$1.result rc
    if [ ! -x "$bin" ]; then
        echo "fuzz $t: $bin missing (make fuzz-build)" > "$res"
        return 1
    fi
    if [ "$mode" = replay ]; then
        local inputs=("$here/corpus/$t"/*)
        [ -e "${inputs[0]}" ] || { echo "fuzz replay $t: no corpus in tests/fuzz/corpus/$t" > "$res"; return 1; }
        "$bin" -rss_limit_mb=2048 -timeout=30 "${inputs[@]}" > "$log" 2>&1
        rc=$?
        local ran
        ran=$(grep -c '^Executed ' "$log")
        if [ "$rc" -eq 0 ] && [ "$ran" -eq "${#inputs[@]}" ]; then
            echo "fuzz replay $t: $ran inputs, 0 crashes" > "$res"
            return 0
        fi
        { echo "fuzz replay $t: $ran of ${#inputs[@]} inputs ran, exit $rc"
          echo "  log: $log"
          grep -E -B 2 -A 40 '^==[0-9]+==ERROR|runtime error|invariant violated|deadly signal' "$log" \
              | head -n 60 | sed 's/^/  /'; } > "$res"
        return 1
    fi
    local work=$build/corpus/$t # scratch: libFuzzer adds new inputs here, never to tests/fuzz/corpus
    rm -rf "$work"
    mkdir -p "$work"
    if [ -d "$here/corpus/$t" ]; then cp -R "$here/corpus/$t/." "$work/"; fi
    local dict=()
    if [ -f "$here/$t.dict" ]; then dict=(-dict="$here/$t.dict"); fi
    local stamp=$build/.$t.stamp
    : > "$stamp"
    local start
    start=$(date +%s)
    "$bin" -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=2048 -max_len=65536 \
        -timeout=30 -artifact_prefix="$artifacts/$t-" "${dict[@]}" "$work" > "$log" 2>&1
    rc=$?
    local took runs new crashes
    took=$(( $(date +%s) - start ))
    runs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log" | tail -n 1)
    new=$(find "$artifacts" -maxdepth 1 -type f -name "$t-*" -newer "$stamp" | sort)
    crashes=$(printf '%s' "$new" | grep -c . || true)
    if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
    rm -f "$stamp"
    {
        echo "fuzz $t: ${runs:-?} runs in $took s, $crashes crashes"
        if [ "$crashes" -ne 0 ]; then
            [ -n "$new" ] && printf '  artifact: %s\n' $new
            echo "  log: $log"
            grep -E -A 40 '^==[0-9]+==ERROR|runtime error|invariant violated|deadly signal' "$log" \
                | head -n 60 | sed 's/^/  /'
        fi
    } > "$res"
    [ "$crashes" -eq 0 ]
}

if [ "$one_only" = 1 ]; then
    one "$1"
    exit 0 # the result file tells; xargs would stop at an exit 255 and report others
fi

jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
for t in "$@"; do rm -f "$build/$t.result"; done
printf '%s\n' "$@" | FUZZ_SECONDS="$secs" FUZZ_BUILD="$build" \
    xargs -P "$jobs" -I{} "$0" --one "$mode" {}
failed=()
for t in "$@"; do
    if [ -f "$build/$t.result" ]; then cat "$build/$t.result"; else echo "fuzz $t: did not run"; fi
    head -n 1 "$build/$t.result" 2>/dev/null | grep -q ', 0 crashes$' || failed+=("$t")
done
if [ "${#failed[@]}" -ne 0 ]; then
    echo "fuzz: crashes or failures in ${failed[*]}"
    exit 1
fi
