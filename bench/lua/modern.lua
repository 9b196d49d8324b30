-- Shared by the *_modern.lua loads: MCP 2026-07-28 requests, stateless, each carrying its
-- protocol version and client capabilities in _meta and the mirrored headers (version, method,
-- and for tools/call the tool's name), as a 2026-era client sends them.
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
META = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{},'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}'
function modern(method, name)
  wrk.headers["Mcp-Method"] = method
  if name then wrk.headers["Mcp-Name"] = name end
end
