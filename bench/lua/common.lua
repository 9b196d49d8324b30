-- Shared by every load script: POSTs one JSON-RPC body to /mcp with the bearer token and counts
-- a response as good only if it is HTTP 200, holds "result" and holds neither a JSON-RPC error nor
-- "isError":true. done() prints one machine-readable line for bench/run.sh:
--   BENCH requests=N duration_us=N rps=X p50_us=N p99_us=N failures=N socket_errors=N
-- Environment: BENCH_TOKEN (bearer token), BENCH_PATH (default /mcp), BENCH_COUNT (with -t1 -c1:
-- exit after exactly this many responses, printing "BENCH_COUNTED n=N failures=N"; a fixed
-- amount of work for the callgrind counts).

local token = os.getenv("BENCH_TOKEN") or ""
wrk.method = "POST"
wrk.path = os.getenv("BENCH_PATH") or "/mcp"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Authorization"] = "Bearer " .. token

failures = 0        -- per thread (each wrk thread has its own Lua state)
first_failure = nil
local limit = tonumber(os.getenv("BENCH_COUNT") or "")
local seen = 0

function bad(status, body)
  -- A JSON-RPC error object starts with its code; a bare "error" also names properties of the
  -- tools' output schemas in tools/list.
  return status ~= 200 or not body:find('"result"', 1, true) or body:find('"error":{"code"', 1, true)
    or body:find('"isError":true', 1, true)
end

function response(status, headers, body)
  if bad(status, body) then
    failures = failures + 1
    if not first_failure then first_failure = status .. " " .. body:sub(1, 200) end
  end
  if limit then
    seen = seen + 1
    if seen >= limit then
      io.write(string.format("BENCH_COUNTED n=%d failures=%d\n", seen, failures))
      if first_failure then io.write("BENCH_FIRST_FAILURE " .. first_failure:gsub("\n", " ") .. "\n") end
      io.flush()
      os.exit(failures == 0 and 0 or 3)
    end
  end
end

local threads = {}
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function done(summary, latency, requests)
  local failed, first = 0, nil
  for _, t in ipairs(threads) do
    failed = failed + t:get("failures")
    first = first or t:get("first_failure")
  end
  local e = summary.errors
  local sock = e.connect + e.read + e.write + e.timeout
  io.write(string.format("BENCH requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d failures=%d socket_errors=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), failed, sock))
  if first then io.write("BENCH_FIRST_FAILURE " .. first:gsub("\n", " ") .. "\n") end
end

