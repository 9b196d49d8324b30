-- wrk load: tools/list in MCP 2026-07-28 (see modern.lua; common.lua for the response check).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)")
dofile(dir .. "common.lua")
dofile(dir .. "modern.lua")
modern("tools/list")
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{' .. META .. '}}'
