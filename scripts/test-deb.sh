#!/usr/bin/env bash
# The Debian package as a user gets it: make deb, unpack the .deb into a scratch root, check its
# man pages render without warnings, then run the installed binary's version, doctor and smoke
# against a server it started from that root (on a free port, with a token file and the fake
# agent). Any failure fails the test command.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

t0=$(date +%s)
deb=$(scripts/deb.sh | tail -1)
echo "deb: built $deb ($(stat -c %s "$deb") bytes) in $(( $(date +%s) - t0 )) s"
make -s fakes >/dev/null

scratch=$(mktemp -d "${TMPDIR:-/tmp}/hm-deb-XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$scratch"
}
trap cleanup EXIT
dpkg -x "$deb" "$scratch/root"
bin="$scratch/root/usr/bin/hermes-mcp"
fail() { echo "deb: FAIL $*" >&2; exit 1; }

want="hermes-mcp $(sed -n 's/^#define HM_VERSION "\(.*\)"$/\1/p' src/base/version.h)"
got=$("$bin" version) || fail "version exited $?"
[ "$got" = "$want" ] || fail "version printed '$got', not '$want'"
echo "deb: ok version ($got)"

pages=("$scratch"/root/usr/share/man/man1/hermes-mcp.1.gz
       "$scratch"/root/usr/share/man/man5/hermes-mcp.env.5.gz
       "$scratch"/root/usr/share/man/man5/hermes-mcp-gateway.yaml.5.gz)
for page in "${pages[@]}"; do
    [ -f "$page" ] || fail "no man page $page"
    warn=$(zcat "$page" | groff -man -Tutf8 -ww -z 2>&1) || fail "groff failed on $page: $warn"
    [ -z "$warn" ] || fail "$page renders with warnings: $warn"
    MANPAGER=cat man -l "$page" 2>/dev/null | grep -q "hermes-mcp" || fail "man -l $page shows nothing"
done
echo "deb: ok man pages render (${#pages[@]})"

# The fake agent, its key in a mode-600 file; the server's env file names it.
# Waits for "listening on http://HOST:PORT" in file $1 (from process $2); prints PORT.
listening_port() {
    for _ in $(seq 1 300); do
        port=$(sed -n 's|.*listening on http://[^/ ]*:\([0-9][0-9]*\).*|\1|p' "$1" | head -1)
        [ -n "$port" ] && { echo "$port"; return 0; }
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
mkdir -p "$scratch/home"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$scratch/key"
chmod 600 "$scratch/key"
build/fake-agent --port 0 --key-file "$scratch/key" >"$scratch/fake.out" 2>"$scratch/fake.err" &
pids+=($!)
fake_port=$(listening_port "$scratch/fake.out" "${pids[-1]}") || fail "the fake agent did not start: $(cat "$scratch/fake.err")"
printf 'API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=%s\nAPI_SERVER_KEY=%s\n' "$fake_port" \
    "$(cat "$scratch/key")" >"$scratch/agent.env"
chmod 600 "$scratch/agent.env"
env="$scratch/env"
printf 'MCP_PORT=0\nHERMES_ENV_PATH=%s\nAGENTS_FILE=%s\n' "$scratch/agent.env" \
    "$scratch/agents.yaml" >"$env"
chmod 600 "$env"
HOME="$scratch/home" "$bin" token gen --env-file "$env" >/dev/null || fail "token gen exited $?"

HOME="$scratch/home" "$bin" serve --env-file "$env" >"$scratch/serve.out" 2>"$scratch/serve.err" &
pids+=($!)
port=$(listening_port "$scratch/serve.out" "${pids[-1]}") || fail "serve did not start: $(cat "$scratch/serve.err")"
echo "deb: ok serve (port $port)"

HOME="$scratch/home" "$bin" doctor --env-file "$env" --timeout 5 >"$scratch/doctor.out" 2>&1 ||
    fail "doctor exited $?: $(cat "$scratch/doctor.out")"
echo "deb: ok doctor ($(grep -c '^ok ' "$scratch/doctor.out") checks ok)"

HOME="$scratch/home" "$bin" smoke --base "http://127.0.0.1:$port" --env-file "$env" \
    >"$scratch/smoke.out" 2>&1 || fail "smoke exited $?: $(cat "$scratch/smoke.out")"
grep -q '^FAIL' "$scratch/smoke.out" && fail "smoke: $(cat "$scratch/smoke.out")"
echo "deb: ok smoke ($(grep -c '^ok ' "$scratch/smoke.out") checks ok)"
echo "deb: the package passed"
