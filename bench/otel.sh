#!/usr/bin/env bash
# What tracing costs: tools/list at 64 connections (wrk + bench/lua/tools_list.lua) against
# hermes-mcp with tracing off, and with tracing on (every request sampled, exported over
# OTLP/HTTP protobuf to a local sink that answers 200), runs alternating so that a change in
# the machine's load hits both. Prints requests/s and p99 for each (medians of the valid runs)
# and the overhead in percent (the target: under 5%), and the server's CPU time per request (its
# loop and export threads together, from /proc/PID/stat), which a busy machine disturbs less
# than throughput.
#
# Then callgrind counts the instructions per tools/list (both threads; the difference of two runs
# of BENCH_CALLGRIND and 11 times as many requests on one connection, so start and stop cancel
# out): a figure a loaded machine does not move.
#
# Usage: bench/otel.sh   Settings: BENCH_SECONDS=5, BENCH_RUNS=3, BENCH_CONNS=64, BENCH_TIMEOUT,
#                        BENCH_CALLGRIND=100 (0: skip), BENCH_ENV="KEY=VALUE ..." more settings for
#                        both servers (e.g. MCP_TOOL_ALIASES=1: no hidden tool, so tools/list
#                        answers from the engine's cached listing).
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
# The agent as bench/run.sh configures it (tools/list never calls it): without one the bridge
# looks for the Hermes install on every request, which is not what is measured here.
printf 'API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=9\nAPI_SERVER_KEY=%s\n' "$token" > "$run/agent.env"
chmod 600 "$run/agent.env"

