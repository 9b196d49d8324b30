#!/usr/bin/env bash
# tests/fakes/selftest.sh — builds the fake agent and checks it end to end with curl against
# docs/hermes-agent-api.md (shared): build/release/fake-agent, or with SANITIZE=1
# build/asan/fake-agent (the ASan+UBSan flavour), which
# must also exit 0, leak-free, on SIGTERM. JSON is read with perl's core JSON::PP (no jq needed).
# Prints "fake-agent selftest: N passed, N failed"; exits non-zero on any failure.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/lib/wait-port.sh"
cd "$root" || exit 1

if [ "${SANITIZE:-}" = 1 ]; then
    make -s SANITIZE=1 fakes >/dev/null || { echo "fake-agent selftest: build failed"; exit 1; }
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=86}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    bin=$root/build/asan/fake-agent
else
    make -s fakes >/dev/null || { echo "fake-agent selftest: build failed"; exit 1; }
    bin=$root/build/release/fake-agent
fi
tmp=$(mktemp -d)
pass=0
fail=0
pids=()

cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); [ -n "${VERBOSE:-}" ] && echo "ok   $1"; return 0; }
no() { fail=$((fail + 1)); echo "FAIL $1${2:+: $2}"; }
# check NAME ACTUAL EXPECTED
check() { if [ "$2" = "$3" ]; then ok "$1"; else no "$1" "got [$2], want [$3]"; fi; }
# match NAME ACTUAL REGEX
match() { if [[ $2 =~ $3 ]]; then ok "$1"; else no "$1" "[$2] !~ /$3/"; fi; }

# jget PATH < json: a value like `jq -r` (strings raw, null, true/false, objects as JSON);
# <absent> for a missing key, <invalid json> for bad input.
jget() {
    perl -MJSON::PP -e '
        my $path = shift; local $/; my $in = <STDIN>;
        my $d = eval { JSON::PP->new->allow_nonref->decode($in) };
        if ($@) { print "<invalid json>"; exit 0 }
        for my $k (grep { length } split /\./, $path) {
            if (ref $d eq "ARRAY") { $d = $d->[$k] }
            elsif (ref $d eq "HASH") { if (!exists $d->{$k}) { print "<absent>"; exit 0 } $d = $d->{$k} }
            else { print "<absent>"; exit 0 }
        }
        if (!defined $d) { print "null" }
        elsif (JSON::PP::is_bool($d)) { print $d ? "true" : "false" }
        elsif (ref $d) { print JSON::PP->new->canonical->encode($d) }
        else { print $d }' "$1"
}
j() { jget "$1" < "$tmp/body"; }

