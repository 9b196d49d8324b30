#!/usr/bin/env bash
# Integration tests: start the real binaries and drive them with Node's test runner, raw HTTP
# and the official TypeScript SDK client.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
node=$(scripts/node-tools.sh node22 sdk inspector mcp-remote client puppeteer | tail -1)
# Let the tests import the SDK by its package name.
ln -sfn ../../tools/sdk/node_modules tests/integration/node_modules
ln -sfn ../../tools/sdk/node_modules tests/hostile/node_modules
# The flavour under test (build/release or build/asan), read by lib.mjs; make passes its own.
export HM_BUILD=${HM_BUILD:-build/release}
for b in hermes-mcp conformance-server fake-agent; do
    [ -x "$HM_BUILD/$b" ] || { echo "integration: $HM_BUILD/$b missing (make -j2 all build/conformance-server fakes; SANITIZE=1 for build/asan)"; exit 1; }
done
# Arguments pick test files; the default is all of them.
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tests/integration/*.test.mjs tests/hostile/*.test.mjs)
log=${HM_INTEGRATION_LOG:-build/integration.log}
"$node" --test --test-concurrency=1 --test-reporter=spec "${files[@]}" 2>&1 |
    tee "$log" | grep -vE '^\s*$' | tail -n 400
rc=${PIPESTATUS[0]}
pass=$(sed -n 's/^ℹ pass \([0-9]*\)/\1/p' "$log" | tail -1)
fail=$(sed -n 's/^ℹ fail \([0-9]*\)/\1/p' "$log" | tail -1)
skipped=$(sed -n 's/^ℹ skipped \([0-9]*\)/\1/p' "$log" | tail -1)
echo "integration: ${pass:-0} passed, ${fail:-?} failed, ${skipped:-0} skipped"
[ "$rc" -eq 0 ] || exit "$rc"
[ -n "$pass" ] || { echo "integration: FAIL: no test ran"; exit 1; }
# A skipped test is a test that did not run: it fails the run, unless a developer who knowingly
# lacks a tool (nginx, strace, chromium) sets HM_ALLOW_SKIP=1 on their own machine.
if [ "${skipped:-0}" -gt 0 ] && [ "${HM_ALLOW_SKIP:-0}" != 1 ]; then
    echo "integration: FAIL: ${skipped} skipped (scripts/deps.sh installs what they need; HM_ALLOW_SKIP=1 lets them skip)"
    grep -E '^\s*﹣ ' "$log" | head -20
    exit 1
fi
