#!/usr/bin/env bash
# rss.sh — the memory of a server started as the README starts it (scripts/dev.sh: the default
# configuration and the demo agent), idle, then after its first task. Prints VmRSS, its anonymous
# and file-backed parts, and the mappings that weigh most. Uses the built binaries (make first).
# Usage: bench/rss.sh [TOP]   (TOP mappings listed, default 12)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
top=${1:-12}
[ -x build/hermes-mcp ] && [ -x build/fake-agent ] || { echo "rss.sh: build first (make all fakes)" >&2; exit 2; }

dir=$(mktemp -d)
port=$(free_port 18700)
HERMES_MCP_DEV_NO_BUILD=1 HERMES_MCP_DEV_DIR="$dir/dev" HERMES_MCP_PORT=$port \
    setsid scripts/dev.sh > "$dir/dev.out" 2>&1 &
dev=$!
trap 'kill -TERM -- -$dev 2>/dev/null || true; wait $dev 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do grep -q 'listening on' "$dir/dev.out" && break; sleep 0.1; done
grep -q 'listening on' "$dir/dev.out" || { cat "$dir/dev.out" >&2; exit 1; }
pid=$(pgrep -f "hermes-mcp serve --env-file $dir/dev/hermes-mcp.env" | head -1)
sleep 1 # settled: nothing runs in an idle server, this only lets the start-up end

# report LABEL: one line of figures and the heaviest mappings.
report() {
    local k
    k() { status_kb "$pid" "$1" | awk '{ printf "%.1f", $1 / 1024 }'; }
    printf '%-16s VmRSS %5s MiB, anonymous %4s MiB, file-backed %4s MiB; libcurl %s\n' "$1" \
        "$(k VmRSS)" "$(k RssAnon)" "$(k RssFile)" \
        "$(grep -q 'libcurl' "/proc/$pid/maps" && echo loaded || echo 'not loaded')"
    awk '/^[0-9a-f]+-/ { name = $6 ? $6 : "[anonymous]" } /^Rss:/ { r[name] += $2 }
         END { for (n in r) if (r[n] > 0) printf "%8d kB  %s\n", r[n], n }' "/proc/$pid/smaps" |
        sort -rn | head -"$top"
}
report "idle, as started"
token=$(sed -n 's/^MCP_AUTH_TOKEN=//p' "$dir/dev/hermes-mcp.env")
curl -sf "http://127.0.0.1:$port/mcp" -H @<(printf 'Authorization: Bearer %s\n' "$token") \
    -H 'Content-Type: application/json' -H 'Accept: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hermes_task","arguments":{"task":"what is 6 * 7","mode":"sync"}}}' \
    > /dev/null
sleep 0.5
report "after one task"
