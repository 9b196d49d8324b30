"""Fake of Hermes' model_tools.py: the public tool API, with the pinned signatures.

Importing it discovers the fake tool modules (fake_tools/*.py, each a TOOLS list) into the
fake registry, as Hermes' import discovers tools/*.py. Like Hermes it prints on stdout while
importing and while computing definitions without quiet_mode, so the server's guard against
stdout noise is exercised. handle_function_call mirrors the pinned dispatcher: it returns a
JSON string and never raises; the agent-loop tools answer with an error, as in Hermes.
"""

import importlib
import json
import os
import pkgutil
import sys
from typing import Any, Dict, List, Optional

from tools.registry import registry

# As in Hermes: these need the agent loop's state, so the dispatcher refuses them.
_AGENT_LOOP_TOOLS = {"todo", "memory", "session_search", "delegate_task"}


def _discover_fake_tools() -> None:
    """Register every TOOLS entry of every fake_tools/*.py module (sorted by module name)."""
    import fake_tools

    for info in sorted(pkgutil.iter_modules(fake_tools.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"fake_tools.{info.name}")
        for t in getattr(module, "TOOLS", []):
            registry.register(t["name"], t["toolset"], t["schema"], t["handler"],
                              check_fn=t.get("check_fn"), is_async=t.get("is_async", False))


# Noise on import, through Python and below it (a subprocess or C library writing to fd 1).
print("fake model_tools: discovering tools")
sys.stdout.flush()
os.write(1, b"fake model_tools: raw fd 1 noise\n")
_discover_fake_tools()

TOOL_TO_TOOLSET_MAP: Dict[str, str] = registry.get_tool_to_toolset_map()
_last_resolved_tool_names: List[str] = []


def get_tool_definitions(
    enabled_toolsets: Optional[List[str]] = None,
    disabled_toolsets: Optional[List[str]] = None,
    quiet_mode: bool = False,
    skip_tool_search_assembly: bool = False,
) -> List[Dict[str, Any]]:
    """OpenAI-format definitions of the enabled toolsets' tools (all when None)."""
    names = set()
    if enabled_toolsets is not None:
        for ts in enabled_toolsets:
            resolved = registry.get_tool_names_for_toolset(ts)
            names.update(resolved)
            if not quiet_mode:
                print(f"Enabled toolset '{ts}': {', '.join(resolved) or 'no tools'}")
    else:
        names.update(registry.get_all_tool_names())
    for ts in disabled_toolsets or []:
        names.difference_update(registry.get_tool_names_for_toolset(ts))
    defs = registry.get_definitions(names, quiet=quiet_mode)
    if not quiet_mode:
        print(f"Final tool selection ({len(defs)} tools)")
    global _last_resolved_tool_names
    _last_resolved_tool_names = [d["function"]["name"] for d in defs]
    return defs


def handle_function_call(
    function_name: str,
    function_args: Dict[str, Any],
    task_id: Optional[str] = None,
    tool_call_id: Optional[str] = None,
    session_id: Optional[str] = None,
    turn_id: Optional[str] = None,
    api_request_id: Optional[str] = None,
    user_task: Optional[str] = None,
    enabled_tools: Optional[List[str]] = None,
    skip_pre_tool_call_hook: bool = False,
    skip_tool_request_middleware: bool = False,
    tool_request_middleware_trace: Optional[List[Dict[str, Any]]] = None,
    enabled_toolsets: Optional[List[str]] = None,
    disabled_toolsets: Optional[List[str]] = None,
) -> str:
    """Route a call to the registry; the result is a JSON string (errors as {"error": ...})."""
    if not isinstance(function_args, dict):
        function_args = {}
    try:
        if function_name in _AGENT_LOOP_TOOLS:
            return json.dumps({"error": f"{function_name} must be handled by the agent loop"})
        return registry.dispatch(function_name, function_args, task_id=task_id,
                                 session_id=session_id, user_task=user_task)
    except Exception as e:
        return json.dumps({"error": f"[TOOL_ERROR] Error executing {function_name}: {e}"},
                          ensure_ascii=False)


def get_all_tool_names() -> List[str]:
    return registry.get_all_tool_names()


def get_toolset_for_tool(tool_name: str) -> Optional[str]:
    return registry.get_toolset_for_tool(tool_name)
