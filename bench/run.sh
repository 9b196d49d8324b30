#!/usr/bin/env bash
# Side-by-side benchmark (issue 5). One command (make bench): installs what it needs, starts
# every server on loopback, runs every load, stops everything, writes bench/RESULTS.md and one
# plot per load (bench/plot-LOAD.png: requests/s and p50/p99 latency per connection count).
#
# Peers, all in the same run: hermes-mcp (build/release) on the fake agent (tests/fakes, no added
# delay); a server on the official TypeScript SDK 1.32.x (bench/sdk-server.mjs: the same tools
# and schemas, stateless JSON, bearer check); nginx returning hermes-mcp's tools/list bytes (the
# HTTP ceiling); for hermes_task, the fake agent called straight with the body hermes-mcp sends.
# Loads (wrk + bench/lua/): ping, tools/list, hermes_result, initialize, sync hermes_task; then
# 10,000 held sync calls (bench/held-calls.mjs), callgrind instruction counts per request, and the
# footprint. The gateway's loads (issue 14: an upstream's tool through hermes-mcp, direct and
# behind supergateway and mcp-proxy; RSS per upstream) are bench/gateway.sh, run from here. Everything it installs, writes or starts lives in the git-ignored bench/.work/ (and
# a tmpfs task directory under /dev/shm) and is stopped or removed on exit, even on failure.
#
# Usage: bench/run.sh   (or make bench)
# Settings (environment):
#   BENCH_SECONDS=5         length of one wrk run
#   BENCH_RUNS=3            runs per load, server and connection count (medians are quoted)
#   BENCH_CONNS="1 16 64"
#   BENCH_LOADS="ping tools_list hermes_result initialize hermes_task"
#   BENCH_STARTS=10         starts of hermes-mcp for the start-to-listening median
#   BENCH_HELD=10000        held calls (0: skip); BENCH_HELD_DELAY_MS=500 the agent's time per call
#   BENCH_PRUNE=100000      task directories pruned under tools/list load (bench/prune.sh; 0: skip)
#   BENCH_CALLGRIND=1000    requests counted under callgrind (0: skip)
#   BENCH_NGINX_WORKERS=1   nginx worker processes (1: one core, like hermes-mcp and Node)
#   BENCH_TIMEOUT=10s       wrk's per-request timeout (a request that times out invalidates a run)
#   BENCH_GATEWAY=1         the gateway's loads (bench/gateway.sh: server-everything's echo through
#                           hermes-mcp, direct, and behind supergateway and mcp-proxy; 0: skip)
#   BENCH_GW_UPSTREAMS=8    upstreams configured for the gateway's RSS per upstream
#   BENCH_STORE=1           the PostgreSQL store beside files, 1 and 2 replicas (bench/store.mjs; 0: skip)
#   BENCH_OUT=bench         where RESULTS.md and the plots go (a partial run: another folder)
# Quick check of the script itself: BENCH_SECONDS=1 BENCH_RUNS=1 BENCH_HELD=300 BENCH_CALLGRIND=50
#   (BENCH_PRUNE=1000 BENCH_GW_UPSTREAMS=4 shorten it more)
# Exit codes: 0 done (RESULTS.md written), 1 a step failed, 2 missing tools that cannot be installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"   # wait_port, stop, status_kb, free_port, num, median, check, wrk_*
cd "$root"
wrk_settings   # seconds, runs, conns, timeout, cg_n, work
loads=${BENCH_LOADS:-"ping tools_list hermes_result initialize hermes_task"}
starts=${BENCH_STARTS:-10}
held_n=${BENCH_HELD:-10000}
held_delay=${BENCH_HELD_DELAY_MS:-500}
nginx_workers=${BENCH_NGINX_WORKERS:-1}
gateway=${BENCH_GATEWAY:-1}
run=$work/run          # this invocation's env files, task directories, logs; wiped at start
outdir=${BENCH_OUT:-$root/bench}
out=$outdir/RESULTS.md
mkdir -p "$outdir"
log() { printf 'bench: %s\n' "$*" >&2; }
load_now() { printf '%s (processes named fuzz_*: %s)' "$(uptime | sed 's/.*load average/load average/')" \
    "$(pgrep -fc 'fuzz_' || true)"; }
load_start=$(load_now)
started_at=$(date -u '+%Y-%m-%d %H:%M UTC')

# ---------- 1. what we need ----------
as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif sudo -n true 2>/dev/null; then sudo "$@"
    else return 1; fi
}
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v gnuplot >/dev/null || missing+=(gnuplot-nox)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ "$cg_n" = 0 ] || command -v valgrind >/dev/null || missing+=(valgrind)
command -v strace >/dev/null || missing+=(strace)
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} (apt-get)"
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            "${missing[@]}" >&2; then
        log "cannot install ${missing[*]}: run 'sudo apt-get install ${missing[*]}' and try again"
        exit 2
    fi
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

sdk_pj=$work/node/node_modules/@modelcontextprotocol/sdk/package.json
sdk_version=$([ -f "$sdk_pj" ] && node -p "require(process.argv[1]).version" "$sdk_pj" || true)
case "$sdk_version" in
1.32.*) ;;
*)  log "installing @modelcontextprotocol/sdk@~1.32.0 and zod into bench/.work/node (npm)"
    mkdir -p "$work/node"
    (cd "$work/node" && { [ -f package.json ] || npm init -y >/dev/null; } &&
        npm install --no-audit --no-fund --loglevel=error '@modelcontextprotocol/sdk@~1.32.0' 'zod@^4' >&2)
    sdk_version=$(node -p "require(process.argv[1]).version" "$sdk_pj") ;;
esac

# The release flavour, copied so that a concurrent build cannot swap a binary under a run.
make -s SANITIZE= all fakes build/release/bench-jwt build/release/bench-oidc >&2
mkdir -p "$work/bin"
cp build/release/hermes-mcp build/release/fake-agent build/release/bench-jwt build/release/bench-oidc "$work/bin/"
hermes=$work/bin/hermes-mcp
fake=$work/bin/fake-agent
# The footprint reference: a C program that does nothing but link Debian's libcurl.
printf '#include <unistd.h>\nint main(void) { sleep(2); return 0; }\n' > "$work/bin/empty.c"
cc -o "$work/bin/empty-curl" "$work/bin/empty.c" -Wl,--no-as-needed $(pkg-config --libs libcurl)

