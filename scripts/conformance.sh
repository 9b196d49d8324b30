#!/usr/bin/env bash
# Runs the official MCP conformance suite (0.1.16) against build/conformance-server:
# the active server suite, then --suite all. Both must end "Total: N passed, 0 failed".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib/wait-port.sh"
cd "$root"
node=$(scripts/node-tools.sh node22 conformance | tail -1)
suite="$root/tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
out="$root/build/conformance"
mkdir -p "$out"

build/conformance-server --port 0 > "$out/server.out" 2> "$out/server.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
port=$(wait_port "$out/server.out") || { echo "conformance: server did not start"; exit 1; }
url="http://127.0.0.1:$port/mcp"

status=0
for args in "" "--suite all"; do
    name=${args:+all}
    name=${name:-active}
    # shellcheck disable=SC2086
    (cd "$out" && "$node" "$suite" server --url "$url" $args) > "$out/$name.log" 2>&1 || true
    sed -n '/=== SUMMARY ===/,$p' "$out/$name.log" | grep -E '^[✓✗]' | grep '✗' || true
    total=$(grep -E '^Total: [0-9]+ passed, [0-9]+ failed' "$out/$name.log" | tail -1)
    scenarios=$(sed -n '/=== SUMMARY ===/,$p' "$out/$name.log" | grep -cE '^[✓✗]' || true)
    echo "conformance ($name suite, $scenarios scenarios): ${total:-no total line}"
    case "$total" in *" 0 failed") ;; *) status=1; tail -40 "$out/$name.log" ;; esac
done
exit $status
