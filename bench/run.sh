#!/usr/bin/env bash
# Side-by-side benchmark (issue 5): hermes-mcp, a server on the official TypeScript SDK
# (bench/sdk-server.mjs) and nginx answering a fixed tools/list (the HTTP ceiling), all on
# loopback in one run, driven by wrk with the Lua scripts in bench/lua/. Writes bench/RESULTS.md
# (and bench/tools-list.png when gnuplot is there). Idempotent; everything it installs, writes
# or starts lives in the git-ignored bench/.work/ and is stopped on exit, even on failure.
#
# Usage: bench/run.sh        (or make bench)
# Settings (environment):
#   BENCH_SECONDS=5   length of one wrk run
#   BENCH_RUNS=3      runs per load, server and connection count (medians are quoted)
#   BENCH_CONNS="1 16 64"
#   BENCH_LOADS="ping tools_list hermes_result initialize hermes_task"
#   BENCH_STARTS=10   starts of hermes-mcp for the start-to-listening median
#   BENCH_NGINX_WORKERS=1   nginx worker processes (1: one core, like hermes-mcp and Node)
#   BENCH_TIMEOUT=10s  wrk's per-request timeout (a request that times out makes its run invalid)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${BENCH_SECONDS:-5}
runs=${BENCH_RUNS:-3}
conns=${BENCH_CONNS:-"1 16 64"}
loads=${BENCH_LOADS:-"ping tools_list hermes_result initialize hermes_task"}
starts=${BENCH_STARTS:-10}
nginx_workers=${BENCH_NGINX_WORKERS:-1}
timeout=${BENCH_TIMEOUT:-10s}
work=$root/bench/.work
run=$work/run          # this invocation's env files, task directory, logs; wiped at start
out=$root/bench/RESULTS.md
log() { printf 'bench: %s\n' "$*" >&2; }

# ---------- 1. what we need ----------
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v gnuplot >/dev/null || missing+=(gnuplot-nox)
command -v node >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} (apt-get)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
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

# The release flavour, whatever build/hermes-mcp points at; copied so that a concurrent build
# cannot swap the binary under a run.
make -s SANITIZE= all fakes >&2
mkdir -p "$work/bin"
cp build/release/hermes-mcp build/release/fake-agent "$work/bin/"
hermes=$work/bin/hermes-mcp
fake=$work/bin/fake-agent

# ---------- 2. processes: started here, stopped on exit ----------
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_port FILE: the port of the first "listening on http://HOST:PORT" line in FILE.
wait_port() {
    local i port
    for i in $(seq 100); do
        port=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$1" | head -1)
        [ -n "$port" ] && { echo "$port"; return 0; }
        sleep 0.1
    done
    log "no listening line in $1:"; cat "$1" "${1%.out}.err" >&2 2>/dev/null || true
    return 1
}
rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$1/status"; }
free_port() {
    local p
    for p in $(seq 18080 18180); do
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
    done
    return 1
}
hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

rm -rf "$run"
mkdir -p -m 700 "$run" "$run/tasks" "$run/tasks/bench-result"
old_umask=$(umask)
umask 077               # the env files and keys below hold secrets
token=$(hex 32)
hex 24 > "$run/agent.key"

# The fake agent, answering at once.
"$fake" --port 0 --key-file "$run/agent.key" --delay-scale 0 --max-concurrent 0 \
    > "$run/fake.out" 2> "$run/fake.err" &
pids+=($!)
fake_port=$(wait_port "$run/fake.out")
printf 'API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=%s\nAPI_SERVER_KEY=%s\n' \
    "$fake_port" "$(cat "$run/agent.key")" > "$run/agent.env"

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

cat > "$run/hermes.env" <<EOF
MCP_PORT=0
MCP_AUTH_TOKEN=$token
RATE_LIMIT_PER_MIN=0
HERMES_ENV_PATH=$run/agent.env
TASKS_DIR=$run/tasks
AGENTS_FILE=$run/agents.yaml
LOG_LEVEL=warn
EOF

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
    kill -TERM "$p"; wait "$p" || true
    case "$line" in *listening*) ;; *) log "unexpected first line: $line"; exit 1 ;; esac
    start_ms+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
done

# hermes-mcp
"$hermes" serve --env-file "$run/hermes.env" > "$run/hermes.out" 2> "$run/hermes.err" &
hermes_pid=$!
pids+=($hermes_pid)
hermes_port=$(wait_port "$run/hermes.out")
sleep 0.5
hermes_rss_idle=$(rss_kb $hermes_pid)

