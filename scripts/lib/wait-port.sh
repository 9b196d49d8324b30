# wait-port.sh — sourced by the scripts that start our servers (dev.sh, conformance.sh,
# bench/run.sh, tests/fakes/selftest.sh): one way to wait for a server to listen.
#
# wait_port FILE [TRIES]: prints the port of the first "listening on http://HOST:PORT" line that
# hermes-mcp, the conformance server or the fake agent writes to FILE (its stdout), polling every
# 0.1 s up to TRIES times (default 100). When none comes it returns 1 and shows FILE and the
# stderr beside it (FILE with .out replaced by .err) on stderr.
wait_port() {
    local i port
    for i in $(seq "${2:-100}"); do
        port=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9][0-9]*\).*/\1/p' "$1" 2>/dev/null | head -1)
        [ -n "$port" ] && { echo "$port"; return 0; }
        sleep 0.1
    done
    echo "no listening line in $1:" >&2
    cat "$1" "${1%.out}.err" >&2 2>/dev/null || true
    return 1
}
