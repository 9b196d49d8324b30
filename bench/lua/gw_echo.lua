-- wrk load for bench/gateway.sh: tools/call of server-everything's echo, stateless or in one
-- session the script was given (see common.lua for the response check). Environment:
-- BENCH_TOOL (the tool's name as this server exposes it, default echo); BENCH_SESSION (an
-- Mcp-Session-Id the caller got from an initialize; then every request carries it and
-- MCP-Protocol-Version, as an SDK 1.x client does in a session).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
local tool = os.getenv("BENCH_TOOL") or "echo"
local session = os.getenv("BENCH_SESSION") or ""
if session ~= "" then
  wrk.headers["Mcp-Session-Id"] = session
  wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
end
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' .. tool
  .. '","arguments":{"message":"hello"}}}'
