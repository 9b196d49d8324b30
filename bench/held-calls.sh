#!/usr/bin/env bash
# Usage: bench/held-calls.sh [N=10000] [MS=8000]
# Prints one JSON line: held, ok, rss_idle_kb, rss_held_kb, per_call_kb, list_p50_ms, list_p99_ms.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
n=${1:-10000}
ms=${2:-8000}
node=$(scripts/node-tools.sh node22 | tail -1)
make -s all build/conformance-server
out=$(mktemp)
build/conformance-server --port 0 > "$out" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 50); do grep -q listening "$out" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$out")
ulimit -n "$(ulimit -Hn)"
SPID=$pid "$node" bench/held-calls.mjs "$port" "$n" "$ms"
