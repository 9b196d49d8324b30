-- wrk load: initialize (see common.lua for the response check).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}'
