"""Fake of Hermes' tools/mcp_tool.py: only discover_mcp_tools().

Hermes' discover_mcp_tools() connects the MCP servers of its config and
registers their tools under toolsets "mcp-<server>", returning the names
registered; it is idempotent (connected servers are skipped). Simplified:
no server is configured here, so it registers nothing and returns []; it
counts its calls (CALLS) so tests can see the adapters ran it once.
"""

CALLS = []


def discover_mcp_tools():
    CALLS.append(1)
    return []
