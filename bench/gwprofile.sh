#!/usr/bin/env bash
# gwprofile.sh — what one proxied tools/call costs hermes-mcp, in instructions (callgrind), for a
# stdio upstream and for a Streamable HTTP upstream: the gateway's per-call cost (issue 14), made
# measurable on a busy machine, where wall-clock latency is noise. Not part of `make bench`.
#
# For each upstream kind, hermes-mcp (release build) runs under valgrind --tool=callgrind with one
# upstream, @modelcontextprotocol/server-everything, and wrk (bench/lua/gw_echo.lua, -t1 -c1,
# BENCH_COUNT) makes exactly N calls of its echo tool ({"message":"hello"}) over one connection,
# then hermes-mcp is stopped. Two runs that differ only in the number of calls are subtracted and
# divided: start-up, discovery and shutdown cancel out, leaving the instructions per call (every
# thread of hermes-mcp; the upstream, a separate process, is not counted). The bigger run's
# callgrind file stays in the work directory for callgrind_annotate (--inclusive=yes to see the
# tree); a per-function top list of it is printed.
#   stdio  server-everything as hermes-mcp's stdio child
#   http   server-everything's own Streamable HTTP mode (started here) as a url upstream
# Usage: bench/gwprofile.sh [stdio|http ...]   (default: both)
# Environment: GWPROF_CALLS=200 (calls in the bigger run; the smaller makes GWPROF_CALLS/10+1);
# GWPROF_TOP=25 (functions listed, 0: none); BENCH_HERMES (the binary; default: a release
# build made here, build/release/hermes-mcp); GWPROF_DIR (default bench/.work/gwprofile).
# Prints "gwprofile KIND: N instructions per proxied call" lines; everything it starts is stopped
# on exit, even on failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"   # wait_port, stop, status_kb, free_port, num, median, check, wrk_*
cd "$root"
kinds=${*:-stdio http}
calls=${GWPROF_CALLS:-200}
top=${GWPROF_TOP:-25}
dir=${GWPROF_DIR:-$root/bench/.work/gwprofile}
log() { printf 'gwprofile: %s\n' "$*" >&2; }
command -v valgrind >/dev/null || { log "valgrind is not installed (deps.apt)"; exit 1; }
command -v wrk >/dev/null || { log "wrk is not installed (deps.apt)"; exit 1; }
everything=$(scripts/node-tools.sh everything | head -1)
node_bin=$(command -v node)
hermes=${BENCH_HERMES:-}
if [ -z "$hermes" ]; then
    make -s SANITIZE= all >&2
    hermes=$root/build/release/hermes-mcp
fi

stop_on_exit

rm -rf "$dir"
mkdir -p -m 700 "$dir"
umask 077
token=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
: > "$dir/agents.yaml"

gateway_yaml() { # KIND: the gateway file with server-everything as that kind of upstream
    if [ "$1" = stdio ]; then
        printf 'upstreams:\n  everything:\n    command: %s\n    args: [%s, "stdio"]\n' \
            "$node_bin" "$(printf '%s' "$everything" | node -p 'JSON.stringify(require("fs").readFileSync(0, "utf8"))')"
    else
        printf 'upstreams:\n  everything:\n    url: http://127.0.0.1:%s/mcp\n' "$http_port"
    fi
    printf '    max_in_flight: 64\n    tools: {include: [echo]}\n'
}

# count KIND N: cg_total, hermes-mcp's instructions for start-up, N proxied calls and shutdown.
count() {
    local name=$1-$2 env=$dir/$1-$2.env
    gateway_yaml "$1" > "$dir/$1.yaml"
    mkdir -p "$dir/$name-tasks"
    printf 'MCP_PORT=0\nMCP_AUTH_TOKEN=%s\nRATE_LIMIT_PER_MIN=0\nRATE_LIMIT_AUTH_PER_MIN=0\nAGENTS_FILE=%s\nTASKS_DIR=%s\nLOG_LEVEL=warn\nGATEWAY_FILE=%s\n' \
        "$token" "$dir/agents.yaml" "$dir/$name-tasks" "$dir/$1.yaml" > "$env"
    valgrind --tool=callgrind --callgrind-out-file="$dir/$name.cg" \
        "$hermes" serve --env-file "$env" > "$dir/$name.out" 2> "$dir/$name.err" &
    local pid=$!
    pids+=("$pid")
    local port
    port=$(wait_port "$dir/$name.out" 600)
    BENCH_COUNT=$2 BENCH_TOKEN=$token BENCH_TOOL=everything__echo wrk -t1 -c1 -d600s --timeout 60s \
        -s bench/lua/gw_echo.lua "http://127.0.0.1:$port/mcp" > "$dir/$name.wrk" 2>&1 || true
    stop "$pid"
    cg_total=
    if grep -q "^BENCH_COUNTED n=$2 failures=0" "$dir/$name.wrk"; then
        cg_total=$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$dir/$name.cg" | head -1)
    else
        log "$1: the $2 calls did not all succeed (see $dir/$name.wrk and $name.err)"
        return 1
    fi
}

http_port=
for kind in $kinds; do
    case "$kind" in
    stdio) ;;
    http)
        if [ -z "$http_port" ]; then
            http_port=$(free_port 18400)
            PORT=$http_port "$node_bin" "$everything" streamableHttp > "$dir/everything.out" 2> "$dir/everything.err" &
            pids+=($!)
            for _ in $(seq 100); do
                (exec 3<>"/dev/tcp/127.0.0.1/$http_port") 2>/dev/null && break
                sleep 0.1
            done
        fi ;;
    *) log "unknown kind $kind (stdio or http)"; exit 2 ;;
    esac
    small=$((calls / 10 + 1))
    count "$kind" "$small"; a=$cg_total
    count "$kind" "$calls"; b=$cg_total
    per=$(awk -v a="$a" -v b="$b" -v n=$((calls - small)) 'BEGIN { printf "%.0f", (b - a) / n }')
    if [ "$top" -gt 0 ]; then
        log "$kind: the top $top functions of $calls calls (self, $dir/$kind-$calls.cg):"
        callgrind_annotate --threshold=100 "$dir/$kind-$calls.cg" 2>/dev/null |
            sed -n '/^Ir/,$p' | grep -v '^-' | sed -n "2,$((top + 1))p" >&2 || true
    fi
    echo "gwprofile $kind: $per instructions per proxied call ($a for $small calls, $b for $calls)"
done
