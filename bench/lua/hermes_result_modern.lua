-- wrk load: tools/call hermes_result in MCP 2026-07-28 (see hermes_result.lua and modern.lua).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)")
dofile(dir .. "common.lua")
dofile(dir .. "modern.lua")
modern("tools/call", "hermes_result")
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hermes_result",'
  .. '"arguments":{"id":"bench-result"},' .. META .. '}}'
