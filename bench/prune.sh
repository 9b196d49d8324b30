#!/usr/bin/env bash
# Retention under load (issue 12): creates N finished task directories (request.json, run.json,
# result.json each; on disk, beside the other bench files), starts hermes-mcp on them with both
# limits off, measures tools/list at CONNS connections with wrk (the baseline), then runs the same
# load again while a SIGHUP with TASKS_MAX=KEEP makes the server prune N - KEEP of them. The
# prune runs on the pruning thread (nice 19); this shows whether it stalls the loop. Called by
# bench/run.sh (BENCH_PRUNE); runs on its own too.
#
# Environment: HERMES (the binary), WORK (a scratch directory; wiped and refilled here),
#   PRUNE_N=100000, PRUNE_KEEP=100, PRUNE_CONNS=64, PRUNE_SECONDS=5 (each wrk run),
#   PRUNE_TIMEOUT=10s (wrk's per-request timeout).
# Prints one JSON line on stdout: n, pruned, prune_ms, rps, p50_ms, p99_ms, base_p99_ms,
#   failures, socket_errors, window_ms (how long wrk ran after the SIGHUP). Exit 1 on failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib/wait-port.sh"
hermes=${HERMES:-$root/build/release/hermes-mcp}
work=${WORK:-$root/bench/.work/prune}
n=${PRUNE_N:-100000}
keep=${PRUNE_KEEP:-100}
conns=${PRUNE_CONNS:-64}
seconds=${PRUNE_SECONDS:-5}
timeout=${PRUNE_TIMEOUT:-10s}
log() { printf 'bench prune: %s\n' "$*" >&2; }

pid=""
cleanup() {
    [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
    rm -rf "$work/tasks"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rm -rf "$work"
mkdir -p -m 700 "$work"
umask 077
token=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')

# N task directories, as fast as the file system allows: a small C helper, one pass.
cat > "$work/mktasks.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
static void put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) { perror(path); exit(1); }
    close(fd);
}
int main(int argc, char **argv)
{
    long n = atol(argv[2]);
    char p[4096], t[1024];
    for (long i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/p-%07ld", argv[1], i);
        if (mkdir(p, 0700) < 0) { perror(p); return 1; }
        snprintf(p, sizeof p, "%s/p-%07ld/request.json", argv[1], i);
        snprintf(t, sizeof t, "{\"id\":\"p-%07ld\",\"agent\":\"hermes\",\"mode\":\"async\"}\n", i);
        put(p, t);
        snprintf(p, sizeof p, "%s/p-%07ld/run.json", argv[1], i);
        snprintf(t, sizeof t, "{\"run_id\":\"run_%032ld\",\"agent\":\"hermes\"}\n", i);
        put(p, t);
        snprintf(p, sizeof p, "%s/p-%07ld/result.json", argv[1], i);
        snprintf(t, sizeof t, "{\"id\":\"p-%07ld\",\"status\":\"completed\",\"summary\":\"done\","
                 "\"artifacts\":[],\"next_steps\":[],\"agent\":\"hermes\"}\n", i);
        put(p, t);
    }
    return 0;
}
C
cc -O2 -o "$work/mktasks" "$work/mktasks.c"
mkdir -p "$work/tasks"
t0=$(date +%s%N)
"$work/mktasks" "$work/tasks" "$n"
log "created $n task directories in $(( ($(date +%s%N) - t0) / 1000000 )) ms"

env_file=$work/env
write_env() {
    cat > "$env_file" <<ENV
MCP_PORT=0
MCP_AUTH_TOKEN=$token
RATE_LIMIT_PER_MIN=0
RATE_LIMIT_AUTH_PER_MIN=0
TASKS_DIR=$work/tasks
AGENTS_FILE=$work/agents.yaml
TASKS_RETENTION_DAYS=0
TASKS_MAX=$1
LOG_LEVEL=info
ENV
}
write_env 0
"$hermes" serve --env-file "$env_file" > "$work/hermes.out" 2> "$work/hermes.err" &
pid=$!
port=$(wait_port "$work/hermes.out" 600)
url=http://127.0.0.1:$port/mcp
threads=$(( conns < $(nproc) ? conns : $(nproc) ))
wrk_run() { # LOG
    BENCH_TOKEN=$token wrk --latency -t"$threads" -c"$conns" -d"${seconds}s" --timeout "$timeout" \
        -s "$root/bench/lua/tools_list.lua" "$url" > "$1" 2>&1 || true
}
val() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< " $(grep '^BENCH ' "$2" || true)"; }

wrk_run "$work/wrk-base.log"
log "baseline: $(grep '^BENCH ' "$work/wrk-base.log" || echo 'no result')"

write_env "$keep"
wrk_run "$work/wrk-prune.log" &
wrk_pid=$!
sleep 0.2
t_hup=$(date +%s%N)
kill -HUP "$pid"
wait "$wrk_pid"
window_ms=$(( ($(date +%s%N) - t_hup) / 1000000 ))
log "during the prune: $(grep '^BENCH ' "$work/wrk-prune.log" || echo 'no result')"
# The server logs "retention: pruned N tasks in M ms" when the prune is over; wait for it.
for _ in $(seq 600); do
    grep -q 'retention: pruned' "$work/hermes.err" && break
    sleep 0.1
done
line=$(grep -m1 'retention: pruned' "$work/hermes.err" || true)
[ -n "$line" ] || { log "no prune reported: $(tail -5 "$work/hermes.err")"; exit 1; }
pruned=$(sed -n 's/.*pruned \([0-9]*\) task.*/\1/p' <<< "$line")
prune_ms=$(sed -n 's/.* in \([0-9]*\) ms.*/\1/p' <<< "$line")
left=$(find "$work/tasks" -mindepth 1 -maxdepth 1 -name "[!.]*" | wc -l)
log "$line; $left task directories left"
p99() { awk -v v="$(val p99_us "$1")" 'BEGIN { printf "%.3f", v / 1000 }'; }
printf '{"n":%s,"pruned":%s,"left":%s,"prune_ms":%s,"rps":%s,"p50_ms":%s,"p99_ms":%s,"base_p99_ms":%s,"failures":%s,"socket_errors":%s,"window_ms":%s}\n' \
    "$n" "$pruned" "$left" "$prune_ms" "$(val rps "$work/wrk-prune.log")" \
    "$(awk -v v="$(val p50_us "$work/wrk-prune.log")" 'BEGIN { printf "%.3f", v / 1000 }')" \
    "$(p99 "$work/wrk-prune.log")" "$(p99 "$work/wrk-base.log")" \
    "$(val failures "$work/wrk-prune.log")" "$(val socket_errors "$work/wrk-prune.log")" "$window_ms"
