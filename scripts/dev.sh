#!/usr/bin/env bash
# Installs what is missing, builds, and starts hermes-mcp on 127.0.0.1 next to the bundled demo
# agent (build/fake-agent, which speaks the Hermes Agent API), so there is something to talk to.
# Settings live in .dev/ (mode 700): hermes-mcp.env (with a fresh bearer token, mode 600),
# agent.env and agent.key for the demo agent, tasks/ and audit.jsonl.
# HERMES_MCP_PORT picks another port (default 8765). HERMES_ENV_PATH=<file> uses a real agent
# instead of the demo one. HERMES_MCP_DEV_DIR=<dir> keeps the settings elsewhere than .dev/.
# It prints how to put the token into a shell (read from the env file, never echoed) and a
# first call that works (curl, and the MCP Inspector's CLI).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib/wait-port.sh"
cd "$root"
port=${HERMES_MCP_PORT:-8765}
# Said first, before any build or banner: a busy port is the commonest first-run failure.
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "dev.sh: port $port on 127.0.0.1 is already in use (another hermes-mcp or dev.sh?" \
        "'ss -ltnp sport = :$port' shows which process)." >&2
    echo "dev.sh: stop it, or pick another port: HERMES_MCP_PORT=$((port + 1)) scripts/dev.sh" >&2
    exit 1
fi
if [ "${HERMES_MCP_DEV_NO_BUILD:-0}" != 1 ]; then # tests run it against the build under test
    scripts/deps.sh
    make -j"$(nproc 2>/dev/null || echo 2)" all fakes
fi

dev=${HERMES_MCP_DEV_DIR:-"$root/.dev"}
env_file="$dev/hermes-mcp.env"
mkdir -p "$dev"
chmod 700 "$dev"
if ! grep -q '^MCP_AUTH_TOKEN=' "$env_file" 2>/dev/null; then
    build/hermes-mcp token gen --env-file "$env_file" >/dev/null
fi
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
    agent_port=$(wait_port "$dev/agent.out" 50) || { echo "dev.sh: the demo agent did not start"; exit 1; }
    agent_env="$dev/agent.env"
    (umask 077; printf 'API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=%s\nAPI_SERVER_KEY=%s\n' \
        "$agent_port" "$(cat "$key_file")" > "$agent_env")
    echo "hermes-mcp: demo agent    http://127.0.0.1:$agent_port (build/fake-agent)"
fi
grep -q '^HERMES_ENV_PATH=' "$env_file" || echo "HERMES_ENV_PATH=$agent_env" >> "$env_file"
sed -i "s|^HERMES_ENV_PATH=.*|HERMES_ENV_PATH=$agent_env|" "$env_file"

# The commands below are printed for copying into another shell: the token is read from the
# env file there and never appears here (nor in argv: curl reads the header from a pipe).
rel_env=${env_file#"$root/"}
cat <<MSG
hermes-mcp: MCP endpoint  http://127.0.0.1:$port/mcp
hermes-mcp: bearer token  MCP_AUTH_TOKEN in $env_file (mode 600; not printed)
hermes-mcp: binary        $root/build/hermes-mcp (not on PATH; e.g. build/hermes-mcp doctor --env-file $rel_env)
hermes-mcp: stop with Ctrl-C

In another shell, from $root:
  export HERMES_MCP_TOKEN="\$(sed -n 's/^MCP_AUTH_TOKEN=//p' $rel_env)"
  curl -s http://127.0.0.1:$port/mcp -H @<(echo "Authorization: Bearer \$HERMES_MCP_TOKEN") \\
    -H 'Content-Type: application/json' -H 'Accept: application/json' \\
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_agents","arguments":{}}}'
  # (the Inspector reads the header from a pipe too: the token is in no argv, ps or npm log)
  MCP_INSPECTOR_SECRET_STORE=memory npx -y @modelcontextprotocol/inspector@2.12.0 --cli --server hermes \\
    --config <(printf '{"mcpServers":{"hermes":{"type":"http","url":"http://127.0.0.1:$port/mcp","headers":{"Authorization":"Bearer %s"}}}}' "\$HERMES_MCP_TOKEN") \\
    --method tools/list
  build/hermes-mcp smoke --base http://127.0.0.1:$port --env-file $rel_env

MSG
build/hermes-mcp serve --env-file "$env_file"
