"""What every tool the server offers is: a definition and a call.

The server (server.py) serves a set of Tool objects. Native Hermes tools
(native.py) and the adapters (adapters/) each build Tools; the server
neither knows nor cares which kind a tool is.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional


@dataclass
class ToolResult:
    """One call's outcome, as MCP returns it.

    text: the text content (Hermes' string result, or a message).
    structured: the JSON object for structuredContent, when there is one.
    is_error: a tool error (isError: true), never a protocol error.
    """

    text: str
    structured: Optional[Dict[str, Any]] = None
    is_error: bool = False


@dataclass
class CallContext:
    """What a call may use besides its arguments.

    call_native(name, args) -> str: Hermes' handle_function_call for a
    native tool (a JSON string, as Hermes returns it), with this call's
    task id. cancelled() -> bool: the client gave up on the call.
    """

    call_native: Callable[[str, Dict[str, Any]], str]
    cancelled: Callable[[], bool] = field(default=lambda: False)
    task_id: Optional[str] = None


@dataclass
class Tool:
    """One MCP tool: its tools/list entry and the function that runs it."""

    name: str
    description: str
    input_schema: Dict[str, Any]
    call: Callable[[Dict[str, Any], CallContext], ToolResult]
    annotations: Optional[Dict[str, Any]] = None

    def definition(self) -> Dict[str, Any]:
        d = {"name": self.name, "description": self.description, "inputSchema": self.input_schema}
        if self.annotations:
            d["annotations"] = self.annotations
        return d
