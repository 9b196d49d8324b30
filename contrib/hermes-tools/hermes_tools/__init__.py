"""hermes-tools: Hermes' own tools over MCP (stdio), for the hermes-mcp gateway.

It runs inside Hermes' Python environment, imports Hermes' public tool API (model_tools) and
serves the tools its allowlist names, plus the guarded adapters (hermes_tools.adapters). See
README.md next to this package.
"""

__version__ = "0.1.0"
