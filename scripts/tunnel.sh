#!/usr/bin/env bash
# Runs a cloudflared quick tunnel to hermes-mcp and writes its public URL to PUBLIC_URL beside
# the env file (as the Node bridge's run-tunnel.sh did), so scripts and client setups can read the
# current URL instead of searching the log: a quick tunnel's name changes at every start.
# The file holds one line, the https://<random>.trycloudflare.com origin (the MCP endpoint is it
# plus /mcp); it is replaced atomically (temp file + rename), so a reader never sees half a URL.
# cloudflared's own output is passed through to stderr.
set -euo pipefail
prog=tunnel.sh

usage() {
    cat <<USAGE
usage: scripts/tunnel.sh [--env-file FILE] [--cloudflared PATH] [--origin URL] [--url-file FILE]

Starts 'cloudflared tunnel --no-autoupdate --url http://127.0.0.1:MCP_PORT' (MCP_PORT from the
env file, default 8765) and writes the public URL to PUBLIC_URL in the env file's directory.
Allow the name on the server with MCP_PUBLIC_HOSTS=.trycloudflare.com in the env file.
  --env-file FILE     the server's env file (default: .env), read for MCP_PORT when there is
                      no --origin
  --cloudflared PATH  the cloudflared binary (default: cloudflared on PATH)
  --origin URL        where the tunnel points (default: http://127.0.0.1:MCP_PORT)
  --url-file FILE     where the URL goes (default: PUBLIC_URL beside the env file)
Exit codes: cloudflared's own; 1 when it ended without printing a URL; 2 usage errors.
USAGE
}

die() { echo "$prog: $2" >&2; exit "$1"; }

env_file=.env
cloudflared=cloudflared
origin=
url_file=
while [ $# -gt 0 ]; do
    case $1 in
    --env-file) [ $# -ge 2 ] || die 2 "--env-file needs a FILE"; env_file=$2; shift ;;
    --env-file=*) env_file=${1#*=} ;;
    --cloudflared) [ $# -ge 2 ] || die 2 "--cloudflared needs a PATH"; cloudflared=$2; shift ;;
    --cloudflared=*) cloudflared=${1#*=} ;;
    --origin) [ $# -ge 2 ] || die 2 "--origin needs a URL"; origin=$2; shift ;;
    --origin=*) origin=${1#*=} ;;
    --url-file) [ $# -ge 2 ] || die 2 "--url-file needs a FILE"; url_file=$2; shift ;;
    --url-file=*) url_file=${1#*=} ;;
    -h | --help) usage; exit 0 ;;
    *) die 2 "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
# The env file is read for MCP_PORT only, so with --origin it is not needed at all (the systemd
# unit gives --origin and --url-file and cannot read the env file).
[ -n "$origin" ] || [ -r "$env_file" ] || die 2 "cannot read the env file $env_file; pass --env-file FILE or --origin URL"
command -v "$cloudflared" >/dev/null ||
    die 2 "cloudflared not found; install it or pass --cloudflared PATH"

# MCP_PORT only (never the token): the last plain or quoted assignment wins, as in the server.
port=
[ -n "$origin" ] || port=$(sed -n -E "s/^[[:blank:]]*(export[[:blank:]]+)?MCP_PORT=[\"']?([0-9]+)[\"']?[[:blank:]]*(#.*)?$/\2/p" \
    "$env_file" | tail -n 1)
port=${port:-8765}
[ -n "$origin" ] || [ "$port" != 0 ] || die 2 "MCP_PORT=0 picks a random port; set a fixed MCP_PORT in $env_file"
origin=${origin:-"http://127.0.0.1:$port"}
url_file=${url_file:-"$(cd "$(dirname -- "$env_file")" && pwd)/PUBLIC_URL"}

write_url() {
    local tmp="$url_file.tmp.$$"
    printf '%s\n' "$1" > "$tmp"
    mv -f -- "$tmp" "$url_file"
    echo "$prog: public URL $1 (MCP endpoint $1/mcp) written to $url_file" >&2
}

# cloudflared runs as the process substitution's own process ($!): a stop reaches it, and its
# exit status becomes ours.
exec {tunnel_out}< <(exec "$cloudflared" tunnel --no-autoupdate --url "$origin" 2>&1)
tunnel_pid=$!
trap 'kill -TERM "$tunnel_pid" 2>/dev/null || true' TERM INT HUP
found=
while IFS= read -r line <&"$tunnel_out"; do
    printf '%s\n' "$line" >&2
    url=$(printf '%s' "$line" | grep -o -E 'https://[A-Za-z0-9-]+\.trycloudflare\.com' | grep -v '^https://api\.' | head -n 1 || true)
    if [ -n "$url" ] && [ "$url" != "$found" ]; then
        write_url "$url"
        found=$url
    fi
done
rc=0
wait "$tunnel_pid" || rc=$?
[ -n "$found" ] || { echo "$prog: cloudflared ended (status $rc) without printing a trycloudflare.com URL" >&2; [ "$rc" != 0 ] || rc=1; }
exit "$rc"
