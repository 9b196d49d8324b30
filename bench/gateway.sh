#!/usr/bin/env bash
# The gateway's benchmark (issue 14), run by bench/run.sh (BENCH_GATEWAY=1, the default) or on its
# own. One tool call, server-everything's echo, made side by side:
#   hermes       through hermes-mcp's gateway (server-everything as its stdio upstream, stateless
#                MCP requests with the bearer token)
#   direct       on the same upstream straight over stdio (bench/stdio-client.mjs: N calls in
#                flight, no HTTP): the upstream's own ceiling, and the baseline of "added latency"
#   everything   server-everything's own Streamable HTTP mode (its Express + SDK transport)
#   supergateway supergateway (npm, pinned) stdio to Streamable HTTP, --stateful (its stateless
#                mode starts a child per request)
#   mcp_proxy    mcp-proxy (npm, pinned) stdio to Streamable HTTP, its defaults
# The three HTTP peers have sessions: the script initializes one and every wrk connection uses it,
# so each peer has one upstream child shared by all connections, as hermes-mcp has.
# Then hermes-mcp's RSS with 0, 1 and N stdio upstreams (tests/fakes/fake-upstream.mjs, every
# tool exposed) configured: what one configured upstream costs on our side.
# Writes into its directory (BENCH_GW_DIR): results.tsv (the same columns as run.sh's),
# targets.md (rows of run.sh's targets table), section.md (its RESULTS.md section) and
# plot-gateway.png. Everything it starts is stopped on exit, even on failure.
# Settings (environment; run.sh passes its own): BENCH_SECONDS, BENCH_RUNS, BENCH_CONNS,
# BENCH_TIMEOUT as in run.sh; BENCH_GW_UPSTREAMS=8 (N of the RSS measure, at most 32);
# BENCH_HERMES (the binary; default: build/release/hermes-mcp, built here);
# BENCH_GW_DIR (default bench/.work/gateway); BENCH_CALLGRIND=1000 (as in run.sh: the proxied
# calls counted under callgrind are a fifth of it; 0: skip).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"   # wait_port, stop, status_kb, free_port, num, median, check, wrk_*
cd "$root"
wrk_settings   # seconds, runs, conns, timeout, cg_n, work
gw_n=${BENCH_GW_UPSTREAMS:-8}
dir=${BENCH_GW_DIR:-$work/gateway}
log() { printf 'bench gateway: %s\n' "$*" >&2; }
supergateway_version=4.0.0
mcp_proxy_version=6.7.19

# ---------- what we need ----------
peers=$work/gwpeers
have_version() { [ -f "$peers/node_modules/$1/package.json" ] &&
    [ "$(node -p "require(process.argv[1]).version" "$peers/node_modules/$1/package.json")" = "$2" ]; }
if ! have_version supergateway "$supergateway_version" || ! have_version mcp-proxy "$mcp_proxy_version"; then
    log "installing supergateway@$supergateway_version and mcp-proxy@$mcp_proxy_version into bench/.work/gwpeers (npm)"
    mkdir -p "$peers"
    (cd "$peers" && { [ -f package.json ] || npm init -y >/dev/null; } &&
        npm install --no-audit --no-fund --loglevel=error "supergateway@$supergateway_version" \
            "mcp-proxy@$mcp_proxy_version" >&2)
fi
everything=$(scripts/node-tools.sh everything | head -1)
everything_version=$(node -p "require(process.argv[1]).version" "$(dirname "$everything")/../package.json")
node_bin=$(command -v node)
hermes=${BENCH_HERMES:-}
if [ -z "$hermes" ]; then
    make -s SANITIZE= all >&2
    mkdir -p "$work/bin"
    cp build/release/hermes-mcp "$work/bin/hermes-mcp-gw"
    hermes=$work/bin/hermes-mcp-gw
fi

# ---------- processes: started here, stopped on exit ----------
stop_on_exit
wait_tcp() { # PORT NAME: until something accepts on PORT (10 s)
    local i
    for i in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    log "$2 does not listen on :$1 (see $dir/$2.err)"; return 1
}

