#!/usr/bin/env bash
# The test command: installs what is missing, builds both flavours and the fuzz targets, and runs
# every test: make check (the fuzz corpora replayed, unit and integration tests) for the release
# build and again under ASan+UBSan with leak checking, the fake agent's self-test for each, the
# install check, the Debian package (scripts/test-deb.sh), the official MCP conformance suite
# (active and all scenarios, both releases) and
# a bounded fuzzing run of every target beside it. Each phase prints its time.
#   FUZZ_SECONDS (default 10): how long each fuzz target runs; FUZZ_JOBS (default: the number of
#   cores) at a time, beside the conformance suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc 2>/dev/null || echo 2)
t0=$SECONDS
phase_name=
phase_start=$SECONDS
times=()
# phase NAME: ends the phase running (its time is printed and kept for the summary), starts NAME.
phase() {
    if [ -n "$phase_name" ]; then
        local took=$((SECONDS - phase_start))
        echo "== $phase_name: $((took / 60)) min $((took % 60)) s"
        times+=("$(printf '%4d s  %s' "$took" "$phase_name")")
    fi
    phase_name=$1
    phase_start=$SECONDS
    [ -z "$1" ] || echo "== $1"
}

phase "dependencies"
scripts/deps.sh
scripts/node-tools.sh >/dev/null

phase "build (release, ASan+UBSan, fuzz targets)"
make -j"$jobs" all build/conformance-server fakes fuzz-build
make -j"$jobs" SANITIZE=1 all build/conformance-server fakes

phase "fake agent self-test (release, ASan+UBSan)"
tests/fakes/selftest.sh
SANITIZE=1 tests/fakes/selftest.sh

phase "check (release)"
make check

phase "check (ASan+UBSan)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
make SANITIZE=1 check

phase "install"
stage=$(mktemp -d)
make install PREFIX=/usr DESTDIR="$stage" >/dev/null
"$stage/usr/bin/hermes-mcp" version | grep -q '^hermes-mcp ' && echo "install: ok ($stage/usr/bin/hermes-mcp)"
rm -rf "$stage"

phase "Debian package"
scripts/test-deb.sh

phase "conformance suite, and fuzzing beside it (a short bounded run of every target)"
fuzz_out=build/fuzz/run.out
mkdir -p build/fuzz
make fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-10}" FUZZ_JOBS="${FUZZ_JOBS:-$jobs}" > "$fuzz_out" 2>&1 &
fuzz_pid=$!
conformance=0
make conformance || conformance=$?
fuzz=0
wait "$fuzz_pid" || fuzz=$?
grep -v '^make' "$fuzz_out" || true
[ "$conformance" -eq 0 ] || { echo "test.sh: the conformance suite failed"; exit 1; }
[ "$fuzz" -eq 0 ] || { echo "test.sh: fuzzing failed (build/fuzz/)"; exit 1; }

phase ""
printf '%s\n' "${times[@]}"
echo "test.sh: all tests passed in $(((SECONDS - t0) / 60)) min $(((SECONDS - t0) % 60)) s"
