#!/usr/bin/env bash
# Installs what is missing, builds, and starts hermes-mcp on 127.0.0.1 next to the bundled demo
# agent (build/fake-agent, which speaks the Hermes Agent API), so there is something to talk to.
# Settings live in .dev/ (mode 700): hermes-mcp.env (with a fresh bearer token, mode 600),
# agent.env and agent.key for the demo agent, tasks/ and audit.jsonl.
# HERMES_MCP_PORT picks another port (default 8765). HERMES_ENV_PATH=<file> uses a real agent
# instead of the demo one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/deps.sh
make -j"$(nproc 2>/dev/null || echo 2)" all fakes

dev="$root/.dev"
env_file="$dev/hermes-mcp.env"
mkdir -p "$dev"
chmod 700 "$dev"
if ! grep -q '^MCP_AUTH_TOKEN=' "$env_file" 2>/dev/null; then
    build/hermes-mcp token gen --env-file "$env_file" >/dev/null
fi
port=${HERMES_MCP_PORT:-8765}
grep -q '^MCP_PORT=' "$env_file" || echo "MCP_PORT=$port" >> "$env_file"
sed -i "s/^MCP_PORT=.*/MCP_PORT=$port/" "$env_file"

agent_env=${HERMES_ENV_PATH:-}
if [ -z "$agent_env" ]; then
    key_file="$dev/agent.key"
    [ -s "$key_file" ] || (umask 077; od -An -tx1 -N24 /dev/urandom | tr -d ' \n' > "$key_file")
    chmod 600 "$key_file"
    build/fake-agent --port 0 --key-file "$key_file" > "$dev/agent.out" 2> "$dev/agent.err" &
    agent_pid=$!
    trap 'kill $agent_pid 2>/dev/null || true' EXIT
    for _ in $(seq 50); do grep -q "listening on" "$dev/agent.out" 2>/dev/null && break; sleep 0.1; done
    agent_port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$dev/agent.out")
    [ -n "$agent_port" ] || { echo "dev.sh: the demo agent did not start:"; cat "$dev/agent.err"; exit 1; }
    agent_env="$dev/agent.env"
    (umask 077; printf 'API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=%s\nAPI_SERVER_KEY=%s\n' \
        "$agent_port" "$(cat "$key_file")" > "$agent_env")
    echo "hermes-mcp: demo agent    http://127.0.0.1:$agent_port (build/fake-agent)"
fi
grep -q '^HERMES_ENV_PATH=' "$env_file" || echo "HERMES_ENV_PATH=$agent_env" >> "$env_file"
sed -i "s|^HERMES_ENV_PATH=.*|HERMES_ENV_PATH=$agent_env|" "$env_file"

cat <<MSG
hermes-mcp: MCP endpoint  http://127.0.0.1:$port/mcp
hermes-mcp: bearer token  MCP_AUTH_TOKEN in $env_file (mode 600; not printed)
hermes-mcp: try           curl -s http://127.0.0.1:$port/health
hermes-mcp: stop with Ctrl-C
MSG
build/hermes-mcp serve --env-file "$env_file"
