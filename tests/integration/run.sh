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
# Arguments pick test files; the default is all of them.
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tests/integration/*.test.mjs tests/hostile/*.test.mjs)
"$node" --test --test-concurrency=1 --test-reporter=spec "${files[@]}" 2>&1 |
    tee build/integration.log | grep -vE '^\s*$' | tail -n 400
rc=${PIPESTATUS[0]}
pass=$(sed -n 's/^ℹ pass \([0-9]*\)/\1/p' build/integration.log | tail -1)
fail=$(sed -n 's/^ℹ fail \([0-9]*\)/\1/p' build/integration.log | tail -1)
echo "integration: ${pass:-0} passed, ${fail:-?} failed"
exit "$rc"
