"""Hermes' native tools as Tools: definitions from get_tool_definitions, calls through
handle_function_call, nothing else of Hermes touched (its public API is all we rely on).
"""

import importlib
import inspect
import json
import logging
from typing import Any, Callable, Dict, List, Optional

from .tool import CallContext, Tool, ToolResult

log = logging.getLogger("hermes_tools")

PINNED_COMMIT = "005113316de99e895e37cb72ca65961fc6bac077"


class HermesMissing(Exception):
    """Hermes' tool API is not importable or lacks what we call (one-line message)."""


def describe(e: BaseException) -> str:
    """An exception for a start-up error line: its type and the module it came from (or,
    for an import failure, the module that is missing), never its message, which can
    quote Hermes' configuration (an API key in a parse error, a path with a user name)."""
    if isinstance(e, ImportError) and e.name:
        return f"{type(e).__name__}, module {e.name}"
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = tb.tb_frame.f_globals.get("__name__") if tb is not None else None
    return f"{type(e).__name__} in {where}" if isinstance(where, str) else type(e).__name__


def load_model_tools():
    """Import model_tools and check the two functions and keywords we use are there."""
    try:
        mt = importlib.import_module("model_tools")
    except Exception as e:  # any import failure means the same to the operator
        raise HermesMissing(
            f"cannot import Hermes' model_tools ({describe(e)}); run with Hermes' "
            "venv python and Hermes' source directory on PYTHONPATH")
    for fn in ("get_tool_definitions", "handle_function_call"):
        if not callable(getattr(mt, fn, None)):
            raise HermesMissing(f"Hermes' model_tools has no {fn}() (this server follows "
                                f"hermes-agent {PINNED_COMMIT[:12]})")
    try:
        params = inspect.signature(mt.handle_function_call).parameters
    except (TypeError, ValueError):
        params = {}
    takes_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    missing = [k for k in ("task_id", "user_task") if k not in params and not takes_kw]
    if params and missing:
        raise HermesMissing(f"Hermes' handle_function_call takes no {missing[0]}= (this server "
                            f"follows hermes-agent {PINNED_COMMIT[:12]})")
    return mt


def to_mcp_definition(openai_def: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """{"type": "function", "function": {name, description, parameters}} -> name,
    description, inputSchema (an object schema, as MCP requires); None when malformed."""
    fn = openai_def.get("function") if isinstance(openai_def, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
        return None
    schema = fn.get("parameters")
    if not isinstance(schema, dict):
        schema = {}
    schema = dict(schema)
    if schema.get("type") != "object":
        schema["type"] = "object"
    desc = fn.get("description")
    return {"name": fn["name"], "description": desc if isinstance(desc, str) else "",
            "inputSchema": schema}


def _multimodal(result: Dict[str, Any]) -> ToolResult:
    """Hermes' multimodal envelope: text parts joined; images named, not inlined (the
    gateway's clients get text)."""
    texts = []
    for part in result.get("content", []):
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part.get("type") in ("image_url", "image"):
            texts.append("[image]")
    return ToolResult(text="\n".join(texts))


def result_from_hermes(result: Any) -> ToolResult:
    """Hermes' answer as MCP content: the string as text, a JSON object also as
    structuredContent, and {"error": ...} (how Hermes reports a failing tool) as isError."""
    if isinstance(result, dict) and result.get("_multimodal") is True:
        return _multimodal(result)
    if not isinstance(result, str):
        return ToolResult(text=f"Hermes returned a {type(result).__name__}, not a string",
                          is_error=True)
    try:
        parsed = json.loads(result, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # NaN and too-deep nesting: text only
        return ToolResult(text=result)
    if not isinstance(parsed, dict):
        return ToolResult(text=result)
    return ToolResult(text=result, structured=parsed, is_error=bool(parsed.get("error")))


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def make_caller(mt, task_id: str, user_task: Optional[str]) -> Callable[[str, Dict], Any]:
    """call_native(name, args): handle_function_call with this server's task id."""
    def call_native(name: str, args: Dict[str, Any]):
        return mt.handle_function_call(name, args, task_id=task_id, user_task=user_task)
    return call_native


def build(mt, toolsets: Optional[List[str]]) -> List[Tool]:
    """Every tool Hermes offers (in toolsets, or all), as a Tool calling Hermes."""
    tools = []
    for d in mt.get_tool_definitions(enabled_toolsets=toolsets, quiet_mode=True) or []:
        mcp = to_mcp_definition(d)
        if mcp is None:
            log.warning("skipping a malformed Hermes tool definition")
            continue
        name = mcp["name"]

        def call(args, ctx: CallContext, _name=name):
            return result_from_hermes(ctx.call_native(_name, args))
        tools.append(Tool(name=name, description=mcp["description"],
                          input_schema=mcp["inputSchema"], call=call))
    return tools
