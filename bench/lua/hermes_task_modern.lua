-- wrk load: tools/call hermes_task, sync, in MCP 2026-07-28 (see hermes_task.lua and modern.lua).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)")
dofile(dir .. "common.lua")
dofile(dir .. "modern.lua")
modern("tools/call", "hermes_task")
local nonce = os.getenv("BENCH_NONCE") or tostring(os.time())
local n = 0
function request()
  n = n + 1
  local body = string.format('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hermes_task",'
    .. '"arguments":{"task":"what is 6 * 7","mode":"sync","id":"m-%s-%d-%d"},%s}}', n, nonce, tid, n, META)
  return wrk.format(nil, nil, nil, body)
end
