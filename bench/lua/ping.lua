-- wrk load: ping (see common.lua for the response check).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
