#!/usr/bin/env bash
# Puts promtool (Prometheus' checker for the text exposition format) into the git-ignored
# tools/promtool/ and prints its path. It comes from Debian's prometheus package, unpacked
# without installing it (installing would enable a Prometheus server on the machine).
# A promtool already on PATH is used as is. Exits 1 (message on stderr) when neither works;
# tests then fall back to their own parser of the format.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/tools/promtool"
bin="$dir/usr/bin/promtool"
if command -v promtool >/dev/null 2>&1; then command -v promtool; exit 0; fi
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then echo "$bin"; exit 0; fi
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # apt's download user must be able to write here
if ! (cd "$tmp" && apt-get download prometheus >&2 2>/dev/null) ||
    ! dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x" ||
    [ ! -x "$tmp/x/usr/bin/promtool" ]; then
    echo "promtool: could not fetch Debian's prometheus package (apt-get download prometheus)" >&2
    exit 1
fi
mkdir -p "$dir/usr/bin"
mv "$tmp/x/usr/bin/promtool" "$bin"
echo "promtool: unpacked $("$bin" --version 2>&1 | head -1)" >&2
echo "$bin"
