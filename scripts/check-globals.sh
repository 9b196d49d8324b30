#!/bin/sh
# check-globals.sh — no mutable file-scope state outside what must be process-wide. Lists every
# object in .data or .bss (static or not, function-local statics too) of the server's objects
# and fails on one not in the allow-list below, each with its reason. Read-only tables
# (.rodata, .data.rel.ro) are fine. Usage: scripts/check-globals.sh [BUILD_DIR]
set -eu
build=${1:-build/release}

# object-file:symbol (a function-local static has a ".N" suffix, ignored), then why.
allow='
base/log.o:current             the log level: one per process, set at start and on reload
base/atomicfile.o:seq          temp-file names unique within the process
base/sdnotify.o:warned         a bad NOTIFY_SOCKET is said once per process
base/strmap.o:seed             the hash seed, drawn once per process
base/strmap.o:seed_once        pthread_once for that seed
http/httpc.o:global_done       curl_global_init runs once per process
http/curlrt.o:api              the libcurl function table, set once (pthread_once) when first used
http/curlrt.o:loaded           the table dlopen filled, pointed to by api
http/curlrt.o:load_once        pthread_once for loading libcurl
http/curlrt.o:load_error       why libcurl could not be loaded, written once by that load
store/pgrt.o:loaded            the libpq function table dlopen filled, once (pthread_once)
store/pgrt.o:ok                whether that load succeeded, written once by it
store/pgrt.o:load_once         pthread_once for loading libpq
store/pgrt.o:load_error        why libpq could not be loaded, written once by that load
http/hreq.o:empty              a zero-length body MHD keeps (MHD_RESPMEM_PERSISTENT); never written
bridge/retention.o:seq         temp-directory names unique within the process (atomic)
gateway/child.o:children       the children we spawned, for SIGCHLD: the process has one
gateway/child.o:reapings       how many of them were reaped (one process, one SIGCHLD)
gateway/child.o:nofile_at_start the fd limit before the app raised it, given back to children
gateway/httpup.o:live_transports the last HTTP upstream transport freed ends the sessions
gateway/httpup.o:sessions_to_end the DELETEs of those sessions, sent once at exit
ops/taskscli.o:du_total        nftw() passes its callback no argument
'

# Every layer's objects (a folder of src/) and main.o.
layers=$(for d in src/*/; do basename "$d"; done)
found=$(for o in $(for l in $layers; do echo "$build/$l/"*.o; done) "$build"/main.o; do
    [ -f "$o" ] || continue
    objdump -t "$o" | awk -v f="${o#"$build"/}" '
        / O / && $4 ~ /^\.(data|bss)/ && $4 !~ /^\.data\.rel\.ro/ {
            s = $NF; sub(/\.[0-9]+$/, "", s); print f ":" s }'
done)
[ -n "$found" ] || { echo "check-globals: no objects under $build (build first)" >&2; exit 2; }

bad=0
for g in $found; do
    if ! printf '%s\n' "$allow" | awk '{print $1}' | grep -qxF "$g"; then
        echo "check-globals: mutable file-scope state $g: make it a field of its module's" \
             "struct, or add it to scripts/check-globals.sh with the reason it is process-wide" >&2
        bad=1
    fi
done
[ "$bad" = 0 ] && echo "check-globals: ok ($(printf '%s\n' "$found" | wc -l) process-wide, all allowed)"
exit "$bad"