rm -rf "$dir"
mkdir -p -m 700 "$dir"
umask 077
token=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# gw_hermes NAME GATEWAY_YAML [PREFIX...]: starts hermes-mcp on that gateway file (none when empty); sets
# h_pid and h_port. The listening line comes once every upstream is initialized and listed.
gw_hermes() {
    local name=$1 env=$dir/$1.env
    mkdir -p "$dir/$name-tasks"
    printf 'MCP_PORT=0\nMCP_AUTH_TOKEN=%s\nRATE_LIMIT_PER_MIN=0\nRATE_LIMIT_AUTH_PER_MIN=0\nAGENTS_FILE=%s\nTASKS_DIR=%s\nLOG_LEVEL=warn\n' \
        "$token" "$dir/agents.yaml" "$dir/$name-tasks" > "$env"
    if [ -n "$2" ]; then
        printf '%s' "$2" > "$dir/$name.yaml"
        echo "GATEWAY_FILE=$dir/$name.yaml" >> "$env"
    fi
    shift 2
    "$@" "$hermes" serve --env-file "$env" > "$dir/$name.out" 2> "$dir/$name.err" &
    h_pid=$!
    pids+=("$h_pid")
    h_port=$(wait_port "$dir/$name.out" 300)
}
# session PORT NAME: initializes an MCP session on a peer; prints its Mcp-Session-Id.
session() {
    local sid
    curl -sf -D "$dir/$2.init-headers" -o "$dir/$2.init-body" -X POST -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' \
        -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
        "http://127.0.0.1:$1/mcp" || { log "$2: initialize failed"; return 1; }
    sid=$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$dir/$2.init-headers" | tr -d '\r')
    [ -n "$sid" ] || { log "$2: no Mcp-Session-Id on initialize"; return 1; }
    curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-11-25' \
        -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "http://127.0.0.1:$1/mcp" || true
    echo "$sid"
}

# ---------- the servers ----------
upstream_stdio="[$(printf '%s' "$everything" | node -p 'JSON.stringify(require("fs").readFileSync(0, "utf8"))'), \"stdio\"]"
gateway_yaml="upstreams:
  everything:
    command: $node_bin
    args: $upstream_stdio
    max_in_flight: 64
    tools: {include: [echo]}
"
gw_hermes hermes "$gateway_yaml"
hermes_pid=$h_pid; hermes_port=$h_port
sleep 0.5
hermes_rss_before=$(status_kb "$hermes_pid" VmRSS)

everything_port=$(free_port 18200)
PORT=$everything_port "$node_bin" "$everything" streamableHttp > "$dir/everything.out" 2> "$dir/everything.err" &
pids+=($!)
wait_tcp "$everything_port" everything

supergateway_port=$(free_port 18200)
"$node_bin" "$peers/node_modules/supergateway/dist/index.js" --stdio "$node_bin $everything stdio" \
    --outputTransport streamableHttp --stateful --port "$supergateway_port" --logLevel none \
    > "$dir/supergateway.out" 2> "$dir/supergateway.err" &
pids+=($!)
wait_tcp "$supergateway_port" supergateway

mcp_proxy_port=$(free_port 18200)
"$node_bin" "$peers/node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs" --host 127.0.0.1 --port "$mcp_proxy_port" \
    --server stream -- "$node_bin" "$everything" stdio > "$dir/mcp_proxy.out" 2> "$dir/mcp_proxy.err" &
pids+=($!)
wait_tcp "$mcp_proxy_port" mcp_proxy

declare -A port=([hermes]=$hermes_port [everything]=$everything_port [supergateway]=$supergateway_port
                 [mcp_proxy]=$mcp_proxy_port)
declare -A sid=([hermes]="")
for s in everything supergateway mcp_proxy; do sid[$s]=$(session "${port[$s]}" "$s"); done
log "hermes-mcp :$hermes_port  server-everything HTTP :$everything_port  supergateway :$supergateway_port  mcp-proxy :$mcp_proxy_port"

# ---------- the loads ----------
servers="hermes direct everything supergateway mcp_proxy"
results=$dir/results.tsv   # load conns run server rps p50_us p99_us failures socket_errors hermes_cpu upstream_cpu
clk_tck=$(getconf CLK_TCK)
cpu_ticks() { # PID: its utime + stime in clock ticks ("-" when gone)
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] || { echo -; return; }
    sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}