# The sink: an OTLP/HTTP endpoint that reads each export and answers 200 at once.
node -e '
const s = require("http").createServer((q, r) => { q.resume(); q.on("end", () => { n++; r.end(); }); });
let n = 0;
s.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${s.address().port}`));
process.on("SIGTERM", () => { console.error(`sink: ${n} exports`); process.exit(0); });
' > "$run/sink.out" 2> "$run/sink.err" &
pids+=($!)
sink_port=$(wait_port "$run/sink.out")

# cpu_ticks PID: user + system CPU time of PID's threads so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

env_file() { # NAME [KEY=VALUE...]: $run/NAME.env
    local name=$1; shift
    { printf 'MCP_PORT=0\nMCP_AUTH_TOKEN=%s\nRATE_LIMIT_PER_MIN=0\nRATE_LIMIT_AUTH_PER_MIN=0\n' "$token"
      printf 'AGENTS_FILE=%s\nTASKS_DIR=%s\nLOG_LEVEL=warn\n' "$run/agents.yaml" "$run/tasks-$name"
      printf 'HERMES_ENV_PATH=%s\n' "$run/agent.env"
      for kv in ${BENCH_ENV:-}; do printf '%s\n' "$kv"; done
      for kv in "$@"; do printf '%s\n' "$kv"; done; } > "$run/$name.env"
    chmod 600 "$run/$name.env"
}
start() { # NAME [KEY=VALUE...]: a hermes-mcp; sets port and pid
    local name=$1
    env_file "$@"
    "$hermes" serve --env-file "$run/$name.env" > "$run/$name.out" 2> "$run/$name.err" &
    pid=$!
    pids+=("$pid")
    port=$(wait_port "$run/$name.out")
}
tracing_on=("OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port" OTEL_TRACES_SAMPLER=always_on)
start off
off_port=$port off_pid=$pid
start on "${tracing_on[@]}"
on_port=$port on_pid=$pid

: > "$run/results.tsv"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$runs"); do
    for server in off on; do
        p=${server}_port q=${server}_pid
        c0=$(cpu_ticks "${!q}")
        BENCH_TOKEN=$token wrk_run "$run/wrk-$server-$r.log" 2 "$conns" bench/lua/tools_list.lua \
            "http://127.0.0.1:${!p}/mcp"
        c1=$(cpu_ticks "${!q}")
        cpu=$(awk -v t=$((c1 - c0)) -v hz="$hz" -v n="$(val requests)" \
            'BEGIN { printf "%.1f", (n > 0 ? t * 1e6 / hz / n : 0) }')
        printf 'tools_list\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$conns" "$r" "$server" "$(val rps)" \
            "$(val p50_us)" "$(val p99_us)" "$(val failures)" "$(val socket_errors)" "$cpu" \
            >> "$run/results.tsv"
        log "run $r $server: $(val rps) req/s, p99 $(val p99_us) us, CPU $cpu us/request"
    done
done
metrics=$(curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$on_port/metrics" |
    grep '^hermes_mcp_otel_' || true)

rps_off=$(results_median "$run/results.tsv" tools_list "$conns" off 5)
rps_on=$(results_median "$run/results.tsv" tools_list "$conns" on 5)
p99_off=$(results_median "$run/results.tsv" tools_list "$conns" off 7)
p99_on=$(results_median "$run/results.tsv" tools_list "$conns" on 7)
cpu_off=$(results_median "$run/results.tsv" tools_list "$conns" off 10)
cpu_on=$(results_median "$run/results.tsv" tools_list "$conns" on 10)
printf 'tools/list, %s connections, %s runs of %ss (medians of the valid runs: off %s, on %s)\n' \
    "$conns" "$runs" "$seconds" "$(results_valid "$run/results.tsv" tools_list "$conns" off)" \
    "$(results_valid "$run/results.tsv" tools_list "$conns" on)"
printf '  load average before: %s\n' "$load0"
printf '  tracing off: %s req/s, p99 %s us, server CPU %s us/request\n' "$rps_off" "$p99_off" "$cpu_off"
printf '  tracing on:  %s req/s, p99 %s us, server CPU %s us/request\n' "$rps_on" "$p99_on" "$cpu_on"
awk -v a="$rps_off" -v b="$rps_on" -v c="$p99_off" -v d="$p99_on" -v e="$cpu_off" -v f="$cpu_on" 'BEGIN {
    if (a > 0 && b > 0) printf "  overhead: %.1f%% fewer req/s, p99 %+.1f%%, CPU per request %+.1f%% (target: under 5%%)\n",
        (a - b) * 100 / a, (c > 0 ? (d - c) * 100 / c : 0), (e > 0 ? (f - e) * 100 / e : 0) }'
printf '%s\n' "$metrics" | sed 's/^/  /'

# Instructions per request under callgrind.
cg_n=${BENCH_CALLGRIND:-100}
[ "$cg_n" != 0 ] && command -v valgrind >/dev/null || exit 0
cg_count() { # NAME N: sets cg_total, the instructions callgrind counted for N requests
    local name=$1 n=$2
    valgrind --tool=callgrind --callgrind-out-file="$run/cg-$name-$n.out" "$hermes" serve \
        --env-file "$run/$name.env" > "$run/cg-$name-$n.log" 2> "$run/cg-$name-$n.err" &
    local p=$!
    pids+=("$p")
    local cport
    cport=$(wait_port "$run/cg-$name-$n.log" 600)
    BENCH_COUNT=$n BENCH_TOKEN=$token wrk -t1 -c1 -d600s --timeout 60s -s bench/lua/tools_list.lua \
        "http://127.0.0.1:$cport/mcp" > "$run/cg-$name-$n.wrk" 2>&1 || true
    stop "$p"
    cg_counted "$run/cg-$name-$n.wrk" "$n" "$run/cg-$name-$n.out" "callgrind $name"
}
for name in off on; do
    cg_count "$name" "$cg_n"; a=$cg_total
    cg_count "$name" $((cg_n * 11)); b=$cg_total
    per=-
    [ "$a" = - ] || [ "$b" = - ] || per=$(( (b - a) / (cg_n * 10) ))
    eval "cg_$name=\$per"
    printf '  instructions per tools/list, tracing %s: %s\n' "$name" "$per"
done
awk -v a="$cg_off" -v b="$cg_on" 'BEGIN { if (a > 0 && b > 0) printf "  instructions: %+.1f%% with tracing on\n", (b - a) * 100 / a }'
