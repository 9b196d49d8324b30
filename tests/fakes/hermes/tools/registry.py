"""Fake of Hermes' tools/registry.py: the registry that tool modules register into.

Mirrors the pinned registry's contract that callers can observe: register() takes
(name, toolset, schema, handler, check_fn=..., is_async=...); get_definitions() returns
OpenAI-format definitions ({"type": "function", "function": {..., "name": name}}) sorted by
name, skipping tools whose check_fn is false; dispatch() never raises: an unknown tool, a
handler that raises, or a result that is neither a string nor the multimodal envelope comes
back as a JSON string {"error": ...}. See ../README.md for what it leaves out.
"""

import asyncio
import json
import threading
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Set

_MAX_TOOL_ERROR_CHARS = 2048


def tool_error(message, **extra) -> str:
    """Hermes' error body: '{"error": "<message>", **extra}', the message bounded."""
    text = str(message)
    if len(text) > _MAX_TOOL_ERROR_CHARS:
        text = text[:_MAX_TOOL_ERROR_CHARS] + "… [truncated]"
    return json.dumps({"error": text, **extra}, ensure_ascii=False)


def tool_result(data=None, **kwargs) -> str:
    """Hermes' success body: a dict positional argument or keyword arguments, as JSON."""
    return json.dumps(data if data is not None else kwargs, ensure_ascii=False)


@dataclass
class ToolEntry:
    name: str
    toolset: str
    schema: dict
    handler: Callable
    check_fn: Optional[Callable] = None
    is_async: bool = False


class ToolRegistry:
    def __init__(self):
        self._tools: Dict[str, ToolEntry] = {}
        self._lock = threading.RLock()

    def register(self, name, toolset, schema, handler, check_fn=None, requires_env=None,
                 is_async=False, description="", emoji="", **_ignored):
        if not isinstance(schema, dict):
            raise ValueError(f"Tool {name!r}: schema must be a dict")
        params = schema.get("parameters")
        if params is not None and not isinstance(params, dict):
            raise ValueError(f"Tool {name!r}: schema['parameters'] must be an object")
        with self._lock:
            existing = self._tools.get(name)
            if existing and existing.toolset != toolset:
                return  # Hermes rejects a cross-toolset shadow (and logs it)
            self._tools[name] = ToolEntry(name, toolset, schema, handler, check_fn, is_async)

    def get_entry(self, name: str) -> Optional[ToolEntry]:
        with self._lock:
            return self._tools.get(name)

    def get_schema(self, name: str) -> Optional[dict]:
        entry = self.get_entry(name)
        return entry.schema if entry else None

    def get_all_tool_names(self) -> List[str]:
        with self._lock:
            return sorted(self._tools)

    def get_toolset_for_tool(self, name: str) -> Optional[str]:
        entry = self.get_entry(name)
        return entry.toolset if entry else None

    def get_tool_to_toolset_map(self) -> Dict[str, str]:
        with self._lock:
            return {e.name: e.toolset for e in self._tools.values()}

    def get_tool_names_for_toolset(self, toolset: str) -> List[str]:
        with self._lock:
            return sorted(e.name for e in self._tools.values() if e.toolset == toolset)

    def get_registered_toolset_names(self) -> List[str]:
        with self._lock:
            return sorted({e.toolset for e in self._tools.values()})

    def get_definitions(self, tool_names: Set[str], quiet: bool = False) -> List[dict]:
        out = []
        for name in sorted(tool_names):
            entry = self.get_entry(name)
            if entry is None:
                continue
            if entry.check_fn is not None:
                try:
                    if not entry.check_fn():
                        continue
                except Exception:
                    continue
            out.append({"type": "function", "function": {**entry.schema, "name": entry.name}})
        return out

    def dispatch(self, name: str, args: dict, **kwargs):
        entry = self.get_entry(name)
        if entry is None:
            return tool_error(f"Unknown tool: {name}")
        try:
            if entry.is_async:
                result = asyncio.run(entry.handler(args, **kwargs))
            else:
                result = entry.handler(args, **kwargs)
        except Exception as e:
            return tool_error(f"[TOOL_ERROR] Tool execution failed: {type(e).__name__}: {e}")
        if isinstance(result, str):
            return result
        if (isinstance(result, dict) and result.get("_multimodal") is True
                and isinstance(result.get("content"), list)):
            return result
        kind = type(result).__name__
        return tool_error(f"Tool handler returned unsupported result type: {kind}",
                          error_type="tool_result_contract", tool=name, result_type=kind)


registry = ToolRegistry()
