#!/usr/bin/env bash
# Puts each integration test file still lying flat in tests/integration/ into its component
# folder, tests/integration/<component>/ (the table below), and the shared helpers into tests/lib/;
# then fixes the relative imports of what moved (and of tests/hostile/) and every reference to an
# old path in the tracked files (docs, comments, the runner). Files already in a folder stay:
# run it again after merging a branch that added flat files.
#   scripts/test-folders.sh [-n]     -n: only print what would move
# A file the table does not place stops the script before anything moves: add its line below.
set -euo pipefail
cd "$(dirname "$0")/.."
dry=0; [ "${1:-}" = -n ] && dry=1

# folder NAME: where NAME (a file in tests/integration/) belongs.
folder() {
    case $1 in
        lib.mjs | durations.mjs) echo lib ;;                        # shared helpers, the runner's reporter
        gw* | gateway.test.mjs | approvals.test.mjs | apprtasks.test.mjs) echo gateway ;;
        oauth* | consent*.test.mjs | principals.test.mjs) echo oauth ;;
        agentapprovals.test.mjs | backlog.test.mjs | bridge.test.mjs | jobs.test.mjs | \
            mcptasks.test.mjs | ownership.test.mjs | reset.test.mjs | retention.test.mjs | \
            sdkerrors.test.mjs) echo bridge ;;                     # the Hermes tools and their tasks
        http.test.mjs | nul.test.mjs | regress.test.mjs | security.test.mjs | idle.test.mjs) echo http ;;
        sdk.test.mjs | eras.test.mjs | connectors.test.mjs) echo clients ;;  # real clients end to end
        approvalsock.test.mjs | cli.test.mjs | doctor.test.mjs | logs.test.mjs | metrics.test.mjs | \
            reload.test.mjs | service.test.mjs | smoke.test.mjs | sandbox.test.mjs | proxy.test.mjs | \
            dropin.test.mjs | pythonenv.test.mjs | harness.test.mjs) echo ops ;;
        docs.test.mjs | gendocs.test.mjs | newuser.test.mjs) echo docs ;;
        *) return 1 ;;
    esac
}

moves=()
for f in tests/integration/*.mjs; do
    [ -e "$f" ] || continue
    name=${f##*/}
    d=$(folder "$name") || { echo "test-folders: no folder for $name: add it to folder() in $0" >&2; exit 1; }
    if [ "$d" = lib ]; then moves+=("$f tests/lib/$name"); else moves+=("$f tests/integration/$d/$name"); fi
done
[ ${#moves[@]} -gt 0 ] || { echo "test-folders: nothing lies flat in tests/integration/"; exit 0; }
if [ "$dry" = 1 ]; then printf '%s\n' "${moves[@]}" | sed 's/ / -> /'; exit 0; fi

for m in "${moves[@]}"; do
    read -r from to <<< "$m"
    mkdir -p "$(dirname "$to")"
    git mv "$from" "$to"
    # The helpers are two folders up from a component folder; a root computed from this file's
    # place is one level further.
    case $to in
        tests/integration/*/*)
            sed -i -e "s|\(['\"]\)\./lib\.mjs\1|\1../../lib/lib.mjs\1|g" \
                -e "s|import\.meta\.url)), '\.\./\.\.')|import.meta.url)), '../../..')|" "$to" ;;
    esac
    # Every mention of the old path in the tracked text files.
    git grep -lzF "$from" -- ':!*.png' | xargs -0r sed -i "s|$from|$to|g"
done
# tests/hostile/ imports the helpers from their new place.
git grep -lzF "'../integration/lib.mjs'" -- tests/hostile | xargs -0r sed -i "s|'\.\./integration/lib\.mjs'|'../lib/lib.mjs'|g"
echo "test-folders: ${#moves[@]} files moved"
