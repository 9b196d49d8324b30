#!/usr/bin/env bash
# Every symbol a layer library exports (nm: global T, D, B or R) carries a prefix of its layer or
# its module, so that eight static libraries linked into one binary cannot collide and a reader
# can find a function's file from its name. A symbol defined in src/<layer>/<module>.c may start
# with:
#   <layer>_               the layer's own API and its files' shared internals (mcp_, bridge_)
#   <module>               the module's name (buf_, loop_, sdnotifyf, siphash24)
#   <module minus s>_      a plural module's singular (principals.c: principal_)
#   <group>_               a module group, the file name before its first '_' (as_*.c: as_)
# or one of the aliases below, each a module's established vocabulary. Usage:
#   scripts/check-symbols.sh [build/release]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}

# module:prefix... pairs; a prefix ending in '$' is one exact name.
aliases=(
    "mem:x wipe_free$"        # the allocation wrappers every C project has (xmalloc)
    "toolerr:tool_error_"
    "configtab:config_"
    "httpd:hreq_"             # one request's API, in the server that owns requests
    "contractfile:contract_"
    "oautherr:oauth_err_"
    "clientmeta:authserver_redirect_ok"
    "as_clients:authserver_client"
    "tokensfile:tokens_ principal" # the TOKENS_FILE's principals
    "oauthtokens:tokenstore_"      # the store of issued OAuth tokens
    "jwt:jwks_"                    # the key sets that verify tokens
    "agentclient:agent_"           # one agent's requests
    "agentset:agents_ agent_"      # the bridge's agents: registry, default agent, health
    "agentfile:agentcfg_"          # the agents' files read from disk
    "agentsyaml:registry_"         # the agents registry's YAML
    "taskfiles:tasks_files$ tasks_text_ok$" # hermes_files, the tasks module's reading of a task directory
    # main.c's command dispatch calls these by their old names; its command table renames them.
    "approvalscli:approvals_usage$"
    "gwcheck:gateway_usage$"
    "taskscli:tasks_usage$"
    # src/gateway: each file's prefix as gwcore.h lists it (gateway_ and child_, httpup_,
    # jscan_, startctx_, gw_provider_, gwload_, gwinterp_ pass as layer or module names).
    "upstream:up_" "rpcclient:up_" "uplist:up_"
    "circuit:gw_circuit_" "gwsmoke:gw_smoke_" "gwinstance:gwi_"
    "gwcall:gw_call_" "gwapprove:gw_approval_" "gwtask:gw_task_"
    "relay:gw_relay_" "mrtr:gw_mrtr_"
    "gwsurface:gw_plan_" "gwguard:gw_pins_" "gwresources:gw_resources_" "gwprobe:gw_probe_"
    "gwevent:gw_event$ gw_event_"
    "gwpin:gw_pin_ gw_pins_" "gwpolicy:gw_policy_" "gwsecret:gw_secret_" "gwstore:gw_store_"
    "gwfile:gw_tool_name_ok$ gw_upstream_name_ok$"
    "gwrules:gw_tool_ gw_verdict_name$ gw_bridge_tool_kept$ gw_include_unmatched$"
)

fail=0
for lib in "$build"/lib/lib*.a; do
    [ -e "$lib" ] || { echo "symbols: no $build/lib/*.a (build first)"; exit 1; }
    layer=$(basename "$lib" .a)
    layer=${layer#lib}
    bad=$(nm -g --defined-only -A "$lib" | awk -v L="$layer" -v A="${aliases[*]}" '
        BEGIN {
            n = split(A, w, " ")
            for (i = 1; i <= n; i++) {
                if (w[i] ~ /:/) { split(w[i], kv, ":"); mod = kv[1]; w[i] = kv[2] }
                if (w[i] != "") extra[mod] = extra[mod] " " w[i]
            }
        }
        $2 ~ /^[TDBR]$/ {
            split($1, f, ":"); m = f[2]; sub(/\.o$/, "", m); s = $3
            sing = m; sub(/s$/, "", sing); g = m; sub(/_.*/, "", g)
            if (index(s, L "_") == 1 || index(s, m) == 1 || index(s, sing "_") == 1 ||
                (g != m && index(s, g "_") == 1))
                next
            k = split(extra[m] " " extra["*" L], p, " ")
            for (i = 1; i <= k; i++) {
                if (p[i] == "") continue
                if (p[i] ~ /\$$/) { if (s == substr(p[i], 1, length(p[i]) - 1)) next }
                else if (index(s, p[i]) == 1) next
            }
            print "  " L "/" m ".c: " s
        }')
    if [ -n "$bad" ]; then
        echo "symbols: $layer exports names without a prefix of its layer or module:"
        echo "$bad"
        fail=1
    fi
done
[ "$fail" -eq 0 ] && echo "symbols: ok"
exit "$fail"
