# shellcheck shell=bash disable=SC2034,SC2154 # sets and reads the sourcing script's variables
# lib.sh — helpers shared by the bench scripts (run.sh, gateway.sh, gwprofile.sh), sourced, so a
# fix to one of them reaches every script. Each script keeps its own log(), label() and tables.
#
# Sourced after root is set: it brings scripts/lib/wait-port.sh along.
. "$root/scripts/lib/wait-port.sh"
# wrk_settings: the settings run.sh and gateway.sh share, from the environment (run.sh passes its
# own to gateway.sh): seconds, runs, conns, timeout (wrk's), cg_n (callgrind) and work (the
# git-ignored bench/.work; $root must be set).
wrk_settings() {
    seconds=${BENCH_SECONDS:-5}
    runs=${BENCH_RUNS:-3}
    conns=${BENCH_CONNS:-"1 16 64"}
    timeout=${BENCH_TIMEOUT:-10s}
    cg_n=${BENCH_CALLGRIND:-1000}
    work=$root/bench/.work
}
# wrk_run WLOG THREADS CONNS SCRIPT URL: one wrk run of $seconds with wrk's latency report into
# WLOG (a failed run is a row of failures, not an error); sets line to its BENCH summary line.
wrk_run() {
    wrk --latency -t"$2" -c"$3" -d"${seconds}s" --timeout "$timeout" -s "$4" "$5" > "$1" 2>&1 || true
    wrk_line "$1"
}
# wrk_line LOG: sets line to LOG's BENCH line (one of failures when it has none).
wrk_line() { line=$(grep '^BENCH ' "$1" || echo "BENCH rps=0 p50_us=0 p99_us=0 failures=-1 socket_errors=-1"); }
# val FIELD: a field of $line (rps, p50_us, p99_us, failures, socket_errors ...).
val() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< " ${line#BENCH}"; }
# cg_counted WRKLOG N CGOUT WHAT: cg_total, the instructions callgrind counted in CGOUT when the
# counting wrk run WRKLOG (bench/lua's BENCH_COUNT) made exactly N requests without a failure;
# otherwise "-", and log (the caller's) says WHAT did not all succeed.
cg_counted() {
    cg_total=-
    if grep -q "^BENCH_COUNTED n=$2 failures=0" "$1"; then
        cg_total=$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$3" | head -1)
    else
        log "$4 did not all succeed ($1)"
    fi
}
# Results files (results.tsv) have a row per wrk run: load conns run server rps p50_us p99_us
# failures socket_errors [more]; a run is valid without failures and socket errors.
# results_median FILE LOAD CONNS SERVER FIELD: the median of column FIELD over the valid runs.
results_median() {
    awk -F'\t' -v l="$2" -v c="$3" -v s="$4" -v f="$5" '
        $1 == l && $2 == c && $4 == s && $8 == 0 && $9 == 0 { v[++n] = $f }
        END {
            if (n == 0) { print "-"; exit }
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
            print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        }' "$1"
}
# results_valid FILE LOAD CONNS SERVER: "valid/all" runs.
results_valid() {
    awk -F'\t' -v l="$2" -v c="$3" -v s="$4" '$1 == l && $2 == c && $4 == s { n++; if ($8 == 0 && $9 == 0) ok++ }
        END { printf "%d/%d", ok, n }' "$1"
}
#
# stop PID: SIGTERM, then waits for it (nothing when already gone).
stop() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
# status_kb PID FIELD: a kB field of /proc/PID/status (VmRSS, VmHWM...).
status_kb() { sed -n "s/^$2:[[:space:]]*\([0-9]*\).*/\1/p" "/proc/$1/status"; }
# free_port [FROM]: the first loopback port nothing accepts on among FROM..FROM+100 (default
# 18080; the scripts use their own ranges so that servers one of them still runs are skipped).
free_port() {
    local p from=${1:-18080}
    for p in $(seq "$from" $((from + 100))); do
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
    done
    return 1
}
# num VALUE DECIMALS DIVISOR: VALUE / DIVISOR with that many decimals ("-" stays "-").
num() { [ "$1" = - ] && echo - || awk -v v="$1" -v d="$2" -v k="$3" 'BEGIN { printf "%.*f", d, v / k }'; }
# median: the median of the numbers on stdin (separated by spaces or lines).
median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# check VALUE OP LIMIT: "yes" or "**no**" (or "-" without a value); OP is <, <=, >= or ==.
check() { [ "$1" = - ] || [ -z "$1" ] && echo - || awk -v v="$1" -v o="$2" -v l="$3" 'BEGIN {
    ok = (o == "<" ? v < l : o == "<=" ? v <= l : o == ">=" ? v >= l : v == l); print ok ? "yes" : "**no**" }'; }

# Processes a script starts: append each PID to pids. stop_pids: SIGTERM to all, then waits.
# stop_on_exit [FN]: FN (default stop_pids; one that does more calls stop_pids itself) runs at
# exit, and ^C or SIGTERM exits 130 through it.
pids=()
stop_pids() {
    local p
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
# shellcheck disable=SC2064 # the function is chosen now, on purpose
stop_on_exit() { trap "${1:-stop_pids}" EXIT; trap 'exit 130' INT TERM; }

# plot_pair DAT PNG TITLE XLABEL EXTRA SERVER...: a throughput histogram beside a p50/p99 latency
# chart (log scale). DAT's columns: x, then req/s of each SERVER, then p50 and p99 (ms) of each,
# "-" when missing. EXTRA: gnuplot lines for the throughput chart only (a reference line), or "".
# Servers are named by the caller's label().
plot_pair() {
    local dat=$1 png=$2 title=$3 xlabel=$4 extra=$5 s k=0 bars="" lines=""
    shift 5
    for s in "$@"; do
        k=$((k + 1))
        bars+="${bars:+, }'$dat' using $((k + 1))$( [ $k = 1 ] && echo ':xtic(1)') title '$(label "$s")' lc $k"
        lines+="${lines:+, }'$dat' using 0:$(($# + 2 * k)):xtic(1) with linespoints lc $k dt 1 pt 7 title '$(label "$s") p50'"
        lines+=", '$dat' using 0:$(($# + 2 * k + 1)) with linespoints lc $k dt 2 pt 6 title '$(label "$s") p99'"
    done
    gnuplot <<EOF
set terminal pngcairo size 1200,460 font ",10" noenhanced
set output "$png"
set datafile missing "-"
set multiplot layout 1,2 title "$title"
set title "throughput"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "requests/s"
set xlabel "$xlabel"
set key below horizontal font ",9"
set yrange [0:*]
$extra
plot $bars
unset arrow
unset label
set title "latency (solid p50, dashed p99)"
set style data linespoints
set style fill empty
set logscale y
set yrange [*:*]
set ylabel "ms (log scale)"
set offsets 0.3, 0.3, 0, 0
plot $lines
unset multiplot
EOF
}
