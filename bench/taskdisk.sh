#!/usr/bin/env bash
# taskdisk.sh — sync hermes_task with the task files on disk against tmpfs, and two builds side by
# side (the disk target of bench/RESULTS.md: disk >= 0.8x tmpfs at 64 connections).
#
# Starts one fake agent (answering at once) and three servers: A (TASKS_DIR on disk), B (another
# build, or the same one, on disk beside A) and A again with TASKS_DIR on tmpfs; then R rounds of
# wrk, 5 s each server in turn, the load average before each run. The task directories are moved
# to bench/.work/trash/ at the end, not deleted: on ext4 without a journal the inodes freed by a
# deletion slow every inode allocation near them for minutes (the kernel's recently_deleted(): see
# bench/RESULTS.md), and the next run would pay for this one's. Remove that folder when nothing is measured.
#
# Usage: bench/taskdisk.sh [HERMES_A [HERMES_B]]   (default: build/release/hermes-mcp for both)
# Settings: BENCH_CONNS=64 BENCH_RUNS=3 BENCH_SECONDS=5; BENCH_FREED=N first creates and deletes N
# files beside the task directories (what a prune, or other work on the disk, leaves behind).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
cd "$root"
seconds=${BENCH_SECONDS:-5}; timeout=10s
conns=${BENCH_CONNS:-64}; rounds=${BENCH_RUNS:-3}
bin_a=${1:-build/release/hermes-mcp}; bin_b=${2:-$bin_a}
mkdir -p bench/.work/trash
run=$(mktemp -d "$root/bench/.work/taskdisk.XXXXXX"); shm=$(mktemp -d /dev/shm/hermes-taskdisk.XXXXXX)
cleanup() { stop_pids; rm -rf "$shm"; mv "$run" bench/.work/trash/ 2>/dev/null || true; }
stop_on_exit cleanup
umask 077
freed=${BENCH_FREED:-0}
if [ "$freed" -gt 0 ]; then
    mkdir "$run/freed"
    (cd "$run/freed" && seq -f 'f%.0f' "$freed" | xargs touch)
    rm -rf "$run/freed"
fi
token=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
od -An -tx1 -N24 /dev/urandom | tr -d ' \n' > "$run/agent.key"
build/release/fake-agent --port 0 --key-file "$run/agent.key" --max-concurrent 0 --delay-scale 0 \
    > "$run/fake.out" 2> "$run/fake.err" &
pids+=($!)
printf 'API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=%s\nAPI_SERVER_KEY=%s\n' "$(wait_port "$run/fake.out")" \
    "$(cat "$run/agent.key")" > "$run/fake.env"
# serve NAME BINARY TASKS_DIR: sets port.
serve() {
    mkdir -p "$3"
    printf 'MCP_PORT=0\nMCP_AUTH_TOKEN=%s\nRATE_LIMIT_PER_MIN=0\nRATE_LIMIT_AUTH_PER_MIN=0\nHERMES_ENV_PATH=%s\nTASKS_DIR=%s\nLOG_LEVEL=warn\n' \
        "$token" "$run/fake.env" "$3" > "$run/$1.env"
    "$2" serve --env-file "$run/$1.env" > "$run/$1.out" 2> "$run/$1.err" &
    pids+=($!)
    port=$(wait_port "$run/$1.out" 300)
}
serve a "$bin_a" "$run/tasks-a"; port_a=$port
serve b "$bin_b" "$run/tasks-b"; port_b=$port
serve tmpfs "$bin_a" "$shm/tasks"; port_t=$port
echo "A: $bin_a, B: $bin_b; sync hermes_task at $conns connections, $rounds rounds of ${seconds}s; $freed files freed just before"
for r in $(seq "$rounds"); do
    for s in a b tmpfs; do
        case $s in a) p=$port_a ;; b) p=$port_b ;; tmpfs) p=$port_t ;; esac
        sync
        la=$(cut -d' ' -f1 /proc/loadavg)
        BENCH_TOKEN=$token BENCH_NONCE="$r$RANDOM$s" wrk_run "$run/wrk.log" 2 "$conns" bench/lua/hermes_task.lua "http://127.0.0.1:$p/mcp"
        printf '%-5s round %s: %8s req/s  p50 %6s us  p99 %7s us  failures %s  (load %s)\n' "$s" "$r" \
            "$(val rps)" "$(val p50_us)" "$(val p99_us)" "$(val failures)" "$la"
    done
done
