#!/usr/bin/env bash
# Runs the official MCP conformance suite against $HM_BUILD/conformance-server (default
# build/release; make conformance passes its flavour):
#   0.1.16 (npm's latest): the active server suite, then --suite all; both must end
#     "Total: N passed, 0 failed".
#   0.2.0-alpha.12: --requirements 2025-11-25 and --requirements 2026-07-28. Each must exit 0
#     (every scored scenario passes); its Total line also counts the scenarios the release
#     does not score (the tasks extension, pending ones), which are listed when they fail.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib/wait-port.sh"
cd "$root"
node=$(scripts/node-tools.sh node22 conformance conformance2 | tail -1)
suite1="$root/tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
suite2="$root/tools/conformance2/node_modules/@modelcontextprotocol/conformance/dist/index.js"
out="$root/build/conformance"
mkdir -p "$out"

server=${HM_BUILD:-build/release}/conformance-server
[ -x "$server" ] || { echo "conformance: $server missing (make build/conformance-server)"; exit 1; }
"$server" --port 0 > "$out/server.out" 2> "$out/server.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
port=$(wait_port "$out/server.out") || { echo "conformance: server did not start"; exit 1; }
url="http://127.0.0.1:$port/mcp"

status=0
summary() { sed -n '/=== SUMMARY ===/,$p' "$1"; }

for args in "" "--suite all"; do
    name=${args:+all}
    name=${name:-active}
    # shellcheck disable=SC2086
    (cd "$out" && "$node" "$suite1" server --url "$url" $args) > "$out/$name.log" 2>&1 || true
    summary "$out/$name.log" | grep -E '^[✓✗]' | grep '✗' || true
    total=$(grep -E '^Total: [0-9]+ passed, [0-9]+ failed' "$out/$name.log" | tail -1)
    scenarios=$(summary "$out/$name.log" | grep -cE '^[✓✗]' || true)
    echo "conformance 0.1.16 ($name suite, $scenarios scenarios): ${total:-no total line}"
    case "$total" in *" 0 failed") ;; *) status=1; tail -40 "$out/$name.log" ;; esac
done

for req in 2025-11-25 2026-07-28; do
    log="$out/req-$req.log"
    rc=0
    (cd "$out" && "$node" "$suite2" server --url "$url" --requirements "$req") > "$log" 2>&1 ||
        rc=$?
    # The summary lists every scenario; the "Not scored" block names those the release does
    # not score, which are left out of the count.
    unscored=$(summary "$log" | sed -n '/^Not scored/,$p')
    names=$(echo "$unscored" | sed -n 's/^ *[✓✗] \([^ ]*\).*/\1:/p')
    scored=$(summary "$log" | sed '/^Total:/,$d' | grep -E '^[✓✗]' |
        grep -vF "$(printf '%s\n' "$names" | sed 's/^/ /')" || true)
    echo "$scored" | grep -E '^✗' || true
    n=$(echo "$scored" | grep -cE '^[✓✗]' || true)
    bad=$(echo "$scored" | grep -cE '^✗' || true)
    echo "conformance 0.2.0-alpha.12 (--requirements $req): $((n - bad)) of $n scored" \
         "scenarios pass, exit $rc; $(echo "$unscored" | head -1)"
    echo "$unscored" | grep -E '^ +✗' || true
    total=$(grep -E '^Total: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    echo "conformance 0.2.0-alpha.12 (--requirements $req, all scenarios): ${total:-no total line}"
    case "$total" in *" 0 failed") ;; *) rc=1 ;; esac
    if [ "$rc" != 0 ] || [ "$bad" != 0 ] || [ "$n" = 0 ]; then
        status=1
        tail -40 "$log"
    fi
done
exit $status
