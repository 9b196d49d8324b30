-- wrk load: tools/list in the session era as an SDK 1.x client sends it to a server with
-- MCP_SESSIONS=1: each connection first initializes (not counted), then every request carries
-- the Mcp-Session-Id it got and MCP-Protocol-Version (see common.lua for the response check).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
local init = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
  .. '"capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}'
local list = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
local session, session_headers = nil, nil
local counted_response = response
function request()
  if session == nil then
    return wrk.format("POST", nil, nil, init)
  end
  return wrk.format("POST", nil, session_headers, list)
end
function response(status, headers, body)
  if session == nil then
    session = headers["Mcp-Session-Id"] or headers["mcp-session-id"]
    if session == nil then counted_response(0, headers, "no session: " .. body) return end
    -- wrk.format takes the headers whole: the common ones, then the session's.
    session_headers = {}
    for k, v in pairs(wrk.headers) do session_headers[k] = v end
    session_headers["Mcp-Session-Id"] = session
    session_headers["MCP-Protocol-Version"] = "2025-11-25"
    return
  end
  counted_response(status, headers, body)
end
