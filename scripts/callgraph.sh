#!/bin/sh
# callgraph.sh DIR: the file-level call graph of the objects DIR/*.o (DIR/**/*.o), from nm: an
# object that leaves a symbol undefined (U) which another object of DIR defines (T, D, B, R)
# calls (or reads) that object. Prints the circles of calls (strongly connected components of
# more than one file), largest first, and the largest one's size; a reader sees which files can
# only be understood together.
#   scripts/callgraph.sh build/release/gateway
#   scripts/callgraph.sh -e build/release/gateway    # the edges too
set -eu
edges=0
if [ "${1:-}" = "-e" ]; then edges=1; shift; fi
dir=${1:?usage: callgraph.sh [-e] DIR}
objs=$(find "$dir" -name '*.o' | sort)
[ -n "$objs" ] || { echo "callgraph: no objects under $dir" >&2; exit 1; }
for o in $objs; do
    f=${o#"$dir"/}
    nm "$o" | awk -v f="${f%.o}" '$1 ~ /^[TDBRVW]$/ { print "D", f, $2; next }
                                  NF == 3 && $2 ~ /^[TDBRVW]$/ { print "D", f, $3; next }
                                  $1 == "U" { print "U", f, $2 }'
done | awk -v edges="$edges" '
$1 == "D" { def[$3] = $2; files[$2] = 1; next }
$1 == "U" { use[++nu] = $2 " " $3; files[$2] = 1 }
END {
    for (i = 1; i <= nu; i++) {
        split(use[i], p, " ")
        if (!(p[2] in def) || def[p[2]] == p[1]) continue
        e = p[1] SUBSEP def[p[2]]
        if (e in adj) continue
        adj[e] = 1; out[p[1]] = out[p[1]] " " def[p[2]]; ne++
        if (edges) printf "edge %s -> %s (%s)\n", p[1], def[p[2]], p[2]
    }
    n = 0; for (f in files) nf++
    idx = 0; nscc = 0
    for (f in files) if (!(f in index_)) strong(f)
    best = 1
    for (s = 1; s <= nscc; s++) if (size[s] > best) best = size[s]
    printf "files %d, edges %d\n", nf, ne
    for (k = best; k >= 2; k--)
        for (s = 1; s <= nscc; s++)
            if (size[s] == k) printf "circle of %d: %s\n", k, members[s]
    printf "largest circle: %d file%s\n", best, best == 1 ? "" : "s"
}
# Tarjan; locals after the extra spaces.
function strong(v,    w, i, m, lst) {
    index_[v] = low[v] = ++idx; stack[++sp] = v; on[v] = 1
    m = split(out[v], lst, " ")
    for (i = 1; i <= m; i++) {
        w = lst[i]
        if (!(w in index_)) { strong(w); if (low[w] < low[v]) low[v] = low[w] }
        else if (on[w] && index_[w] < low[v]) low[v] = index_[w]
    }
    if (low[v] == index_[v]) {
        nscc++; size[nscc] = 0; members[nscc] = ""
        do { w = stack[sp--]; on[w] = 0; size[nscc]++; members[nscc] = members[nscc] " " w }
        while (w != v)
        members[nscc] = sortwords(members[nscc])
    }
}
function sortwords(s,    a, n, i, j, t, r) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) {
        t = a[i]
        for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]
        a[j+1] = t
    }
    r = ""; for (i = 1; i <= n; i++) r = r (i > 1 ? " " : "") a[i]
    return r
}'
