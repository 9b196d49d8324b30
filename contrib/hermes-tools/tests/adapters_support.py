"""What the adapter tests share: the fake Hermes tools behind the two call paths.

call_native mirrors model_tools.handle_function_call as the server passes
it on: it refuses the agent-loop tools (session_search, delegate_task) the
way Hermes does, so a test fails if an adapter sends them that way.
dispatch mirrors tools.registry.registry.dispatch: the handler with the
keywords. Both read the fake tool modules' TOOLS lists
(tests/fakes/hermes/fake_tools/), found on PYTHONPATH.
"""

import importlib
import json

from hermes_tools.tool import CallContext

AGENT_LOOP_TOOLS = {"todo", "memory", "session_search", "delegate_task"}
MODULES = ("session_search", "delegate_task", "cronjob")


class FakeHermes:
    def __init__(self):
        self.mods = {m: importlib.reload(importlib.import_module("fake_tools." + m))
                     for m in MODULES}
        self.tools = {t["name"]: t for mod in self.mods.values() for t in mod.TOOLS}
        self.native_calls = []

    def call_native(self, name, args):
        self.native_calls.append((name, json.loads(json.dumps(args))))
        if name in AGENT_LOOP_TOOLS:
            return json.dumps({"error": f"{name} must be handled by the agent loop"})
        if name not in self.tools:
            return json.dumps({"error": f"Unknown tool: {name}"})
        return self.tools[name]["handler"](args, task_id="t1")

    def dispatch(self, name, args, **kw):
        return self.tools[name]["handler"](args, **kw)

    def ctx(self, cancelled=False):
        return CallContext(call_native=self.call_native, cancelled=lambda: cancelled,
                           task_id="t1")


def by_name(tools):
    return {t.name: t for t in tools}
