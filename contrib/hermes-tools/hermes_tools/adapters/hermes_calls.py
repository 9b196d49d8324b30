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

from typing import Any, Callable, Dict, Iterable

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
