# lib.sh — helpers shared by the bench scripts (run.sh, gateway.sh, gwprofile.sh), sourced, so a
# fix to one of them reaches every script. Each script keeps its own log(), cleanup and tables.
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