cpu_pct() { # TICKS0 TICKS1 T0: per cent of one core since T0
    [ "$1" = - ] || [ "$2" = - ] && { echo -; return; }
    awk -v a="$1" -v b="$2" -v t0="$3" -v t1="$EPOCHREALTIME" -v hz="$clk_tck" 'BEGIN { printf "%.0f", (b - a) / hz / (t1 - t0) * 100 }'
}
: > "$results"
nproc=$(nproc)
for c in $conns; do
    threads=$((c < nproc ? c : nproc))
    for r in $(seq "$runs"); do
        for s in $servers; do
            wlog=$dir/run-$c-$r-$s.log
            # The CPU hermes-mcp and its upstream child use during the run: which one is the limit.
            up_pid=$(pgrep -P "$hermes_pid" | head -1 || true)
            h_t0=$(cpu_ticks "$hermes_pid"); u_t0=$(cpu_ticks "$up_pid"); t0=$EPOCHREALTIME
            if [ "$s" = direct ]; then
                "$node_bin" bench/stdio-client.mjs "$c" "$seconds" echo '{"message":"hello"}' \
                    -- "$node_bin" "$everything" stdio > "$wlog" 2>&1 || true
            else
                tool=echo; [ "$s" != hermes ] || tool=everything__echo
                BENCH_TOKEN=$token BENCH_TOOL=$tool BENCH_SESSION=${sid[$s]} \
                    wrk_run "$wlog" "$threads" "$c" bench/lua/gw_echo.lua "http://127.0.0.1:${port[$s]}/mcp"
            fi
            wrk_line "$wlog"
            h_cpu=-; u_cpu=-
            if [ "$s" = hermes ]; then
                h_cpu=$(cpu_pct "$h_t0" "$(cpu_ticks "$hermes_pid")" "$t0")
                u_cpu=$(cpu_pct "$u_t0" "$(cpu_ticks "$up_pid")" "$t0")
            elif [ "$s" = direct ]; then
                u_cpu=$(val upstream_cpu_pct); u_cpu=${u_cpu:--}
            fi
            printf 'gateway\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$r" "$s" "$(val rps)" \
                "$(val p50_us)" "$(val p99_us)" "$(val failures)" "$(val socket_errors)" "$h_cpu" "$u_cpu" >> "$results"
            log "echo c=$c run $r/$runs $s: $(val rps) req/s, p50 $(val p50_us) us, p99 $(val p99_us) us, failures $(val failures), socket errors $(val socket_errors), CPU hermes-mcp $h_cpu% upstream $u_cpu%"
        done
    done
done
sleep 0.5
hermes_rss_after=$(status_kb "$hermes_pid" VmRSS)
for p in "${pids[@]}"; do stop "$p"; done
pids=()

# ---------- RSS per configured upstream ----------
# hermes-mcp's own RSS (not its children's) once listening, i.e. with every upstream initialized
# and its tools registered; the median of three starts for each count.
fake_upstreams() { # N: a gateway file with N fake upstreams, every tool exposed
    local i
    echo "upstreams:"
    for i in $(seq "$1"); do
        printf '  up%d:\n    command: %s\n    args: ["%s"]\n    tools: {include: ["*"]}\n' \
            "$i" "$node_bin" "$root/tests/fakes/fake-upstream.mjs"
    done
}
children_kb() { # PID: the RSS of its children, summed
    local c s=0
    for c in $(pgrep -P "$1"); do s=$((s + $(status_kb "$c" VmRSS || echo 0))); done
    echo "$s"
}
declare -A rss=()
child_rss=-
for n in 0 1 "$gw_n"; do
    [ -z "${rss[$n]:-}" ] || continue
    vals=""
    for k in 1 2 3; do
        if [ "$n" = 0 ]; then gw_hermes "rss-$n-$k" ""; else gw_hermes "rss-$n-$k" "$(fake_upstreams "$n")"; fi
        sleep 0.5
        vals+=" $(status_kb "$h_pid" VmRSS)"
        [ "$n" != "$gw_n" ] || [ "$k" != 1 ] || child_rss=$(children_kb "$h_pid")
        stop "$h_pid"
    done
    rss[$n]=$(echo $vals | median)
    log "RSS with $n upstreams: ${rss[$n]} KiB (starts:$vals)"
