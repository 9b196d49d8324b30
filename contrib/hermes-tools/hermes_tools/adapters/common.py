"""Helpers every adapter shares: argument checks and reading Hermes' results.

Adapters refuse a call with a tool error (never an exception) so the server
keeps serving; the message names the argument and the rule, never a value
that could be a secret.
"""

import json
from typing import Any, Dict, Iterable, Optional

from ..tool import ToolResult


class Refusal(Exception):
    """A call the policy does not allow; its message is safe to show."""


def refuse(message: str) -> ToolResult:
    return ToolResult(text=message, structured={"error": message}, is_error=True)


def only_known(args: Dict[str, Any], allowed: Iterable[str], forbidden: Dict[str, str]) -> None:
    """Refuse an argument the adapter does not offer.

    forbidden maps names Hermes would accept but the policy removes to the
    reason, so a caller learns why rather than just "unknown".
    """
    if not isinstance(args, dict):
        raise Refusal("the arguments must be an object")
    allowed = set(allowed)
    for key in args:
        if key in forbidden:
            raise Refusal(f"'{key}' is not available here: {forbidden[key]}")
        if key not in allowed:
            raise Refusal(f"unknown argument '{key}'")


def want_str(args: Dict[str, Any], key: str, required: bool = False,
             max_len: Optional[int] = None) -> Optional[str]:
    value = args.get(key)
    if value is None:
        if required:
            raise Refusal(f"'{key}' is required")
        return None
    if not isinstance(value, str):
        raise Refusal(f"'{key}' must be a string")
    if required and not value.strip():
        raise Refusal(f"'{key}' must not be empty")
    if max_len is not None and len(value) > max_len:
        raise Refusal(f"'{key}' is longer than {max_len} characters")
    return value


def want_int(args: Dict[str, Any], key: str, lo: int, hi: int) -> Optional[int]:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refusal(f"'{key}' must be an integer")
    if not lo <= value <= hi:
        raise Refusal(f"'{key}' must be between {lo} and {hi}")
    return value


def from_hermes(text: Any) -> ToolResult:
    """Hermes' string result as a ToolResult.

    Hermes reports a failing tool inside the string, as a JSON object with an
    "error" (handle_function_call's own failures, tool_error()) or with
    "success": false; those become tool errors. Anything else is a success.
    """
    if not isinstance(text, str):
        text = json.dumps(text) if text is not None else ""
    try:
        parsed = json.loads(text)
    except ValueError:
        return ToolResult(text=text)
    if not isinstance(parsed, dict):
        return ToolResult(text=text)
    failed = bool(parsed.get("error")) or parsed.get("success") is False
    return ToolResult(text=text, structured=parsed, is_error=failed)
