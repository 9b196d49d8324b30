#!/usr/bin/env bash
# Installs what is missing, builds, and starts hermes-mcp on 127.0.0.1 with a ready-made env
# file (.dev/hermes-mcp.env, mode 600, holding a fresh bearer token).
# HERMES_MCP_PORT picks another port (default 8765).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/deps.sh
make -j"$(nproc 2>/dev/null || echo 2)"

env_file="$root/.dev/hermes-mcp.env"
mkdir -p "$root/.dev"
chmod 700 "$root/.dev"
if ! grep -q '^MCP_AUTH_TOKEN=' "$env_file" 2>/dev/null; then
    build/hermes-mcp token gen --env-file "$env_file" >/dev/null
fi
port=${HERMES_MCP_PORT:-8765}
grep -q '^MCP_PORT=' "$env_file" || echo "MCP_PORT=$port" >> "$env_file"
sed -i "s/^MCP_PORT=.*/MCP_PORT=$port/" "$env_file"

cat <<MSG
hermes-mcp: MCP endpoint  http://127.0.0.1:$port/mcp
hermes-mcp: bearer token  MCP_AUTH_TOKEN in $env_file (mode 600; not printed)
hermes-mcp: try           curl -s http://127.0.0.1:$port/health
hermes-mcp: stop with Ctrl-C
MSG
exec build/hermes-mcp serve --env-file "$env_file"
