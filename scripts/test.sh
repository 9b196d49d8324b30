#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test:
# unit and integration tests (plain, then under ASan+UBSan with leak checking) and the official
# MCP conformance suite (active and all scenarios).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc 2>/dev/null || echo 2)

scripts/deps.sh
scripts/node-tools.sh >/dev/null

echo "== build and test (release)"
make -j"$jobs" all build/conformance-server fakes
tests/fakes/selftest.sh
make check
echo "== build and test (ASan+UBSan)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
make -j"$jobs" SANITIZE=1 all build/conformance-server fakes
SANITIZE=1 tests/fakes/selftest.sh
make SANITIZE=1 check
echo "== install"
stage=$(mktemp -d)
make install PREFIX=/usr DESTDIR="$stage" >/dev/null
"$stage/usr/bin/hermes-mcp" version | grep -q '^hermes-mcp ' && echo "install: ok ($stage/usr/bin/hermes-mcp)"
rm -rf "$stage"
echo "== conformance suite"
make conformance
echo "== fuzzing (a short bounded run of every target)"
make fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-15}"
echo "test.sh: all tests passed"
