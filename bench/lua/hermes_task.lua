-- wrk load: tools/call hermes_task, mode sync, through the fake agent (hermes-mcp only). Every
-- call gets its own task id (BENCH_NONCE, thread, counter) so it is new work, not a stored retry.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
local nonce = os.getenv("BENCH_NONCE") or tostring(os.time())
local n = 0
function request()
  n = n + 1
  local body = string.format('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hermes_task",'
    .. '"arguments":{"task":"what is 6 * 7","mode":"sync","id":"b-%s-%d-%d"}}}', n, nonce, tid, n)
  return wrk.format(nil, nil, nil, body)
end