# ---------- 2. processes: started here, stopped on exit ----------
shm=""
cleanup() {
    stop_pids
    [ -z "$shm" ] || rm -rf "$shm"
    rm -rf "$work"/old-run.*
}
stop_on_exit cleanup

rollup_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/smaps_rollup"; }
private_kb() { awk '$1 == "Private_Clean:" || $1 == "Private_Dirty:" { s += $2 } END { print s }' "/proc/$1/smaps_rollup"; }
hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
mcp_post() { # PORT BODY
    curl -sf -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -d "$2" "http://127.0.0.1:$1/mcp"
}
# hermes_env FILE TASKS_DIR AGENT_ENV: a hermes-mcp env file (mode 600).
hermes_env() {
    cat > "$1" <<EOF
MCP_PORT=0
MCP_AUTH_TOKEN=$token
RATE_LIMIT_PER_MIN=0
RATE_LIMIT_AUTH_PER_MIN=0
HERMES_ENV_PATH=$3
TASKS_DIR=$2
AGENTS_FILE=$run/agents.yaml
LOG_LEVEL=warn
EOF
}
# start_fake NAME [ARGS...]: a fake agent; sets fake_pid and fake_port, writes $run/NAME.env.
start_fake() {
    local name=$1; shift
    "$fake" --port 0 --key-file "$run/agent.key" --max-concurrent 0 "$@" \
        > "$run/$name.out" 2> "$run/$name.err" &
    fake_pid=$!
    pids+=("$fake_pid")
    fake_port=$(wait_port "$run/$name.out")
    printf 'API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=%s\nAPI_SERVER_KEY=%s\n' \
        "$fake_port" "$(cat "$run/agent.key")" > "$run/$name.env"
}
# start_hermes NAME ENV_FILE [PREFIX...]: sets h_pid and h_port.
start_hermes() {
    local name=$1 env=$2; shift 2
    "$@" "$hermes" serve --env-file "$env" > "$run/$name.out" 2> "$run/$name.err" &
    h_pid=$!
    pids+=("$h_pid")
    h_port=$(wait_port "$run/$name.out" 300)
}

# The last run's files are removed on exit, not before the loads: on ext4 without a journal (as
# on this VM) every new inode's search skips, one by one, the inodes freed in the last 1 to 6
# minutes (the kernel's recently_deleted()); thousands freed just before would slow the disk
# figure of hermes_task. Runs started within minutes of each other, or beside other work that
# deletes files, still pay some of that.
[ ! -e "$run" ] || mv "$run" "$work/old-run.$$"
mkdir -p -m 700 "$run" "$run/tasks" "$run/tasks/bench-result"
old_umask=$(umask)
umask 077               # the env files and keys below hold secrets
token=$(hex 32)
hex 24 > "$run/agent.key"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# The task hermes_result reads on every server.
cat > "$run/tasks/bench-result/result.json" <<'EOF'
{
  "id": "bench-result",
  "status": "completed",
  "summary": "6 * 7 = 42 (computed by the bundled demo agent).",
  "artifacts": [],
  "next_steps": [],
  "agent": "hermes",
  "completed_at": "2026-01-01T00:00:00Z"
}
EOF

# The fake agent, answering at once.
start_fake fake --delay-scale 0
fake_port_main=$fake_port

# What hermes-mcp sends the agent for the hermes_task load, captured once through a recording
# fake agent: the body of the direct-to-agent baseline.
start_fake fake-rec --delay-scale 0 --record "$run/record.jsonl"
rec_pid=$fake_pid
hermes_env "$run/capture.env" "$run/tasks-capture" "$run/fake-rec.env"
start_hermes capture "$run/capture.env"
mcp_post "$h_port" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hermes_task","arguments":{"task":"what is 6 * 7","mode":"sync","id":"b-capture"}}}' \
    > "$run/capture.json"
stop "$h_pid"; stop "$rec_pid"
node -e '
const fs = require("fs");
const rec = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse)
  .find((r) => r.path === "/v1/chat/completions");
fs.writeFileSync(process.argv[2], JSON.stringify(rec.body));
fs.writeFileSync(process.argv[3], rec.headers["x-hermes-session-id"] || "");
' "$run/record.jsonl" "$run/chat-body.json" "$run/chat-session.txt"

hermes_env "$run/hermes.env" "$run/tasks" "$run/fake.env"

# Footprint, part 1: start to listening (median of $starts), measured through a fifo so the
# line is seen the moment it is written.
mkfifo "$run/start.fifo"
start_ms=()
for _ in $(seq "$starts"); do
    t0=$EPOCHREALTIME
    "$hermes" serve --env-file "$run/hermes.env" > "$run/start.fifo" 2>> "$run/start.err" &
    p=$!
    read -r line < "$run/start.fifo"
    t1=$EPOCHREALTIME
    stop "$p"
    case "$line" in *listening*) ;; *) log "unexpected first line: $line"; exit 1 ;; esac
    start_ms+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
done

# hermes-mcp, tasks on disk (the bench's own directory)
start_hermes hermes "$run/hermes.env"
hermes_pid=$h_pid
hermes_port=$h_port
sleep 0.5
hermes_rss_idle=$(status_kb "$hermes_pid" VmRSS)
hermes_pss_idle=$(rollup_kb "$hermes_pid" Pss)
hermes_private_idle=$(private_kb "$hermes_pid")
hermes_anon_idle=$(rollup_kb "$hermes_pid" Anonymous)
hermes_threads=$(status_kb "$hermes_pid" Threads)
# Wake-ups of the idle server: the system calls of all its threads over 10 s (the target is 0).
hermes_idle_calls=-
st_rc=0
timeout -s INT 10 strace -f -c -p "$hermes_pid" -o "$run/idle-strace.txt" 2> "$run/idle-strace.err" || st_rc=$?
if [ "$st_rc" = 124 ]; then # attached for the whole window; strace -c writes no table for 0 calls
    hermes_idle_calls=$(awk '$NF == "total" { print $4 }' "$run/idle-strace.txt")
    hermes_idle_calls=${hermes_idle_calls:-0}