key=sk-selftest-0123456789abcdef
akey=alpha-selftest-0123456789abcdef
printf '%s\n' "$key" > "$tmp/key"
printf '%s\n' "$akey" > "$tmp/akey"
printf 'short\n' > "$tmp/shortkey"
chmod 600 "$tmp"/*key
AUTH="Authorization: Bearer $key"

# start NAME ARGS...: starts a fake on port 0; sets $port and records $pid_NAME.
start() {
    local name=$1
    shift
    "$bin" --port 0 --key-file "$tmp/key" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" &
    local p=$!
    pids+=("$p")
    eval "pid_$name=$p"
    port=$(wait_port "$tmp/$name.out") || port=""
    eval "port_$name=$port"
}
# stop NAME: SIGTERM, then expect exit 0 and no sanitizer report.
stop() {
    local name=$1 p
    eval "p=\$pid_$name"
    kill -TERM "$p"
    local rc=0
    wait "$p" || rc=$?
    check "$name: exits 0 on SIGTERM" "$rc" 0
    if grep -qE "AddressSanitizer|LeakSanitizer|runtime error" "$tmp/$name.err"; then
        no "$name: sanitizer report" "$(head -5 "$tmp/$name.err")"
    else
        ok "$name: no sanitizer report"
    fi
}

# req METHOD PATH [curl args...]: sets $code; body in $tmp/body, headers in $tmp/hdrs.
req() {
    local m=$1 path=$2
    shift 2
    code=$(curl -s -S --max-time 20 -X "$m" -o "$tmp/body" -D "$tmp/hdrs" -w '%{http_code}' \
        "$@" "http://127.0.0.1:$port$path")
}
hdr() { tr -d '\r' < "$tmp/hdrs" | sed -n "s/^$1: //Ip" | head -1; }
post() { local path=$1 data=$2; shift 2; req POST "$path" -H "$AUTH" -H 'Content-Type: application/json' --data-binary "$data" "$@"; }
# poll_status RUN_ID WANT [AUTH-HEADER] [PREFIX]: polls GET /v1/runs/ID until its status is WANT.
poll_status() {
    local st="" h=${3:-$AUTH}
    for _ in $(seq 200); do
        req GET "${4:-}/v1/runs/$1" -H "$h"
        st=$(j status)
        [ "$st" = "$2" ] && break
        sleep 0.05
    done
    echo "$st"
}

# ---------------------------------------------------------------- startup rules
"$bin" --port 0 > "$tmp/nokey.out" 2>&1
check "refuses to start without --key-file" "$?" 2
"$bin" --port 0 --key-file "$tmp/shortkey" > "$tmp/short.out" 2>&1
check "refuses a key under 16 characters" "$?" 2

start main --profile "alpha=$tmp/akey" --record "$tmp/rec.jsonl"
match "prints the listening line" "$(cat "$tmp/main.out")" '^fake-agent listening on http://127\.0\.0\.1:[0-9]+$'

# ---------------------------------------------------------------- health, auth, models
for path in /health /v1/health; do
    req GET $path
    check "GET $path: 200" "$code" 200
    check "GET $path: body" "$(j status)/$(j platform)/$(j version)" "ok/hermes-agent/fake-1"
done
req GET /v1/models
check "401 without a key" "$code" 401
check "401 envelope" "$(j error.message)|$(j error.type)|$(j error.code)" \
    "Invalid gateway API key (API_SERVER_KEY)|gateway_auth_error|gateway_auth_failed"
req GET /v1/models -H "Authorization: Bearer wrong-key-0123456789"
check "401 with a wrong key" "$code" 401
req GET /v1/models -H "Authorization: bearer $key"
check "401 unless the scheme is exactly 'Bearer '" "$code" 401
req GET /v1/models -H "$AUTH"
check "models: 200" "$code" 200
check "models: body" "$(j object)|$(j data.0.id)|$(j data.0.object)|$(j data.0.owned_by)" \
    "list|hermes-agent|model|hermes"

# ---------------------------------------------------------------- chat completions
post /v1/chat/completions '{"model":"hermes-agent","messages":[{"role":"system","content":"be nice"},{"role":"user","content":"What is 6 * 7?"}]}'
check "chat: 200" "$code" 200
check "chat: shape" "$(j object)|$(j choices.0.index)|$(j choices.0.message.role)|$(j choices.0.finish_reason)|$(j model)" \
    "chat.completion|0|assistant|stop|hermes-agent"
match "chat: id" "$(j id)" '^chatcmpl-[0-9a-f]{29}$'
match "chat: usage" "$(j usage.prompt_tokens)/$(j usage.completion_tokens)/$(j usage.total_tokens)" '^[0-9]+/[0-9]+/[0-9]+$'
content=$(j choices.0.message.content)
check "chat: answers in the contract JSON" "$(jget status <<< "$content")|$(jget artifacts <<< "$content")|$(jget next_steps <<< "$content")" "completed|[]|[]"
match "chat: a sensible answer" "$(jget summary <<< "$content")" '6 \* 7 = 42'
want=api-$(printf 'be nice\nWhat is 6 * 7?' | sha256sum | cut -c1-16)
check "chat: derived X-Hermes-Session-Id" "$(hdr X-Hermes-Session-Id)" "$want"
post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}]}' -H 'X-Hermes-Session-Id: my-session-1'
check "chat: echoes X-Hermes-Session-Id" "$(hdr X-Hermes-Session-Id)" my-session-1
post /v1/chat/completions '{"messages":[{"role":"user","content":"[text=exactly this]"}]}'
check "chat: [text=...]" "$(j choices.0.message.content)" "exactly this"
post /v1/chat/completions '{"messages":[{"role":"user","content":"list files [json]"}]}'
match "chat: [json] fenced block" "$(j choices.0.message.content)" '```json'
post /v1/chat/completions '{"messages":[{"role":"user","content":"do it [fail]"}]}'
check "chat: [fail] is 502" "$code" 502
check "chat: [fail] envelope" "$(j error.code)|$(j error.type)|$(j error.message)|$(j error.hermes.failed)" \
    "agent_incomplete|server_error|simulated failure|true"
post /v1/chat/completions '{"messages":[{"role":"user","content":"write a long essay [partial]"}]}'
check "chat: [partial] is 200" "$code" 200
check "chat: [partial] flags" "$(j choices.0.finish_reason)|$(j hermes.partial)|$(j hermes.completed)|$(j hermes.error_code)|$(hdr X-Hermes-Partial)" \
    "length|true|false|output_truncated|true"
post /v1/chat/completions '{"messages":[]}'
check "chat: empty messages is 400" "$code|$(j error.message)|$(j error.code)" "400|Missing or invalid 'messages' field|<absent>"
post /v1/chat/completions '{"messages":[{"role":"system","content":"only system"}]}'
check "chat: no user message is 400" "$code|$(j error.message)" "400|No user message found in messages"
post /v1/chat/completions '{"messages": ['
check "chat: bad JSON is 400" "$code|$(j error.message)|$(j error.param)" "400|Invalid JSON in request body|null"
post /v1/chat/completions '{"messages":[{"role":"user","content":[{"type":"file","file":{}}]}]}'
check "chat: file parts are 400" "$code|$(j error.code)|$(j error.param)" "400|unsupported_content_type|messages[0].content"

# idempotent chat: the second call is served from the cache (no [delay] wait)
post /v1/chat/completions '{"messages":[{"role":"user","content":"cache me [delay=1500]"}]}' -H 'Idempotency-Key: chat-1'
t0=$(date +%s%N)
post /v1/chat/completions '{"messages":[{"role":"user","content":"cache me [delay=1500]"}]}' -H 'Idempotency-Key: chat-1'
t1=$(date +%s%N)
check "chat: Idempotency-Key replays from the cache" "$code|$(( (t1 - t0) / 1000000 < 1000 ))" "200|1"

# streaming
code=$(curl -s -N --max-time 20 -o "$tmp/sse" -D "$tmp/hdrs" -w '%{http_code}' -H "$AUTH" \
    --data-binary '{"stream":true,"messages":[{"role":"user","content":"What is 2 + 3? [progress=2] [delay=200]"}]}' \
    "http://127.0.0.1:$port/v1/chat/completions")
check "stream: 200" "$code" 200
check "stream: content type" "$(hdr Content-Type)" text/event-stream
match "stream: session header" "$(hdr X-Hermes-Session-Id)" '^api-[0-9a-f]{16}$'
check "stream: ends with data: [DONE]" "$(grep -v '^$' "$tmp/sse" | tail -1)" "data: [DONE]"
check "stream: first chunk is the role" "$(grep -m1 '^data: ' "$tmp/sse" | sed 's/^data: //' | jget choices.0.delta.role)" assistant
check "stream: progress frames" "$(grep -c '^event: hermes.tool.progress$' "$tmp/sse")" 4
prog=$(grep -A1 '^event: hermes.tool.progress$' "$tmp/sse" | grep -m1 '^data: ' | sed 's/^data: //')
check "stream: progress frame shape" "$(jget status <<< "$prog")|$(jget tool <<< "$prog")" "running|web_search"
match "stream: progress toolCallId" "$(jget toolCallId <<< "$prog")" '^call_'
final=$(grep '^data: {' "$tmp/sse" | tail -1 | sed 's/^data: //')
check "stream: final chunk" "$(jget object <<< "$final")|$(jget choices.0.finish_reason <<< "$final")" "chat.completion.chunk|stop"
match "stream: final usage" "$(jget usage.total_tokens <<< "$final")" '^[0-9]+$'
text=$(grep '^data: {' "$tmp/sse" | sed 's/^data: //' | while read -r l; do jget choices.0.delta.content <<< "$l"; echo; done | grep -v '^<absent>$' | tr -d '\n')
match "stream: the deltas make the answer" "$(jget summary <<< "$text")" '2 \+ 3 = 5'
curl -s -N --max-time 20 -o "$tmp/sse" -H "$AUTH" \
    --data-binary '{"stream":true,"messages":[{"role":"user","content":"x [fail]"}]}' "http://127.0.0.1:$port/v1/chat/completions"
final=$(grep '^data: {' "$tmp/sse" | tail -1 | sed 's/^data: //')
check "stream: [fail] final chunk" "$(jget choices.0.finish_reason <<< "$final")|$(jget error.message <<< "$final")|$(jget hermes.failed <<< "$final")" \
    "error|simulated failure|true"
# a client that hangs up mid-stream interrupts the work
curl -s -N --max-time 0.5 -o /dev/null -H "$AUTH" -H 'X-Hermes-Session-Id: hang-up-1' \
    --data-binary '{"stream":true,"messages":[{"role":"user","content":"slow [delay=5000]"}]}' "http://127.0.0.1:$port/v1/chat/completions"
found=0
for _ in $(seq 40); do
    grep -q '"event":"interrupted".*"session_id":"hang-up-1"' "$tmp/rec.jsonl" && { found=1; break; }
    sleep 0.05
done
check "stream: a disconnect interrupts the work (record marker)" "$found" 1

# ---------------------------------------------------------------- runs
post /v1/runs '{"input":"Summarize the project [progress=1]","instructions":"answer in JSON"}'
check "runs: 202" "$code" 202
run=$(j run_id)
match "runs: run_id" "$run" '^run_[0-9a-f]{32}$'
check "runs: accepted body" "$(j status)|$(j replayed)" "started|false"
check "runs: polls to completed" "$(poll_status "$run" completed)" completed
check "runs: status shape" "$(j object)|$(j run_id)|$(j session_id)|$(j model)|$(j last_event)" \
    "hermes.run|$run|$run|hermes-agent|run.completed"
match "runs: timestamps are epoch floats" "$(j created_at) $(j updated_at)" '^[0-9]{10}(\.[0-9]+)? [0-9]{10}(\.[0-9]+)?$'
check "runs: output is the contract JSON" "$(j output | jget status)" completed
match "runs: usage" "$(j usage.input_tokens)/$(j usage.output_tokens)/$(j usage.total_tokens)" '^[0-9]+/[0-9]+/[0-9]+$'
post /v1/runs '{"input":[{"role":"user","content":"first"},{"role":"user","content":"last one"}],"session_id":"sess-42"}'
run2=$(j run_id)
poll_status "$run2" completed > /dev/null
check "runs: list input and session_id" "$(j session_id)|$(j output | jget summary | grep -c 'last one')" "sess-42|1"
post /v1/runs '{"instructions":"x"}'
check "runs: missing input is 400" "$code|$(j error.message)" "400|Missing 'input' field"
post /v1/runs '{"input":"x"}' -H 'Idempotency-Key: has space'
check "runs: invalid Idempotency-Key is 400" "$code|$(j error.code)" "400|invalid_idempotency_key"
post /v1/runs '{"input":"x"}' -H "Idempotency-Key: $(printf 'k%.0s' $(seq 256))"
check "runs: a 256-character Idempotency-Key is 400" "$code|$(j error.code)" "400|invalid_idempotency_key"
post /v1/runs '{"input":"x"'
check "runs: bad JSON is 400" "$code|$(j error.message)" "400|Invalid JSON"

# idempotency
body='{"input":"idempotent work [delay=400]"}'
post /v1/runs "$body" -H 'Idempotency-Key: key-1'
check "idempotency: first is 202, not replayed" "$code|$(j replayed)|$(hdr Idempotency-Replayed)" "202|false|"
irun=$(j run_id)
post /v1/runs "$body" -H 'Idempotency-Key: key-1'
check "idempotency: repeat replays" "$code|$(j run_id)|$(j replayed)|$(hdr Idempotency-Replayed)" "202|$irun|true|true"
match "idempotency: replay gives the current status" "$(j status)" '^(queued|running)$'
poll_status "$irun" completed > /dev/null
post /v1/runs "$body" -H 'Idempotency-Key: key-1'
check "idempotency: replay after completion" "$code|$(j run_id)|$(j status)|$(j replayed)" "202|$irun|completed|true"
post /v1/runs '{"input":"something else"}' -H 'Idempotency-Key: key-1'
check "idempotency: a different body is 409" "$code|$(j error.code)|$(j error.message)" \
    "409|idempotency_key_conflict|Idempotency-Key was already used with a different request payload"

# events
post /v1/runs '{"input":"stream me [progress=2] [delay=300]"}'
erun=$(j run_id)
code=$(curl -s -N --max-time 20 -o "$tmp/ev" -D "$tmp/hdrs" -w '%{http_code}' -H "$AUTH" "http://127.0.0.1:$port/v1/runs/$erun/events")
check "events: 200 text/event-stream" "$code|$(hdr Content-Type)" "200|text/event-stream"
check "events: ends with ': stream closed'" "$(grep -v '^$' "$tmp/ev" | tail -1)" ": stream closed"
check "events: data frames only (no event: line)" "$(grep -c '^event:' "$tmp/ev")" 0
evs=$(grep '^data: ' "$tmp/ev" | sed 's/^data: //' | while read -r l; do jget event <<< "$l"; echo; done | sort | uniq -c | awk '{print $2"="$1}' | tr '\n' ' ')
check "events: kinds" "$evs" "message.delta=4 run.completed=1 tool.completed=2 tool.started=2 "
first=$(grep -m1 '^data: ' "$tmp/ev" | sed 's/^data: //')
check "events: tool.started shape" "$(jget event <<< "$first")|$(jget run_id <<< "$first")|$(jget tool <<< "$first")" "tool.started|$erun|web_search"
match "events: timestamp" "$(jget timestamp <<< "$first")" '^[0-9]{10}'
done_ev=$(grep '^data: ' "$tmp/ev" | grep 'tool.completed' | head -1 | sed 's/^data: //')
check "events: tool.completed shape" "$(jget error <<< "$done_ev")|$(jget duration <<< "$done_ev" | grep -cE '^[0-9.]+$')" "false|1"
req GET "/v1/runs/$erun/events" -H "$AUTH"
check "events: a second consumer gets 404" "$code|$(j error.code)" "404|run_not_found"

# stop
post /v1/runs '{"input":"long job [delay=30000] [progress=3]"}'
srun=$(j run_id)
sleep 0.2
req POST "/v1/runs/$srun/stop" -H "$AUTH"
check "stop: 200 stopping" "$code|$(j run_id)|$(j status)" "200|$srun|stopping"
check "stop: the run ends cancelled" "$(poll_status "$srun" cancelled)" cancelled
check "stop: last_event" "$(j last_event)" run.cancelled
req POST "/v1/runs/$srun/stop" -H "$AUTH"
check "stop: a terminal run answers 200 with its status" "$code|$(j status)|$(j object)" "200|cancelled|hermes.run"
post /v1/runs '{"input":"x [orphan]"}'
orun=$(j run_id)
sleep 0.3
req POST "/v1/runs/$orun/stop" -H "$AUTH"
check "stop: a run not live here is 409" "$code|$(j error.code)" "409|run_not_active"
post /v1/runs '{"input":"x [forget]"}'
grun=$(j run_id)
check "runs: [forget] shows the end once" "$(poll_status "$grun" completed)" completed
req GET "/v1/runs/$grun" -H "$AUTH"
check "runs: [forget] then 404" "$code|$(j error.code)" "404|run_not_found"
post /v1/runs '{"input":"x [fail=disk full]"}'
frun=$(j run_id)
check "runs: [fail] ends failed" "$(poll_status "$frun" failed)|$(j error)|$(j last_event)" "failed|disk full|run.failed"

req GET /v1/runs/run_doesnotexist -H "$AUTH"
check "404 run_not_found envelope" "$code|$(j error.message)|$(j error.type)|$(j error.param)|$(j error.code)" \
    "404|Run not found: run_doesnotexist|invalid_request_error|null|run_not_found"
req POST /v1/runs/run_doesnotexist/stop -H "$AUTH"
check "stop of an unknown run is 404" "$code|$(j error.code)" "404|run_not_found"

# ---------------------------------------------------------------- profiles, Origin, routing, limits
AAUTH="Authorization: Bearer $akey"
req GET /p/alpha/v1/models -H "$AAUTH"
check "profile: models under /p/alpha" "$code|$(j data.0.id)" "200|alpha"
req GET /p/alpha/v1/models -H "$AUTH"
check "profile: the default key is rejected" "$code|$(j error.code)" "401|gateway_auth_failed"
req GET /v1/models -H "$AAUTH"
check "profile: its key is rejected on the default routes" "$code" 401
req GET /p/nosuch/v1/models -H "$AUTH"
check "profile: unknown profile is 404" "$code|$(j error)" "404|Unknown or unconfigured profile"
req GET /p/alpha/health
check "profile: health under /p/alpha" "$code|$(j status)" "200|ok"
req POST /p/alpha/v1/runs -H "$AAUTH" --data-binary '{"input":"profile work"}'
prun=$(j run_id)
check "profile: run under /p/alpha" "$code|$(poll_status "$prun" completed "$AAUTH" /p/alpha)" "202|completed"
req GET "/v1/runs/$prun" -H "$AUTH"
check "profile: another profile's run is 404" "$code|$(j error.code)" "404|run_not_found"

req GET /v1/models -H "$AUTH" -H 'Origin: http://localhost:3000'
check "Origin: 403 with an empty body" "$code|$(wc -c < "$tmp/body")" "403|0"
req POST /v1/runs -H "$AUTH" -H 'Origin: https://evil.example' --data-binary '{"input":"x"}'
check "Origin: 403 on POST too" "$code" 403
req GET /v1/chat/completions -H "$AUTH"
check "wrong method is 405" "$code|$(hdr Allow)" "405|POST"
req GET /v1/nothing-here -H "$AUTH"
check "unknown route is 404" "$code" 404
head -c 10000001 /dev/zero | tr '\0' 'a' > "$tmp/big"
req POST /v1/chat/completions -H "$AUTH" --data-binary "@$tmp/big"
check "a body over 10,000,000 bytes is 413" "$code|$(j error.code)" "413|body_too_large"

# ---------------------------------------------------------------- the record file
lines=$(wc -l < "$tmp/rec.jsonl")
match "record: one line per request" "$lines" '^[0-9]{2,}$'
bad=$(while read -r l; do jget method <<< "$l"; echo; done < "$tmp/rec.jsonl" | grep -c '<invalid json>')
check "record: every line is JSON" "$bad" 0
check "record: never holds a key" "$(grep -cF -e "$key" -e "$akey" "$tmp/rec.jsonl")" 0
l=$(grep '"idempotency-key":"key-1"' "$tmp/rec.jsonl" | head -1)
check "record: fields" "$(jget method <<< "$l")|$(jget path <<< "$l")|$(jget headers.authorization_ok <<< "$l")|$(jget body.input <<< "$l")|$(jget profile <<< "$l")" \
    "POST|/v1/runs|true|idempotent work [delay=400]|null"
l=$(grep '"origin":"http://localhost:3000"' "$tmp/rec.jsonl" | head -1)
check "record: Origin is recorded" "$(jget headers.origin <<< "$l")" "http://localhost:3000"
stop main

# ---------------------------------------------------------------- the concurrency cap
start cap --max-concurrent 1 --keepalive-ms 200
post /v1/runs '{"input":"slow [delay=30000]"}' -H 'Idempotency-Key: slow-1'
crun=$(j run_id)
check "cap: the first run is accepted" "$code" 202
post /v1/runs '{"input":"another"}'
check "cap: the next run is 429" "$code|$(hdr Retry-After)|$(j error.type)|$(j error.code)|$(j error.message)" \
    "429|1|rate_limit_error|rate_limit_exceeded|Too many concurrent runs (max 1)"
post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}]}'
check "cap: chat is 429 too" "$code" 429
req POST /v1/chat/completions -H "Authorization: Bearer nope-nope-nope-nope"  --data-binary '{}'
check "cap: auth is checked first" "$code" 401
post /v1/runs '{"input":"slow [delay=30000]"}' -H 'Idempotency-Key: slow-1'
check "cap: a replay skips the cap" "$code|$(j run_id)|$(j replayed)" "202|$crun|true"
req POST "/v1/runs/$crun/stop" -H "$AUTH"
poll_status "$crun" cancelled > /dev/null
post /v1/runs '{"input":"keepalive [progress=1] [delay=1000]"}'
check "cap: a slot frees when the run ends" "$code" 202
curl -s -N --max-time 20 -o "$tmp/ev" -H "$AUTH" "http://127.0.0.1:$port/v1/runs/$(j run_id)/events"
check "events: ': keepalive' when idle" "$(grep -c '^: keepalive$' "$tmp/ev" | awk '{print ($1 > 0)}')" 1
stop cap

# ---------------------------------------------------------------- retention and restart
start keep --retention-ms 200 --state "$tmp/state.json"
post /v1/runs '{"input":"quick"}'
qrun=$(j run_id)
poll_status "$qrun" completed > /dev/null
post /v1/runs '{"input":"quick but idempotent"}' -H 'Idempotency-Key: done-1'
drun=$(j run_id)
poll_status "$drun" completed > /dev/null
post /v1/runs '{"input":"never finishes [delay=600000]"}' -H 'Idempotency-Key: slow-2'
lrun=$(j run_id)
poll_status "$lrun" running > /dev/null
sleep 1.6
req GET "/v1/runs/$qrun" -H "$AUTH"
check "retention: a plain run is 404 after it" "$code|$(j error.code)" "404|run_not_found"
req GET "/v1/runs/$drun" -H "$AUTH"
check "retention: an idempotent run stays in the store" "$code|$(j status)" "200|completed"
stop keep
check "state: the key is not in the state file" "$(grep -cF "$key" "$tmp/state.json")" 0
start keep --state "$tmp/state.json"
post /v1/runs '{"input":"quick but idempotent"}' -H 'Idempotency-Key: done-1'
check "restart: replay of a finished run" "$code|$(j run_id)|$(j status)|$(j replayed)" "202|$drun|completed|true"
post /v1/runs '{"input":"never finishes [delay=600000]"}' -H 'Idempotency-Key: slow-2'
check "restart: an unsettled run is interrupted" "$code|$(j run_id)|$(j status)" "202|$lrun|interrupted"
req GET "/v1/runs/$lrun" -H "$AUTH"
check "restart: interrupted status" "$(j status)|$(j error)|$(j last_event)" \
    "interrupted|The gateway restarted before this run settled.|run.interrupted"
req GET "/v1/runs/$qrun" -H "$AUTH"
check "restart: plain runs are gone" "$code" 404
stop keep

# ---------------------------------------------------------------- delay scale
start fast --delay-scale 0
post /v1/runs '{"input":"would take a minute [delay=60000]"}'
frun=$(j run_id)
sleep 0.3
req GET "/v1/runs/$frun" -H "$AUTH"
check "delay-scale 0: delays vanish" "$(j status)" completed
stop fast

echo "fake-agent selftest: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
