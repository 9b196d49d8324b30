"""The adapters: Hermes capabilities offered only behind a policy, and memory.

build(config) -> list[Tool] gives the server three guarded capabilities
(session_search, delegate_task, cronjob) and the five memory tools
(memory_profile, memory_search, memory_context, memory_reasoning,
memory_conclude). The server's allowlist still decides which are served.

config is the server's configuration (a dict); the adapters read its
"adapters" object, or the dict itself when that key is absent:

    {"guarded": {
        "session_search": {"max_query": 512},
        "delegate_task": {"toolsets": ["web", "vision", "skills", "mcp-context-mode"],
                          "max_children": 2},
        "cronjob": {"native": "cronjob_manage", "require_confirmed": true}},
     "memory": {"assistant_peer": "chatgpt", "config_file": null, "host": null,
                "api_prefix": "/v3", "timeout_s": 30}}

Everything has the default shown. Read against NousResearch/hermes-agent:
model_tools.py @00511331, tools/session_search_tool.py @016e9642,
tools/delegate_tool.py @00aad972, tools/cronjob_tools.py and
plugins/memory/honcho/README.md @00067189; Honcho's routes against
plastic-labs/honcho src/routers/{peers,conclusions}.py.
"""

from typing import Any, Dict, List, Optional

from ..tool import Tool
from . import guarded, memory
from .hermes_calls import Dispatch, ParentFactory, hermes_parent, registry_dispatch
from .honcho import Honcho, HonchoError, resolve


def _section(config: Any) -> Dict[str, Any]:
    if not isinstance(config, dict):
        config = getattr(config, "adapters", None) or {}
    inner = config.get("adapters")
    return inner if isinstance(inner, dict) else config


def build(config: Any = None, dispatch: Optional[Dispatch] = None,
          parent_factory: Optional[ParentFactory] = None,
          env: Optional[Dict[str, str]] = None) -> List[Tool]:
    """Every adapter tool. dispatch, parent_factory and env replace Hermes' own
    registry, agent class and the process environment (tests use fakes).

    Honcho's settings are read on the first memory call, not here, so a
    server that serves no memory tool never needs a Honcho configuration;
    a memory call without one is a tool error naming what is missing.
    """
    cfg = _section(config or {})
    g = cfg.get("guarded") or {}
    dispatch = dispatch or registry_dispatch
    parent_factory = parent_factory or hermes_parent
    mem_cfg = cfg.get("memory") or {}
    state: Dict[str, Honcho] = {}

    def client() -> Honcho:
        if "h" not in state:
            state["h"] = Honcho(resolve(mem_cfg, env))
        return state["h"]

    return [
        guarded.session_search(g.get("session_search") or {}, dispatch),
        guarded.delegate_task(g.get("delegate_task") or {}, dispatch, parent_factory),
        guarded.cronjob(g.get("cronjob") or {}),
        *memory.build(mem_cfg, client),
    ]


__all__ = ["build", "HonchoError"]
