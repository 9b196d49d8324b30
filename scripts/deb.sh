#!/usr/bin/env bash
# make deb: build/hermes-mcp_<version>_<arch>.deb, built by dpkg-buildpackage (debhelper, see
# debian/) from a clean copy of the tracked files, then checked by lintian: an error fails.
# Prints the package's path last.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=$(sed -n 's/^#define HM_VERSION "\(.*\)"$/\1/p' src/base/version.h)
changelog=$(dpkg-parsechangelog -l debian/changelog -S Version)
if [ "$version" != "$changelog" ]; then
    echo "deb: debian/changelog is at $changelog but src/base/version.h at $version;" \
         "add a changelog entry (dch -v $version)" >&2
    exit 1
fi
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
work=build/deb
src="$work/hermes-mcp-$version"
rm -rf "$work"
mkdir -p "$src"
# The tracked and new files as they are in the work tree (edits included), nothing built.
git ls-files -z --cached --others --exclude-standard |
    tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$src"
(cd "$src" && dpkg-buildpackage -us -uc -b -j2) >"$work/build.log" 2>&1 || {
    tail -40 "$work/build.log" >&2
    echo "deb: dpkg-buildpackage failed; the log is $work/build.log" >&2
    exit 1
}
deb="build/hermes-mcp_${version}_${arch}.deb"
cp "$work/hermes-mcp_${version}_${arch}.deb" "$deb"
lintian --fail-on error --info "$deb" >&2
echo "$deb"