fi
"$work/bin/empty-curl" &
empty_pid=$!
sleep 0.3
empty_rss=$(status_kb "$empty_pid" VmRSS)
stop "$empty_pid"

# hermes-mcp, tasks on tmpfs: the same work without the disk's fsync latency.
hermes_shm_port=""
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    shm=$(mktemp -d /dev/shm/hermes-bench.XXXXXX)
    hermes_env "$run/hermes-shm.env" "$shm" "$run/fake.env"
    start_hermes hermes-shm "$run/hermes-shm.env"
    hermes_shm_port=$h_port
fi

# hermes-mcp with MCP_SESSIONS=1: the 2025-11-25 era as SDK 1.x clients use it against a session
# server (tools_list_session.lua), beside the stateless default above.
hermes_env "$run/hermes-sess.env" "$run/tasks" "$run/fake.env"
echo "MCP_SESSIONS=1" >> "$run/hermes-sess.env"
start_hermes hermes-sess "$run/hermes-sess.env"
hermes_sess_port=$h_port

# The SDK server (next to its node_modules so that its imports resolve).
cp bench/sdk-server.mjs "$work/node/"
BENCH_TOKEN=$token HERMES_URL=http://127.0.0.1:$hermes_port/mcp TASKS_DIR=$run/tasks PORT=0 \
    node "$work/node/sdk-server.mjs" > "$run/sdk.out" 2> "$run/sdk.err" &
sdk_pid=$!
pids+=($sdk_pid)
sdk_port=$(wait_port "$run/sdk.out")
sleep 0.5
sdk_rss_idle=$(status_kb "$sdk_pid" VmRSS)

# nginx: the same tools/list response bytes as hermes-mcp gives, from a file (POST to a static
# file is 405, which error_page turns into a 200 GET of the file), after the same bearer check.
mkdir -p "$run/nginx/root" "$run/nginx/tmp"
mcp_post "$hermes_port" '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' > "$run/nginx/root/tools-list.json"
chmod -R a+rX "$run/nginx"
nginx_port=$(free_port)
cat > "$run/nginx/nginx.conf" <<EOF
user $(id -un);
worker_processes $nginx_workers;
daemon off;
pid $run/nginx/nginx.pid;
error_log $run/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    client_body_buffer_size 64k;
    client_body_temp_path $run/nginx/tmp/body;
    proxy_temp_path $run/nginx/tmp/proxy;
    fastcgi_temp_path $run/nginx/tmp/fastcgi;
    uwsgi_temp_path $run/nginx/tmp/uwsgi;
    scgi_temp_path $run/nginx/tmp/scgi;
    server {
        listen 127.0.0.1:$nginx_port;
        location = /mcp {
            if (\$http_authorization != "Bearer $token") { return 401; }
            rewrite ^ /tools-list.json last;
        }
        location = /tools-list.json {
            internal;
            root $run/nginx/root;
            default_type application/json;
            error_page 405 =200 \$uri;
        }
    }
}
EOF
"$nginx_bin" -e "$run/nginx/error.log" -c "$run/nginx/nginx.conf" > "$run/nginx.out" 2> "$run/nginx.err" &
pids+=($!)
for _ in $(seq 50); do [ -s "$run/nginx/nginx.pid" ] && break; sleep 0.1; done
nginx_worker=$(pgrep -P "$(cat "$run/nginx/nginx.pid")" | head -1)
log "hermes-mcp :$hermes_port (tmpfs :${hermes_shm_port:-none})  sdk-server :$sdk_port  nginx :$nginx_port  fake-agent :$fake_port_main"

