#!/usr/bin/env bash
# What tracing costs: tools/list at 64 connections (wrk + bench/lua/tools_list.lua) against
# hermes-mcp with tracing off, and with tracing on (every request sampled, exported over
# OTLP/HTTP protobuf to a local sink that answers 200), runs alternating so that a change in
# the machine's load hits both. Prints requests/s and p99 for each (medians of the valid runs)
# and the overhead in percent (the target: under 5%).
#
# Usage: bench/otel.sh   Settings: BENCH_SECONDS=5, BENCH_RUNS=3, BENCH_CONNS=64, BENCH_TIMEOUT.
# Everything lives in bench/.work/otel and is stopped on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
cd "$root"
wrk_settings
conns=${BENCH_CONNS:-64}
run=$work/otel
log() { printf 'bench-otel: %s\n' "$*" >&2; }
command -v wrk >/dev/null || { log "wrk is missing (apt-get install wrk)"; exit 2; }
hermes=$root/build/release/hermes-mcp
[ -x "$hermes" ] || { log "build first: make"; exit 1; }
rm -rf "$run" && mkdir -p "$run"
pids=()
stop_all() { for p in "${pids[@]}"; do stop "$p"; done; }
trap stop_all EXIT
trap 'exit 130' INT TERM
token=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')

# The sink: an OTLP/HTTP endpoint that reads each export and answers 200 at once.
node -e '
const s = require("http").createServer((q, r) => { q.resume(); q.on("end", () => { n++; r.end(); }); });
let n = 0;
s.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${s.address().port}`));
process.on("SIGTERM", () => { console.error(`sink: ${n} exports`); process.exit(0); });
' > "$run/sink.out" 2> "$run/sink.err" &
pids+=($!)
sink_port=$(wait_port "$run/sink.out")

start() { # NAME [KEY=VALUE...]: a hermes-mcp; sets port
    local name=$1; shift
    { printf 'MCP_PORT=0\nMCP_AUTH_TOKEN=%s\nRATE_LIMIT_PER_MIN=0\nRATE_LIMIT_AUTH_PER_MIN=0\n' "$token"
      printf 'AGENTS_FILE=%s\nTASKS_DIR=%s\nLOG_LEVEL=warn\n' "$run/agents.yaml" "$run/tasks-$name"
      for kv in "$@"; do printf '%s\n' "$kv"; done; } > "$run/$name.env"
    chmod 600 "$run/$name.env"
    "$hermes" serve --env-file "$run/$name.env" > "$run/$name.out" 2> "$run/$name.err" &
    pids+=($!)
    port=$(wait_port "$run/$name.out")
}
start off
off_port=$port
start on "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port" OTEL_TRACES_SAMPLER=always_on
on_port=$port

: > "$run/results.tsv"
for r in $(seq "$runs"); do
    for server in off on; do
        p=${server}_port
        BENCH_TOKEN=$token wrk_run "$run/wrk-$server-$r.log" 2 "$conns" bench/lua/tools_list.lua \
            "http://127.0.0.1:${!p}/mcp"
        printf 'tools_list\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$conns" "$r" "$server" "$(val rps)" \
            "$(val p50_us)" "$(val p99_us)" "$(val failures)" "$(val socket_errors)" >> "$run/results.tsv"
        log "run $r $server: $(val rps) req/s, p99 $(val p99_us) us"
    done
done
metrics=$(curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$on_port/metrics" |
    grep '^hermes_mcp_otel_' || true)

rps_off=$(results_median "$run/results.tsv" tools_list "$conns" off 5)
rps_on=$(results_median "$run/results.tsv" tools_list "$conns" on 5)
p99_off=$(results_median "$run/results.tsv" tools_list "$conns" off 7)
p99_on=$(results_median "$run/results.tsv" tools_list "$conns" on 7)
printf 'tools/list, %s connections, %s runs of %ss (medians of the valid runs: off %s, on %s)\n' \
    "$conns" "$runs" "$seconds" "$(results_valid "$run/results.tsv" tools_list "$conns" off)" \
    "$(results_valid "$run/results.tsv" tools_list "$conns" on)"
printf '  tracing off: %s req/s, p99 %s us\n' "$rps_off" "$p99_off"
printf '  tracing on:  %s req/s, p99 %s us\n' "$rps_on" "$p99_on"
awk -v a="$rps_off" -v b="$rps_on" -v c="$p99_off" -v d="$p99_on" 'BEGIN {
    if (a > 0 && b > 0) printf "  overhead: %.1f%% fewer req/s, p99 %+.1f%% (target: under 5%%)\n", (a - b) * 100 / a, (c > 0 ? (d - c) * 100 / c : 0) }'
printf '%s\n' "$metrics" | sed 's/^/  /'
