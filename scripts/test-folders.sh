#!/usr/bin/env bash
# Puts each integration test file still lying flat in tests/integration/ into its component
# folder, tests/integration/<component>/ (the table below), and the shared helpers into tests/lib/;
# then fixes the relative imports of what moved (and of tests/hostile/) and every reference to an
# old path in the tracked files (docs, comments, the runner). Files already in a folder stay:
# run it again after merging a branch that added flat files.
#   scripts/test-folders.sh [-n]     -n: only print what would move
# A test file the table does not place stops the script before anything moves: add its line
# below. Any other .mjs file is a helper and goes to tests/lib/.
set -euo pipefail
cd "$(dirname "$0")/.."
dry=0; [ "${1:-}" = -n ] && dry=1

# folder NAME: where NAME (a file in tests/integration/) belongs.
folder() {
    case $1 in
        gw* | gateway.test.mjs | approvals.test.mjs | apprtasks.test.mjs) echo gateway ;;
        oauth* | consent*.test.mjs | principals.test.mjs) echo oauth ;;
        agentapprovals.test.mjs | backlog.test.mjs | bridge.test.mjs | jobs.test.mjs | \
            mcptasks.test.mjs | ownership.test.mjs | reset.test.mjs | retention.test.mjs | \
            sdkerrors.test.mjs) echo bridge ;;                     # the Hermes tools and their tasks
        http.test.mjs | nul.test.mjs | regress.test.mjs | security.test.mjs | idle.test.mjs | \
            lazycurl.test.mjs) echo http ;;
        sdk.test.mjs | eras.test.mjs | connectors.test.mjs) echo clients ;;  # real clients end to end
        approvalsock.test.mjs | cli.test.mjs | doctor.test.mjs | logs.test.mjs | metrics.test.mjs | \
            reload.test.mjs | service.test.mjs | smoke.test.mjs | sandbox.test.mjs | proxy.test.mjs | \
            dropin.test.mjs | pythonenv.test.mjs | harness.test.mjs) echo ops ;;
        docs.test.mjs | gendocs.test.mjs | newuser.test.mjs) echo docs ;;
        *.test.mjs) return 1 ;;
        *) echo lib ;;   # a helper (lib.mjs, the runner's durations.mjs ...): shared by all
    esac
}

moves=()
for f in tests/integration/*.mjs; do
    [ -e "$f" ] || continue
    name=${f##*/}
    d=$(folder "$name") || { echo "test-folders: no folder for $name: add it to folder() in $0" >&2; exit 1; }
    if [ "$d" = lib ]; then moves+=("$f tests/lib/$name"); else moves+=("$f tests/integration/$d/$name"); fi
done
if [ "$dry" = 1 ]; then printf '%s\n' "${moves[@]}" | sed 's/ / -> /'; exit 0; fi

for m in "${moves[@]}"; do
    read -r from to <<< "$m"
    mkdir -p "$(dirname "$to")"
    git mv "$from" "$to"
done
# Every mention of a flat path in the tracked text files, for every file placed (now or before:
# a merged branch may have brought a mention of an old path).
for to in tests/integration/*/*.mjs tests/lib/*.mjs; do
    [ -e "$to" ] || continue
    from=tests/integration/${to##*/}
    { git grep -lzF "$from" -- ':!*.png' || true; } | xargs -0r sed -i "s|$from|$to|g"
done
# A longer path may push a C comment past the line length: lay out again the C files it changed.
git diff --name-only -z -- '*.[ch]' | xargs -0r clang-format -i
# Imports, in every file of a component folder (a branch merged after the move may have added a
# flat import to a file that had moved): the helpers are two folders up, one from tests/hostile/;
# a root computed from the file's own place is one level further up. Each rewrite is idempotent.
for to in tests/integration/*/*.mjs; do
    [ -e "$to" ] || continue
    for h in tests/lib/*.mjs; do
        h=${h##*/}
        sed -i "s|\(['\"]\)\./${h//./\\.}\1|\1../../lib/$h\1|g" "$to"
    done
    sed -i "s|import\.meta\.url)), '\.\./\.\.')|import.meta.url)), '../../..')|" "$to"
done
for h in tests/lib/*.mjs; do
    h=${h##*/}
    { git grep -lzF "'../integration/$h'" -- tests/hostile || true; } | xargs -0r sed -i "s|'\.\./integration/${h//./\\.}'|'../lib/$h'|g"
done
echo "test-folders: ${#moves[@]} files moved"
