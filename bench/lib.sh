# lib.sh — helpers shared by the bench scripts (run.sh, gateway.sh, gwprofile.sh), sourced, so a
# fix to one of them reaches every script. Each script keeps its own log(), label() and tables.
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