# The SDK server (next to its node_modules so that its imports resolve).
cp bench/sdk-server.mjs "$work/node/"
BENCH_TOKEN=$token HERMES_URL=http://127.0.0.1:$hermes_port/mcp TASKS_DIR=$run/tasks PORT=0 \
    node "$work/node/sdk-server.mjs" > "$run/sdk.out" 2> "$run/sdk.err" &
sdk_pid=$!
pids+=($sdk_pid)
sdk_port=$(wait_port "$run/sdk.out")
sleep 0.5
sdk_rss_idle=$(rss_kb $sdk_pid)

# nginx: the same tools/list response bytes as hermes-mcp gives, from a file (POST to a static
# file is 405, which error_page turns into a 200 GET of the file), after the same bearer check.
mkdir -p "$run/nginx/root" "$run/nginx/tmp"
curl -sf -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' \
    "http://127.0.0.1:$hermes_port/mcp" > "$run/nginx/root/tools-list.json"
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
log "hermes-mcp :$hermes_port  sdk-server :$sdk_port  nginx :$nginx_port  fake-agent :$fake_port"

# ---------- 3. loads ----------
declare -A port=([hermes]=$hermes_port [sdk]=$sdk_port [nginx]=$nginx_port)
val() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< " ${line#BENCH}"; }  # a field of $line
servers_for() { case "$1" in hermes_task) echo hermes ;; *) echo hermes sdk nginx ;; esac; }
results=$run/results.tsv   # load conns run server rps p50_us p99_us failures socket_errors
: > "$results"
nproc=$(nproc)
for load in $loads; do
    for c in $conns; do
        threads=$((c < nproc ? c : nproc))
        for r in $(seq "$runs"); do
            for s in $(servers_for "$load"); do
                wlog=$run/wrk-$load-$c-$r-$s.log
                BENCH_TOKEN=$token BENCH_NONCE="$r$RANDOM" wrk --latency -t"$threads" -c"$c" \
                    -d"${seconds}s" --timeout "$timeout" -s "$root/bench/lua/$load.lua" \
                    "http://127.0.0.1:${port[$s]}/mcp" > "$wlog" 2>&1 || true
                line=$(grep '^BENCH ' "$wlog" || echo "BENCH rps=0 p50_us=0 p99_us=0 failures=-1 socket_errors=-1")
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$load" "$c" "$r" "$s" "$(val rps)" \
                    "$(val p50_us)" "$(val p99_us)" "$(val failures)" "$(val socket_errors)" >> "$results"
                log "$load c=$c run $r/$runs $s: $(val rps) req/s, p50 $(val p50_us) us, p99 $(val p99_us) us, failures $(val failures), socket errors $(val socket_errors)"
            done
        done
    done
done
sleep 1
hermes_rss_after=$(rss_kb $hermes_pid)
sdk_rss_after=$(rss_kb $sdk_pid)
nginx_rss=$( [ -n "$nginx_worker" ] && rss_kb "$nginx_worker" || echo "?")

# ---------- 4. RESULTS.md ----------
umask "$old_umask"
# med LOAD CONNS SERVER FIELD: median of FIELD over the valid runs (no failures, no socket errors).
med() {
    awk -F'\t' -v l="$1" -v c="$2" -v s="$3" -v f="$4" '
        $1 == l && $2 == c && $4 == s && $8 == 0 && $9 == 0 { v[++n] = $f }
        END {
            if (n == 0) { print "-"; exit }
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
            print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }' "$results"
}
valid() {
    awk -F'\t' -v l="$1" -v c="$2" -v s="$3" '$1 == l && $2 == c && $4 == s { n++; if ($8 == 0 && $9 == 0) ok++ }
        END { printf "%d/%d", ok, n }' "$results"
}
num() { [ "$1" = - ] && echo - || awk -v v="$1" -v d="$2" -v k="$3" 'BEGIN { printf "%.*f", d, v / k }'; }
ratio() { { [ "$1" = - ] || [ "$2" = - ] || [ "$2" = 0 ]; } && echo - || awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }
median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

