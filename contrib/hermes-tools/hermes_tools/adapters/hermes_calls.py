"""The two ways an adapter reaches a Hermes tool.

Most Hermes tools run through model_tools.handle_function_call, which the
server hands every call as ctx.call_native. Two of the tools adapted here do
not: handle_function_call answers session_search and delegate_task with
{"error": "... must be handled by the agent loop"} (its _AGENT_LOOP_TOOLS),
because Hermes' agent loop runs them itself with agent state. The adapters
therefore run those two the way the agent loop does, through the tool
registry's dispatch (tools.registry.registry.dispatch(name, args, **kw)),
and delegate_task gets the parent agent it requires (it answers "requires a
parent agent context" without one). Both are imported lazily, on the first
call, so building the adapters never imports Hermes.
"""

import sys
import threading
from typing import Any, Callable, Dict, Iterable, Optional

Dispatch = Callable[..., str]
ParentFactory = Callable[[Iterable[str]], Any]


def registry_dispatch(name: str, args: Dict[str, Any], **kw: Any) -> str:
    """Hermes' registry.dispatch, as the agent loop calls it."""
    from tools.registry import registry  # Hermes' own registry, at runtime only

    return registry.dispatch(name, args, **kw)


def hermes_parent(toolsets: Iterable[str]) -> Any:
    """A parent agent whose enabled toolsets bound what children may get.

    Hermes intersects a child's requested toolsets with its parent's, so a
    parent built with only the allowed toolsets is a second fence behind the
    adapter's own check. The model and provider come from Hermes' config,
    as for any agent Hermes starts.
    """
    from run_agent import AIAgent  # Hermes' agent class, at runtime only

    return AIAgent(enabled_toolsets=list(toolsets), quiet_mode=True)


def discover_mcp() -> Any:
    """Hermes' MCP discovery: connect the MCP servers in Hermes' config and
    register their tools (toolsets "mcp-<server>").

    Hermes' model_tools no longer discovers MCP servers at import (each entry
    point, gateway, CLI, TUI, ACP, calls tools.mcp_tool.discover_mcp_tools()
    itself) and AIAgent does not either, so without this call a child asking
    for the Context Mode toolset gets no tools from it.
    """
    from tools.mcp_tool import discover_mcp_tools  # Hermes, at runtime only

    return discover_mcp_tools()


class OnceInBackground:
    """Run fn once, in a daemon thread, the first time wait() is called;
    wait() then waits at most timeout_s for it. Hermes' discovery blocks up
    to 120 s on a slow server, so it must neither hold up the server's start
    nor outlast a call's timeout. A failure is one line on stderr (the
    exception's type only: its text could carry a server's URL or key)."""

    def __init__(self, fn: Callable[[], Any], what: str):
        self._fn, self._what = fn, what
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def _run(self) -> None:
        try:
            self._fn()
        except BaseException as e:  # noqa: BLE001 - any failure is reported, never raised
            print(f"hermes-tools: {self._what} failed ({type(e).__name__}); "
                  "tools it would add are missing", file=sys.stderr, flush=True)

    def wait(self, timeout_s: float) -> bool:
        """True when the run has finished (well or not)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="hermes-tools-" + self._what.replace(" ", "-"))
                self._thread.start()
        self._thread.join(timeout_s)
        return not self._thread.is_alive()