done

# ---------- instructions per proxied call (callgrind) ----------
# hermes-mcp alone under callgrind (not its child): two runs that differ only in the number of
# calls, subtracted and divided, as run.sh counts its own requests.
cg_count() { # N: cg_total, hermes-mcp's instructions serving exactly N proxied calls on one connection
    gw_hermes "cg-$1" "$gateway_yaml" valgrind --tool=callgrind --callgrind-out-file="$dir/cg-$1.out"
    BENCH_COUNT=$1 BENCH_TOKEN=$token BENCH_TOOL=everything__echo wrk -t1 -c1 -d600s --timeout 60s \
        -s bench/lua/gw_echo.lua "http://127.0.0.1:$h_port/mcp" > "$dir/cg-$1.wrk" 2>&1 || true
    stop "$h_pid"
    cg_counted "$dir/cg-$1.wrk" "$1" "$dir/cg-$1.out" "callgrind: the $1 calls"
}
cg_call=-
if [ "$cg_n" -gt 0 ] && command -v valgrind >/dev/null; then
    small=$((cg_n / 50 + 1)); big=$((cg_n / 50 + 1 + cg_n / 5))
    log "callgrind: $small and $big proxied calls"
    cg_count "$small"; a=$cg_total
    cg_count "$big"
    [ "$a" = - ] || [ "$cg_total" = - ] || [ -z "$a" ] || [ -z "$cg_total" ] ||
        cg_call=$(awk -v a="$a" -v b="$cg_total" -v n=$((big - small)) 'BEGIN { printf "%.0f", (b - a) / n }')
    log "callgrind: $cg_call instructions per proxied call"
fi

# ---------- the report: targets.md, section.md, plot-gateway.png ----------
med() { results_median "$results" gateway "$@"; }   # CONNS SERVER FIELD, over the valid runs
valid() { results_valid "$results" gateway "$@"; }  # CONNS SERVER
label() {
    case "$1" in
    hermes) echo 'hermes-mcp gateway' ;;
    direct) echo 'upstream direct (stdio)' ;;
    everything) echo 'server-everything, own HTTP' ;;
    supergateway) echo "supergateway $supergateway_version" ;;
    mcp_proxy) echo "mcp-proxy $mcp_proxy_version" ;;
    esac
}
first_c=$(echo $conns | awk '{ print $1 }')
peers_list="everything supergateway mcp_proxy"
best_of() { # "CONNS..." "SERVER...": "rps server conns" of the highest median among them
    local s c v best=- who=- at=-
    for c in $1; do
        for s in $2; do
            v=$(med "$c" "$s" 5)
            [ "$v" = - ] && continue
            if [ "$best" = - ] || awk -v a="$v" -v b="$best" 'BEGIN { exit !(a > b) }'; then best=$v; who=$s; at=$c; fi
        done
    done
    echo "$best $who $at"
}
best_peer() { best_of "$1" "$peers_list"; }   # CONNS
# Throughput is each server's best over the connection counts (where it peaks depends on the
# machine); the upstream's ceiling is the best the direct client got.
read -r ceiling _ ceiling_c <<< "$(best_of "$conns" direct)"
read -r h_best _ h_best_c <<< "$(best_of "$conns" hermes)"
read -r best_all best_all_who best_all_c <<< "$(best_of "$conns" "$peers_list")"
added_us=-
h50=$(med "$first_c" hermes 6); d50=$(med "$first_c" direct 6)
[ "$h50" = - ] || [ "$d50" = - ] || added_us=$((h50 - d50))
vs_peer=-; vs_ceiling=-
[ "$h_best" = - ] || [ "$best_all" = - ] || vs_peer=$(awk -v a="$h_best" -v b="$best_all" 'BEGIN { printf "%.1f", a / b }')
[ "$h_best" = - ] || [ "$ceiling" = - ] || vs_ceiling=$(awk -v a="$h_best" -v b="$ceiling" 'BEGIN { printf "%.2f", a / b }')
# Limited by the upstream: at least 0.9 of the most the upstream did with no proxy at all.
tp_met=$( [ "$vs_peer" = - ] && echo - || { [ "$(check "$vs_peer" ">=" 10)" = yes ] || [ "$(check "$vs_ceiling" ">=" 0.9)" = yes ]; } && echo yes || echo '**no**')
per_up_kb=-; marginal_kb=-; first_kb=-
if [ -n "${rss[0]:-}" ] && [ -n "${rss[$gw_n]:-}" ]; then
    per_up_kb=$(awk -v a="${rss[$gw_n]}" -v b="${rss[0]}" -v n="$gw_n" 'BEGIN { printf "%.0f", (a - b) / n }')
    first_kb=$((${rss[1]} - ${rss[0]}))
    [ "$gw_n" -le 1 ] || marginal_kb=$(awk -v a="${rss[$gw_n]}" -v b="${rss[1]}" -v n="$gw_n" 'BEGIN { printf "%.0f", (a - b) / (n - 1) }')