# ---------- 3. loads ----------
servers_for() {
    case "$1" in
    hermes_task) echo "hermes hermes_2026${hermes_shm_port:+ hermes_shm} fake" ;;
    tools_list) echo hermes hermes_2026 hermes_sess sdk nginx ;;
    hermes_result) echo hermes hermes_2026 sdk nginx ;;
    *) echo hermes sdk nginx ;;
    esac
}
label() {
    case "$1" in
    hermes) echo 'hermes-mcp' ;;
    hermes_2026) echo 'hermes-mcp, MCP 2026-07-28' ;;
    hermes_sess) echo 'hermes-mcp, 2025-11-25 with a session' ;;
    hermes_shm) echo 'hermes-mcp, tasks on tmpfs' ;;
    sdk) echo 'SDK server' ;;
    nginx) echo 'nginx (fixed tools/list)' ;;
    fake) echo 'fake agent, direct' ;;
    esac
}
# target LOAD SERVER: sets t_url, t_script and t_token.
target() {
    t_script=$root/bench/lua/$1.lua
    t_token=$token
    case "$2" in
    hermes) t_url=http://127.0.0.1:$hermes_port/mcp ;;
    hermes_2026) t_url=http://127.0.0.1:$hermes_port/mcp  # the same server, the stateless era
                 t_script=$root/bench/lua/${1}_modern.lua ;;
    hermes_shm) t_url=http://127.0.0.1:$hermes_shm_port/mcp ;;
    hermes_sess) t_url=http://127.0.0.1:$hermes_sess_port/mcp
                 t_script=$root/bench/lua/${1}_session.lua ;;
    sdk) t_url=http://127.0.0.1:$sdk_port/mcp ;;
    nginx) t_url=http://127.0.0.1:$nginx_port/mcp ;;
    fake) t_url=http://127.0.0.1:$fake_port_main/v1/chat/completions
          t_script=$root/bench/lua/fake_chat.lua
          t_token=$(cat "$run/agent.key") ;;
    esac
}
# rotated R WORDS...: the words starting at the R-th, wrapping, so that across the runs no server
# always follows the same one (whatever a run leaves behind, the next one pays for).
rotated() {
    local r=$1; shift
    local words=("$@") i
    for ((i = 0; i < ${#words[@]}; i++)); do echo "${words[(i + r - 1) % ${#words[@]}]}"; done
}
results=$run/results.tsv   # load conns run server rps p50_us p99_us failures socket_errors
: > "$results"
nproc=$(nproc)
for load in $loads; do
    for c in $conns; do
        threads=$((c < nproc ? c : nproc))
        for r in $(seq "$runs"); do
            for s in $(rotated "$r" $(servers_for "$load")); do
                target "$load" "$s"
                # Tasks on disk: the previous run's writeback must not land on this one.
                [ "$load" = hermes_task ] && sync
                wlog=$run/wrk-$load-$c-$r-$s.log
                BENCH_TOKEN=$t_token BENCH_NONCE="$r$RANDOM$s" BENCH_BODY_FILE=$run/chat-body.json \
                BENCH_SESSION=$(cat "$run/chat-session.txt") \
                    wrk_run "$wlog" "$threads" "$c" "$t_script" "$t_url"
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$load" "$c" "$r" "$s" "$(val rps)" \
                    "$(val p50_us)" "$(val p99_us)" "$(val failures)" "$(val socket_errors)" >> "$results"
                log "$load c=$c run $r/$runs $s: $(val rps) req/s, p50 $(val p50_us) us, p99 $(val p99_us) us, failures $(val failures), socket errors $(val socket_errors)"
            done
        done
    done
done
# The gateway's loads, in a script of its own (its servers are started and stopped there).
gw_dir=$run/gateway
if [ "$gateway" = 1 ]; then
    log "gateway: server-everything's echo through hermes-mcp, direct, supergateway and mcp-proxy"
    BENCH_SECONDS=$seconds BENCH_RUNS=$runs BENCH_CONNS=$conns BENCH_TIMEOUT=$timeout BENCH_CALLGRIND=$cg_n \
        BENCH_HERMES=$hermes BENCH_GW_DIR=$gw_dir bench/gateway.sh || log "gateway: failed (see $gw_dir)"
fi
sleep 1
hermes_rss_after=$(status_kb "$hermes_pid" VmRSS)
sdk_rss_after=$(status_kb "$sdk_pid" VmRSS)
nginx_rss=$( [ -n "$nginx_worker" ] && status_kb "$nginx_worker" VmRSS || echo "?")

# ---------- 4. held calls ----------
held_json=""
held_note=""
if [ "$held_n" -gt 0 ]; then
    fd_limit=$(ulimit -n)
    if [ "$fd_limit" -lt $((held_n + 1000)) ]; then
        held_note="(the open-file limit is $fd_limit: $held_n held calls need $((held_n + 1000)); fewer were held)"
        held_n=$((fd_limit - 1000))
    fi
    start_fake fake-held --delay-scale 1
    held_fake_pid=$fake_pid
    # Task files on tmpfs when there is one: this measures memory and the loop, not the disk
    # (10,000 new task directories at once on ext4 take seconds of the writer's time).
    held_tasks=$run/tasks-held
    [ -z "$shm" ] || held_tasks=$shm/held
    hermes_env "$run/held.env" "$held_tasks" "$run/fake-held.env"
    start_hermes held "$run/held.env"
    held_pid=$h_pid
    sleep 0.5
    log "held calls: $held_n sync hermes_task calls, ${held_delay} ms each at the agent"
    held_json=$(URL=http://127.0.0.1:$h_port/mcp TOKEN=$token PID=$held_pid N=$held_n \
        DELAY_MS=$held_delay PREFIX=held node bench/held-calls.mjs) || held_json=""
    log "held calls: $held_json"
    stop "$held_pid"; stop "$held_fake_pid"
fi
hv() { [ -n "$held_json" ] && node -p "JSON.parse(process.argv[1]).$1" "$held_json" || echo "-"; }

# ---------- 4b. retention: a prune of BENCH_PRUNE task directories under load ----------
prune_json=""
if [ "${BENCH_PRUNE:-100000}" -gt 0 ]; then
    log "prune: ${BENCH_PRUNE:-100000} task directories under tools/list load"
    prune_json=$(HERMES=$hermes WORK=$run/prune PRUNE_N=${BENCH_PRUNE:-100000} \
        PRUNE_CONNS=$(echo $conns | awk '{ print $NF }') PRUNE_SECONDS=$seconds bench/prune.sh) || prune_json=""
fi
pv() { [ -n "$prune_json" ] && node -p "JSON.parse(process.argv[1]).$1" "$prune_json" || echo "-"; }

# ---------- 5. callgrind: instructions per request ----------
# cg_count LOAD N [SERVER]: sets cg_total to hermes-mcp's instructions (every thread) from start
# to exit, serving exactly N requests of LOAD on one connection ("-" if they did not all
# succeed); SERVER hermes_2026 sends them as MCP 2026-07-28 requests. Two counts differ only by
# the requests between them.
cg_count() {
    local load=$1 n=$2 era=${3:-hermes} dir=$run/cg-tasks-$1-$2-${3:-hermes}
    mkdir -p "$dir"
    hermes_env "$run/cg.env" "$dir" "$run/fake.env"
    [ "$era" != hermes_sess ] || echo "MCP_SESSIONS=1" >> "$run/cg.env"
    start_hermes "cg-$load-$n" "$run/cg.env" valgrind --tool=callgrind \
        --callgrind-out-file="$run/cg-$load-$n.out"
    local p=$h_pid port=$h_port
    target "$load" "$era"
    BENCH_COUNT=$n BENCH_TOKEN=$token BENCH_NONCE="cg$n$RANDOM" wrk -t1 -c1 -d600s --timeout 60s \
        -s "$t_script" "http://127.0.0.1:$port/mcp" > "$run/cg-$load-$n.wrk" 2>&1 || true
    stop "$p"
    cg_counted "$run/cg-$load-$n.wrk" "$n" "$run/cg-$load-$n.out" "callgrind $load: the $n requests"
}
# cg_per LOAD SMALL BIG [SERVER]: sets cg_result to the instructions per request.
cg_per() {
    local a
    cg_count "$1" "$2" "${4:-hermes}"; a=$cg_total
    cg_count "$1" "$3" "${4:-hermes}"
    cg_result=-
    if [ "$a" != - ] && [ "$cg_total" != - ] && [ -n "$a" ] && [ -n "$cg_total" ]; then
        cg_result=$(awk -v a="$a" -v b="$cg_total" -v n=$(($3 - $2)) 'BEGIN { printf "%.0f", (b - a) / n }')
    fi
}
# cg_interact ERA N: cg_total for N client interactions of bench/interaction.mjs (legacy: the
# session era's initialize handshake then tools/list; modern: a 2026-07-28 tools/list alone).
cg_interact() {
    local era=$1 n=$2 dir=$run/cg-int-$1-$2 rc=0
    mkdir -p "$dir"
    hermes_env "$run/cg.env" "$dir" "$run/fake.env"
    start_hermes "cgi-$era-$n" "$run/cg.env" valgrind --tool=callgrind \
        --callgrind-out-file="$run/cgi-$era-$n.out"
    local p=$h_pid port=$h_port
    BENCH_TOKEN=$token node "$root/bench/interaction.mjs" "$era" "$n" "http://127.0.0.1:$port/mcp" \
        > "$run/cgi-$era-$n.log" 2>&1 || rc=$?
    stop "$p"
    cg_total=-
    [ "$rc" = 0 ] && cg_total=$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$run/cgi-$era-$n.out" | head -1)
    [ "$rc" = 0 ] || log "callgrind interaction $era: the driver failed ($run/cgi-$era-$n.log)"
}
# cg_interact_per ERA SMALL BIG: cg_result, instructions per interaction.
cg_interact_per() {
    local a
    cg_interact "$1" "$2"; a=$cg_total
    cg_interact "$1" "$3"
    cg_result=-
    if [ "$a" != - ] && [ "$cg_total" != - ] && [ -n "$a" ] && [ -n "$cg_total" ]; then
        cg_result=$(awk -v a="$a" -v b="$cg_total" -v n=$(($3 - $2)) 'BEGIN { printf "%.0f", (b - a) / n }')
    fi
}
# Each measured twice: how far apart the two are is how stable the figure is.
cg_list=-; cg_task=-; cg_ping=-; cg_list26=-; cg_task26=-; cg_int=-; cg_int26=-; cg_listsess=-
if [ "$cg_n" -gt 0 ]; then
    log "callgrind: ping, tools/list and hermes_task (both eras) under valgrind, twice each"
    cg_ping=""; cg_list=""; cg_task=""; cg_list26=""; cg_task26=""; cg_listsess=""
    for _ in 1 2; do
        cg_per ping $((cg_n / 10)) $((cg_n / 10 + cg_n)); cg_ping+="${cg_ping:+ / }$cg_result"
        cg_per tools_list $((cg_n / 10)) $((cg_n / 10 + cg_n)); cg_list+="${cg_list:+ / }$cg_result"
        cg_per tools_list $((cg_n / 10)) $((cg_n / 10 + cg_n)) hermes_2026
        cg_list26+="${cg_list26:+ / }$cg_result"
        cg_per tools_list $((cg_n / 10)) $((cg_n / 10 + cg_n)) hermes_sess
        cg_listsess+="${cg_listsess:+ / }$cg_result"
        cg_per hermes_task $((cg_n / 50 + 1)) $((cg_n / 50 + 1 + cg_n / 5)); cg_task+="${cg_task:+ / }$cg_result"
        cg_per hermes_task $((cg_n / 50 + 1)) $((cg_n / 50 + 1 + cg_n / 5)) hermes_2026
        cg_task26+="${cg_task26:+ / }$cg_result"
    done
    cg_interact_per legacy $((cg_n / 50 + 1)) $((cg_n / 50 + 1 + cg_n / 5)); cg_int=$cg_result
    cg_interact_per modern $((cg_n / 50 + 1)) $((cg_n / 50 + 1 + cg_n / 5)); cg_int26=$cg_result
fi
# JWT verification with a cached key (bench/jwt.c; make bench-jwt alone), the servers stopped.
jwt_table=$("$work/bin/bench-jwt" 2>&1) || jwt_table="bench-jwt failed: $jwt_table"
oidc_table=$("$work/bin/bench-oidc" 2>&1) || oidc_table="bench-oidc failed: $oidc_table"
jwt_rs256=$(echo "$jwt_table" | awk -F' *[|] *' '$2 == "RS256" { print $3 }')
# What tracing costs (bench/otel.sh: its own servers and OTLP sink, tracing off and on).
otel_out=$(BENCH_SECONDS=$seconds BENCH_RUNS=$runs BENCH_CONNS=64 "$root/bench/otel.sh" 2>/dev/null) || otel_out="bench/otel.sh failed"
otel_rps=$(echo "$otel_out" | sed -n 's/^  overhead: \(-\{0,1\}[0-9.]*\)% fewer req\/s.*/\1/p')
otel_ins=$(echo "$otel_out" | sed -n 's/^  instructions: +\{0,1\}\(-\{0,1\}[0-9.]*\)% with tracing on.*/\1/p')
# The PostgreSQL store beside files, one replica and two behind nginx (bench/store.mjs: its own
# fake agent, PostgreSQL cluster, servers and nginx).
store_out="Not run (BENCH_STORE=0)."
if [ "${BENCH_STORE:-1}" = 1 ]; then
    ln -sfn ../tools/sdk/node_modules "$root/tests/node_modules"
    store_out=$(BENCH_SECONDS=$seconds BENCH_RUNS=$runs BENCH_CONNS="$conns" \
        "$("$root/scripts/node-tools.sh" node22 sdk | tail -1)" "$root/bench/store.mjs" 2> "$run/store.err") ||
        store_out="bench/store.mjs failed (see bench/.work/run/store.err)."
fi
load_end=$(load_now)

# ---------- 6. RESULTS.md ----------
umask "$old_umask"
med() { results_median "$results" "$@"; }   # LOAD CONNS SERVER FIELD, over the valid runs
valid() { results_valid "$results" "$@"; }  # LOAD CONNS SERVER
ratio() { { [ "$1" = - ] || [ "$2" = - ] || [ "$2" = 0 ]; } && echo - || awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }
has_load() { case " $loads " in *" $1 "*) return 0 ;; esac; return 1; }
last_c=$(echo $conns | awk '{ print $NF }')
first_c=$(echo $conns | awk '{ print $1 }')

title() {
    case "$1" in
    ping) echo 'ping' ;;
    tools_list) echo 'tools/list' ;;
    hermes_result) echo 'tools/call hermes_result (reads result.json from disk)' ;;
    initialize) echo 'initialize' ;;
    hermes_task) echo 'tools/call hermes_task, sync, through the fake agent' ;;
    esac
}
rv() { med "$1" "$2" "$3" 5; }                       # req/s
lv() { num "$(med "$1" "$2" "$3" "$4")" 3 1000; }     # latency column 6 (p50) or 7 (p99), ms
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
strip -o "$run/hermes-mcp.stripped" "$hermes"
start_med=$(echo "${start_ms[*]}" | median)
# hermes_task: what the proxy adds at p50, per connection count.
added() { # SERVER CONNS
    local a b
    a=$(med hermes_task "$2" "$1" 6); b=$(med hermes_task "$2" fake 6)
    { [ "$a" = - ] || [ "$b" = - ]; } && echo - || awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", (a - b) / 1000 }'
}
{
    echo "# Benchmark results"
    echo
    echo "Written by \`bench/run.sh\` (\`make bench\`), started $started_at. Machine: $nproc CPUs, ${cpu:-unknown CPU},"
    echo "Linux $(uname -r), shared with other work: $load_start at the start, $load_end at the end."
    echo "hermes-mcp $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src 2>/dev/null || echo ' (src modified)'),"
    echo "SDK $sdk_version on Node $(node --version), $("$nginx_bin" -v 2>&1 | sed 's/.*: //') ($nginx_workers worker), $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}')."
    echo
    echo "Each cell: median of the valid runs out of $runs × ${seconds} s (wrk, $nproc threads at most, one per"
    echo "connection below that); latencies in ms. A run is valid when every response was HTTP 200 with"
    echo "\`\"result\"\` and without \`\"error\"\` or \`\"isError\":true\` (for the fake agent: an SSE stream ending"
    echo "in \`data: [DONE]\`), and wrk saw no socket errors or timeouts ($timeout). Ratios are requests/s of"
    echo "hermes-mcp divided by the peer's. The machine is shared and noisy: read the ratios and the"
    echo "instruction counts, not the absolute numbers. nginx returns the fixed tools/list response to"
    echo "every load (the HTTP ceiling), after the same bearer check."
    echo
    echo "## Targets"
    echo
    echo "| target | measured | met |"
    echo "|---|---:|:---:|"
    # Issue 12, part 4.
    for l in tools_list hermes_result; do
        has_load "$l" || continue
        p99=$(num "$(med "$l" "$last_c" hermes 7)" 3 1000); ng=$(num "$(med "$l" "$last_c" nginx 7)" 3 1000)
        echo "| $(title "$l" | sed 's/ (.*//'): p99 at $last_c conns ≤ nginx's p99 in this run ($ng ms) | $p99 ms | $( [ "$p99" = - ] || [ "$ng" = - ] && echo - || check "$ng" ">=" "$p99") |"
    done
    # Issue 13: the stateless era against 2025-11-25 on the same server (stateless, no
    # MCP-Protocol-Version header) and against a session server, same run (0.95: the run-to-run
    # noise).
    for l in tools_list hermes_result hermes_task; do
        has_load "$l" || continue
        for c in $conns; do
            for base in hermes hermes_sess; do
                [ "$base" = hermes ] || [ "$l" = tools_list ] || continue
                m=$(rv "$l" "$c" hermes_2026); h=$(rv "$l" "$c" "$base")
                r=$( [ "$m" = - ] || [ "$h" = - ] || [ "$h" = 0 ] && echo - || awk -v a="$m" -v b="$h" 'BEGIN { printf "%.2f", a / b }')
                what=$( [ "$base" = hermes ] && echo "2025-11-25's, stateless" || echo "2025-11-25's with a session")
                echo "| $(title "$l" | sed 's/ (.*//'), MCP 2026-07-28 at $c conns: req/s ≥ 0.95× $what ($(num "$m" 0 1) / $(num "$h" 0 1)) | ${r}× | $(check "$r" ">=" 0.95) |"
            done
        done
    done
    if [ "$cg_int" != - ] && [ "$cg_int26" != - ]; then
        echo "| a client interaction in MCP 2026-07-28 (tools/list, no handshake) costs no more than one of the session era (initialize, initialized, tools/list): instructions, callgrind | $cg_int26 / $cg_int | $(check "$cg_int26" "<" "$cg_int") |"
    fi
    if [ -n "$prune_json" ]; then
        echo "| prune of $(pv n) task dirs: concurrent tools/list p99 < 5 ms (no prune: $(pv base_p99_ms) ms; the prune took $(pv prune_ms) ms, the load ran $(pv window_ms) ms from its start) | $(pv p99_ms) ms | $(check "$(pv p99_ms)" "<" 5) |"
    fi
    echo "| idle RSS < 8 MiB | $(num "$hermes_rss_idle" 1 1024) MiB | $(check "$(num "$hermes_rss_idle" 3 1024)" "<" 8) |"
    if has_load hermes_task && [ -n "$hermes_shm_port" ]; then
        d=$(rv hermes_task "$last_c" hermes); m=$(rv hermes_task "$last_c" hermes_shm)
        r=$( [ "$d" = - ] || [ "$m" = - ] || [ "$m" = 0 ] && echo - || awk -v a="$d" -v b="$m" 'BEGIN { printf "%.2f", a / b }')
        echo "| sync hermes_task at $last_c conns: tasks on disk ≥ 0.8× tasks on tmpfs ($(num "$d" 0 1) / $(num "$m" 0 1) req/s) | ${r}× | $(check "$r" ">=" 0.8) |"
    fi
    echo "| an idle server makes no wake-ups: system calls over 10 s (strace -f) | $hermes_idle_calls | $(check "$hermes_idle_calls" "=" 0) |"
    echo "| a JWT access token (RS256, the key set cached): parse + verify + claims < 20 us (bench/jwt.c) | ${jwt_rs256:--} us | $( [ -z "$jwt_rs256" ] && echo - || check "$jwt_rs256" "<" 20) |"
    echo "| tracing on (every request sampled, exported over OTLP/HTTP): tools/list at 64 conns, fewer req/s < 5% (bench/otel.sh) | ${otel_rps:--}% | $( [ -z "$otel_rps" ] && echo - || check "$otel_rps" "<" 5) |"
    echo "| tracing on: instructions per tools/list (callgrind, both threads) < +5% (bench/otel.sh) | +${otel_ins:--}% | $( [ -z "$otel_ins" ] && echo - || check "$otel_ins" "<" 5) |"
    [ "$gateway" != 1 ] || [ ! -f "$gw_dir/targets.md" ] || cat "$gw_dir/targets.md"
    for load in $loads; do
        echo
        echo "## $(title "$load")"
        echo
        ss=$(servers_for "$load")
        hdr="| conns"; sep="|---:"
        for s in $ss; do hdr+=" | $(label "$s") req/s | p50 | p99"; sep+="|---:|---:|---:"; done
        if [ "$load" = hermes_task ]; then
            hdr+=" | added p50 (disk)${hermes_shm_port:+ | added p50 (tmpfs)} | valid"; sep+="|---:${hermes_shm_port:+|---:}|---:"
        else
            hdr+=" | hermes/SDK | hermes/nginx | valid (h/s/n)"; sep+="|---:|---:|---:"
        fi
        echo "$hdr |"; echo "$sep|"
        for c in $conns; do
            row="| $c"
            for s in $ss; do row+=" | $(num "$(rv "$load" "$c" "$s")" 0 1) | $(lv "$load" "$c" "$s" 6) | $(lv "$load" "$c" "$s" 7)"; done
            if [ "$load" = hermes_task ]; then
                row+=" | $(added hermes "$c")${hermes_shm_port:+ | $(added hermes_shm "$c")} |"
            else
                h=$(rv "$load" "$c" hermes)
                row+=" | $(ratio "$h" "$(rv "$load" "$c" sdk)") | $(ratio "$h" "$(rv "$load" "$c" nginx)") |"
            fi
            for s in $ss; do row+=" $(valid "$load" "$c" "$s")"; done
            echo "$row |"
        done
        if [ "$load" = hermes_task ]; then
            echo
            echo "\"fake agent, direct\" is wrk on the fake agent's \`POST /v1/chat/completions\` with the body and"
            echo "session header hermes-mcp sends for this call (captured at the start of the run). Through"
            echo "hermes-mcp a call also writes request.json and result.json (journaled with the batch they"
            echo "are in, one fdatasync, then temp file and rename, on one writer thread) and is answered once"
            echo "result.json is durable in the journal; \"added p50\""
            echo "is hermes-mcp's p50 minus the direct p50."
        fi
        echo
        echo "![$(title "$load"): requests/s and latency per connection count](plot-$load.png)"
    done
    if [ "$gateway" = 1 ]; then
        echo
        if [ -f "$gw_dir/section.md" ]; then cat "$gw_dir/section.md"
        else echo "## Gateway"; echo; echo "The gateway's loads failed: see bench/.work/run/gateway/."; fi
    fi
    echo
    echo "## Held calls"
    echo
    if [ -n "$held_json" ]; then
        echo "$(hv held) sync \`hermes_task\` calls sent at once (one connection each) to a hermes-mcp whose fake agent"
        echo "takes $held_delay ms per task. hermes-mcp runs at most 64 of them at the agent at a time (per agent"
        echo "origin); the others wait in its queue, each holding its MCP connection. Task files go to"
        echo "$( [ -n "$shm" ] && echo "tmpfs (memory and the loop are measured here, not the disk)" || echo "the bench's directory on disk"). Meanwhile a second client"
        echo "sends 200 \`tools/list\` requests one after another on its own connection. $held_note"
        echo
        echo "| | |"
        echo "|---|---:|"
        echo "| calls answered with a correct completed result | $(hv ok) / $(hv held) |"
        echo "| most calls in the bridge at once (from /health) | $(hv max_jobs) |"
        echo "| calls still waiting when the second client finished | $(hv still_held_after_probes) |"
        echo "| RSS idle → once every call was accepted ($(hv held_at_sample) open) → most while the second client ran | $(num "$(hv rss_idle_kb)" 1 1024) → $(num "$(hv rss_accepted_kb)" 1 1024) → $(num "$(hv rss_max_kb)" 1 1024) MiB |"
        echo "| RSS per held call (growth over idle / calls open) | $(hv per_call_kb) KiB |"
        echo "| second client's tools/list p50 / p99 / max | $(hv list_p50_ms) / $(hv list_p99_ms) / $(hv list_max_ms) ms |"
        echo "| time to accept every call | $(hv accepted_ms) ms |"
        echo "| time until the last one was answered | $(hv total_ms) ms |"
    else
        echo "Not run (BENCH_HELD=0, or the run failed: see bench/.work/run/held.err)."
    fi
    echo
    echo "## Instructions per request (callgrind)"
    echo
    if [ "$cg_n" -gt 0 ]; then
        echo "hermes-mcp under \`valgrind --tool=callgrind\`, every thread counted, requests sent one at a time"
        echo "by wrk ($cg_n for ping and tools/list, $((cg_n / 5)) for hermes_task); two runs that differ only in"
        echo "the number of requests, subtracted and divided, so start-up and shut-down cancel out. Noise on"
        echo "the machine does not move these much (the audit log's writer batches by time, which is what"
        echo "differs between the two measurements); a change of more than a few per cent is a change in"
        echo "the code (or in a library)."
        echo
        echo "| request | instructions per request (two measurements) |"
        echo "|---|---:|"
        echo "| ping | $cg_ping |"
        echo "| tools/list (2025-11-25, stateless: no MCP-Protocol-Version header) | $cg_list |"
        echo "| tools/list, 2025-11-25 with a session (\`MCP_SESSIONS=1\`; \`Mcp-Session-Id\` and \`MCP-Protocol-Version\` on the request, as SDK 1.x sends them) | $cg_listsess |"
        echo "| tools/list, MCP 2026-07-28 (\`_meta\` and the mirrored headers on the request, \`resultType\`/\`serverInfo\`/cache hints on the result) | $cg_list26 |"
        echo "| tools/call hermes_task, sync, proxied to the fake agent (hermes-mcp's side only) | $cg_task |"
        echo "| tools/call hermes_task, sync, MCP 2026-07-28 | $cg_task26 |"
        echo "| a client interaction, 2025-11-25: initialize, notifications/initialized, tools/list (bench/interaction.mjs) | $cg_int |"
        echo "| a client interaction, 2026-07-28: tools/list (no handshake; discover cached) | $cg_int26 |"
    else
        echo "Not run (BENCH_CALLGRIND=0)."
    fi
    echo
    echo "## JWT verification (bench/jwt.c)"
    echo
    echo "CPU microseconds of one thread per access token, the provider's key set already parsed, no"
    echo "server (\`make bench-jwt\` runs it alone). libcrypto's own verification on this machine"
    echo "(\`openssl speed\`): RSA 2048 ~16 us, P-256 ~65 us, Ed25519 ~90 us, each alg's floor."
    echo
    echo "$jwt_table"
    echo
    echo "The 20 us target is RS256's, the alg every provider of docs/guides/identity-providers.md"
    echo "signs with by default; ES256 and EdDSA are bounded by libcrypto's own verification."
    echo
    echo "That cost is paid once per token: the server remembers a verified token by its SHA-256"
    echo "until its \`exp\`, so a client's next requests with it cost this (bench/oidc.c;"
    echo "\`make bench-oidc\` runs it alone):"
    echo
    echo "$oidc_table"
    echo
    echo "## Tracing (bench/otel.sh)"
    echo
    echo "tools/list at 64 connections against two servers, tracing off and on (every request"
    echo "sampled, batched and exported over OTLP/HTTP protobuf to a local sink that answers 200),"
    echo "runs alternating; then callgrind's instructions per request of both threads."
    echo
    echo '```'
    echo "$otel_out"
    echo '```'
    echo
    echo "## Stores: PostgreSQL beside files (bench/store.mjs)"
    echo
    echo "The same requests on the two stores, one fake agent answering at once, one PostgreSQL 15"
    echo "cluster on this disk with its durability settings at PostgreSQL's defaults (fsync,"
    echo "synchronous_commit): **files**, one hermes-mcp with its task directory on disk;"
    echo "**PostgreSQL**, one with \`STORE_URL\`; the same one behind the nginx block of"
    echo "docs/guides/replicas.md; and two replicas (\`REPLICAS=2\`) on that database behind the same"
    echo "block. On these 2 cores the replicas, PostgreSQL, nginx and wrk share the CPU: this shows what"
    echo "the store and the second replica cost, not a speed-up. hermes_result reads a stored task"
    echo "(with PostgreSQL, one query per call); sync hermes_task writes request.json and result.json"
    echo "(with PostgreSQL, rows committed in batches). \`make bench-store\` runs this section alone."
    echo
    echo "$store_out"
    echo
    echo "## Footprint"
    echo
    echo "| | hermes-mcp | SDK server (Node) | nginx worker |"
    echo "|---|---:|---:|---:|"
    echo "| RSS idle after start | $(num "$hermes_rss_idle" 1 1024) MiB | $(num "$sdk_rss_idle" 1 1024) MiB | |"
    echo "| of which private (not shared with other processes) / anonymous | $(num "$hermes_private_idle" 1 1024) / $(num "$hermes_anon_idle" 1 1024) MiB | | |"
    echo "| PSS idle (shared pages divided among their users) | $(num "$hermes_pss_idle" 1 1024) MiB | | |"
    echo "| RSS after the loads (idle again) | $(num "$hermes_rss_after" 1 1024) MiB | $(num "$sdk_rss_after" 1 1024) MiB | $(num "$nginx_rss" 1 1024) MiB |"
    echo "| threads | $hermes_threads | | |"
    echo "| binary size (as built, -O2 -g) | $(num "$(stat -c %s "$hermes")" 0 1024) KiB | | |"
    echo "| binary size (stripped) | $(num "$(stat -c %s "$run/hermes-mcp.stripped")" 0 1024) KiB | | |"
    echo "| start to \`listening\` line, median of $starts | $start_med ms | | |"
    echo
    echo "Starts (ms): ${start_ms[*]}. For scale: a C program that does nothing but link Debian's libcurl"
    echo "(and so its ~40 libraries: OpenSSL, GnuTLS, Kerberos, LDAP, SSH, ...) has an RSS of"
    echo "$(num "$empty_rss" 1 1024) MiB; most of hermes-mcp's RSS is those libraries' pages, shared and clean."
} > "$out.tmp"

# ---------- 7. plots ----------
rm -f "$outdir"/plot-*.png
[ "$gateway" != 1 ] || [ ! -f "$gw_dir/plot-gateway.png" ] || cat "$gw_dir/plot-gateway.png" > "$outdir/plot-gateway.png"
for load in $loads; do
    ss=$(servers_for "$load")
    for c in $conns; do
        printf '%s' "$c"
        for s in $ss; do printf ' %s' "$(rv "$load" "$c" "$s")"; done
        for s in $ss; do printf ' %s %s' "$(lv "$load" "$c" "$s" 6)" "$(lv "$load" "$c" "$s" 7)"; done
        echo
    done > "$run/plot-$load.dat"
    # shellcheck disable=SC2086 # $ss: one word per server
    plot_pair "$run/plot-$load.dat" "$outdir/plot-$load.png" "$(title "$load") — median of $runs × ${seconds} s" \
        connections "" $ss || log "gnuplot failed for $load"
done
mv "$out.tmp" "$out"
log "wrote $out and $outdir/plot-*.png (raw runs: $results, wrk logs: $run/)"
