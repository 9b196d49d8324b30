"""A fake of Hermes' run_agent.AIAgent, only as delegate_task's parent.

The delegate_task adapter builds a parent agent with
AIAgent(enabled_toolsets=[...], quiet_mode=True) and hands it to the
delegate_task handler, as Hermes' agent loop hands itself. Simplified: the
fake keeps the keywords it was given (enabled_toolsets, the attribute
Hermes' delegation reads to bound children's toolsets) and runs nothing;
it records each instance in AGENTS.
"""

AGENTS = []


class AIAgent:
    def __init__(self, enabled_toolsets=None, quiet_mode=False, **kwargs):
        self.enabled_toolsets = list(enabled_toolsets or [])
        self.quiet_mode = quiet_mode
        self.kwargs = kwargs
        self._delegate_depth = 0
        AGENTS.append(self)
