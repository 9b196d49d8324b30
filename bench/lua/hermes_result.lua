-- wrk load: tools/call hermes_result, read from the prepared task bench-result on disk
-- (see common.lua for the response check).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hermes_result","arguments":{"id":"bench-result"}}}'