fi
{
    echo "| gateway: added latency over the upstream direct, p50 at $first_c conn (echo through hermes-mcp $(num "$h50" 0 1) us, direct over stdio $(num "$d50" 0 1) us) | ${added_us} us | $(check "$added_us" "<" 100) |"
    echo "| gateway: echo req/s (best over $(echo $conns | tr ' ' /) conns) ≥ 10× the best peer's ($(label "$best_all_who"), $(num "$best_all" 0 1) at $best_all_c), or limited by the upstream (≥ 0.9× its own ceiling over stdio, $(num "$ceiling" 0 1) at $ceiling_c) | $(num "$h_best" 0 1) at $h_best_c: ${vs_peer}× the peer, ${vs_ceiling}× the upstream | $tp_met |"
    echo "| gateway: RSS per configured upstream, our side ((RSS with $gw_n − with 0) / $gw_n) | $per_up_kb KiB | $(check "$per_up_kb" "<" 1024) |"
} > "$dir/targets.md"
{
    echo "## Gateway: tools/call of server-everything's echo"
    echo
    echo "One upstream, \`@modelcontextprotocol/server-everything\` $everything_version (Node $(node --version)), its \`echo\`"
    echo "tool called with \`{\"message\":\"hello\"}\` (bench/gateway.sh). **hermes-mcp gateway**: the upstream as"
    echo "hermes-mcp's stdio child (\`max_in_flight: 64\`), stateless MCP requests with the bearer token."
    echo "**upstream direct (stdio)**: bench/stdio-client.mjs starts the same server and keeps N calls in"
    echo "flight on its stdin/stdout (no HTTP): the upstream's own ceiling and the baseline of the added"
    echo "latency. **server-everything, own HTTP**: its Streamable HTTP mode. **supergateway**"
    echo "(\`--outputTransport streamableHttp --stateful\`; stateless, it starts a child per request) and"
    echo "**mcp-proxy** (\`--server stream\`, its defaults) put the stdio server behind Streamable HTTP. The"
    echo "three HTTP peers keep sessions: one is initialized first and every connection uses it, so each"
    echo "has one upstream child for all connections, as hermes-mcp has. wrk drives every HTTP server,"
    echo "each response checked as for the other loads. For reference, IBM ContextForge publishes"
    echo "10,454 requests/s for its Rust runtime as a full gateway, on its own hardware (not run here)."
    echo
    hdr="| conns"; sep="|---:"
    for s in $servers; do hdr+=" | $(label "$s")"; sep+="|---:"; done
    echo "Requests (calls) per second:"
    echo
    echo "$hdr | hermes-mcp / best peer | hermes-mcp / direct | valid |"
    echo "$sep|---:|---:|---:|"
    for c in $conns; do
        row="| $c"
        for s in $servers; do row+=" | $(num "$(med "$c" "$s" 5)" 0 1)"; done
        h=$(med "$c" hermes 5); read -r b _ <<< "$(best_peer "$c")"; d=$(med "$c" direct 5)
        row+=" | $( [ "$h" = - ] || [ "$b" = - ] && echo - || awk -v a="$h" -v b="$b" 'BEGIN { printf "%.1f×", a / b }')"
        row+=" | $( [ "$h" = - ] || [ "$d" = - ] && echo - || awk -v a="$h" -v b="$d" 'BEGIN { printf "%.2f×", a / b }')"
        row+=" |"; for s in $servers; do row+=" $(valid "$c" "$s")"; done
        echo "$row |"
    done
    echo
    echo "Latency, p50 / p99 in ms:"
    echo
    echo "$hdr | added p50 (us) |"
    echo "$sep|---:|"
    for c in $conns; do
        row="| $c"
        for s in $servers; do row+=" | $(num "$(med "$c" "$s" 6)" 3 1000) / $(num "$(med "$c" "$s" 7)" 3 1000)"; done
        a=$(med "$c" hermes 6); b=$(med "$c" direct 6)
        row+=" | $( [ "$a" = - ] || [ "$b" = - ] && echo - || echo $((a - b))) |"
        echo "$row"
    done
    echo
    echo "CPU used during the runs, per cent of one core (median; from /proc, over each run):"
    echo
    echo "| conns | through hermes-mcp: hermes-mcp | through hermes-mcp: the upstream | direct: the upstream |"
    echo "|---:|---:|---:|---:|"
    for c in $conns; do
        echo "| $c | $(med "$c" hermes 10) | $(med "$c" hermes 11) | $(med "$c" direct 11) |"
    done
    echo
    if [ "$cg_call" != - ]; then
        echo "Instructions hermes-mcp executes per proxied call (callgrind, every thread, its child not"
        echo "counted; two runs of one connection that differ only in the number of calls): $cg_call."
        echo
    fi
    echo "\"added p50\" is hermes-mcp's p50 minus the direct client's at the same concurrency: the HTTP"
    echo "request, our parsing and the hop to the child and back. The upstream's ceiling is the direct"
    echo "client's best: $(num "$ceiling" 0 1) calls/s at $ceiling_c in flight. The server is one Node process (one core);"
    echo "every proxy of it is limited by that. The direct client is a Node process too, on the same"
    echo "cores as the server, as wrk is for the others: at many calls in flight it competes with the"
    echo "server for the CPU, which is why the gateway can come out ahead of \"direct\" there."
    echo
    echo "![gateway: requests/s and latency per connection count](plot-gateway.png)"
    echo
    echo "RSS of hermes-mcp itself (not its children) once listening, which is once every upstream is"
    echo "initialized and its tools are registered, median of three starts; the upstreams are"
    echo "tests/fakes/fake-upstream.mjs, every tool exposed:"
    echo
    echo "| upstreams configured | 0 | 1 | $gw_n |"
    echo "|---|---:|---:|---:|"
    echo "| hermes-mcp RSS (KiB) | ${rss[0]:--} | ${rss[1]:--} | ${rss[$gw_n]:--} |"
    echo
    echo "Per upstream: $per_up_kb KiB averaged over $gw_n ((RSS with $gw_n − with 0) / $gw_n), $first_kb KiB for the"
    echo "first (the gateway's own start-up included), $marginal_kb KiB for each one after it. Each upstream is"
    echo "also a process of its own: the $gw_n Node children together had $(num "$child_rss" 1 1024) MiB of RSS. The"
    echo "gateway hermes-mcp of the load above: $(num "$hermes_rss_before" 1 1024) MiB RSS before the loads, $(num "$hermes_rss_after" 1 1024) MiB after."
} > "$dir/section.md"

for c in $conns; do
    printf '%s' "$c"
    for s in $servers; do printf ' %s' "$(med "$c" "$s" 5)"; done
    for s in $servers; do printf ' %s %s' "$(num "$(med "$c" "$s" 6)" 3 1000)" "$(num "$(med "$c" "$s" 7)" 3 1000)"; done
    echo
done > "$dir/plot.dat"
# shellcheck disable=SC2086 # $servers: one word per server
plot_pair "$dir/plot.dat" "$dir/plot-gateway.png" \
    "gateway: tools/call echo of server-everything — median of $runs × ${seconds} s" \
    "connections (calls in flight)" \
    'set arrow 1 from graph 0, first 10454 to graph 1, first 10454 nohead dt 3 lc rgb "gray30"
set label 1 "IBM ContextForge, published (its own hardware): 10,454" at graph 0.02, first 10454 offset 0,0.6 font ",8" tc rgb "gray30"' \
    $servers || log "gnuplot failed"
log "wrote $dir/section.md, targets.md and plot-gateway.png"