title() {
    case "$1" in
    ping) echo 'ping' ;;
    tools_list) echo 'tools/list' ;;
    hermes_result) echo 'tools/call hermes_result (reads result.json from disk)' ;;
    initialize) echo 'initialize' ;;
    hermes_task) echo 'tools/call hermes_task, sync, through the fake agent (hermes-mcp only)' ;;
    esac
}
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
strip -o "$run/hermes-mcp.stripped" "$hermes"
{
    echo "# Benchmark results"
    echo
    echo "Written by \`bench/run.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Machine: $nproc CPUs, ${cpu:-unknown CPU},"
    echo "Linux $(uname -r). hermes-mcp $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src 2>/dev/null || echo ' (src modified)'),"
    echo "SDK $sdk_version on Node $(node --version), $("$nginx_bin" -v 2>&1 | sed 's/.*: //') ($nginx_workers worker), $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}')."
    echo
    echo "Each cell: median of the valid runs out of $runs × ${seconds} s (wrk, $nproc threads at most, one per"
    echo "connection below that); latencies in ms. A run is valid when every response was HTTP 200 with"
    echo "\`\"result\"\` and without \`\"error\"\` or \`\"isError\":true\`, and wrk saw no socket errors or timeouts ($timeout)."
    echo "Ratios are requests/s of hermes-mcp divided by the peer's. The machine is shared and noisy:"
    echo "read the ratios, not the absolute numbers. nginx returns the fixed tools/list response to every"
    echo "load (the HTTP ceiling), after the same bearer check."
    for load in $loads; do
        echo
        echo "## $(title "$load")"
        echo
        if [ "$load" = hermes_task ]; then
            echo "| conns | hermes-mcp req/s | p50 | p99 | valid |"
            echo "|---:|---:|---:|---:|---:|"
            for c in $conns; do
                echo "| $c | $(num "$(med "$load" "$c" hermes 5)" 0 1) | $(num "$(med "$load" "$c" hermes 6)" 3 1000) | $(num "$(med "$load" "$c" hermes 7)" 3 1000) | $(valid "$load" "$c" hermes) |"
            done
            continue
        fi
        echo "| conns | hermes-mcp req/s | p50 | p99 | SDK req/s | p50 | p99 | nginx req/s | p50 | p99 | hermes/SDK | hermes/nginx | valid (h/s/n) |"
        echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        for c in $conns; do
            row="| $c"
            for s in hermes sdk nginx; do
                row+=" | $(num "$(med "$load" "$c" $s 5)" 0 1) | $(num "$(med "$load" "$c" $s 6)" 3 1000) | $(num "$(med "$load" "$c" $s 7)" 3 1000)"
            done
            h=$(med "$load" "$c" hermes 5)
            row+=" | $(ratio "$h" "$(med "$load" "$c" sdk 5)") | $(ratio "$h" "$(med "$load" "$c" nginx 5)")"
            row+=" | $(valid "$load" "$c" hermes) $(valid "$load" "$c" sdk) $(valid "$load" "$c" nginx) |"
            echo "$row"
        done
    done
    echo
    echo "## Footprint"
    echo
    echo "| | hermes-mcp | SDK server (Node) | nginx worker |"
    echo "|---|---:|---:|---:|"
    echo "| RSS idle after start | $(num "$hermes_rss_idle" 1 1024) MiB | $(num "$sdk_rss_idle" 1 1024) MiB | |"
    echo "| RSS after the loads (idle again) | $(num "$hermes_rss_after" 1 1024) MiB | $(num "$sdk_rss_after" 1 1024) MiB | $(num "$nginx_rss" 1 1024) MiB |"
    echo "| binary size (as built, -O2 -g) | $(num "$(stat -c %s "$hermes")" 0 1024) KiB | | |"
    echo "| binary size (stripped) | $(num "$(stat -c %s "$run/hermes-mcp.stripped")" 0 1024) KiB | | |"
    echo "| start to \`listening\` line, median of $starts | $(echo "${start_ms[*]}" | median) ms | | |"
    echo
    echo "Starts (ms): ${start_ms[*]}."
} > "$out.tmp"

# ---------- 5. plot (optional) ----------
rm -f "$root/bench/tools-list.png"
case " $loads " in *" tools_list "*)
    if command -v gnuplot >/dev/null; then
        for c in $conns; do
            echo "$c $(med tools_list "$c" hermes 5) $(med tools_list "$c" sdk 5) $(med tools_list "$c" nginx 5)"
        done | sed 's/ - / 0 /g; s/ -$/ 0/' > "$run/tools-list.dat"
        gnuplot <<EOF && printf '\n![tools/list requests/s per connection count](tools-list.png)\n' >> "$out.tmp"
set terminal pngcairo size 800,480
set output "$root/bench/tools-list.png"
set title "tools/list: requests/s by connections (median of $runs × ${seconds} s)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "requests/s"
set xlabel "connections"
set key top left
set yrange [0:*]
plot "$run/tools-list.dat" using 2:xtic(1) title "hermes-mcp", '' using 3 title "SDK server", '' using 4 title "nginx (ceiling)"
EOF
    fi ;;
esac
mv "$out.tmp" "$out"
log "wrote bench/RESULTS.md (raw runs: $results, wrk logs: $run/)"
