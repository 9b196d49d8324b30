"""A fake of Hermes' delegate_task tool (tools/delegate_tool.py).

As in Hermes: toolset "delegation"; without the parent_agent keyword it
answers {"error": "delegate_task requires a parent agent context."}; a
child's toolsets are the requested ones that the parent also has (the
parent's when none are requested); more tasks than the configured maximum
(3) is an error. Simplified: no child agent runs; each child "completes"
at once with a summary naming its goal and toolsets, and the fake records
every call (CALLS) so tests can see what reached Hermes.
"""

import json

MAX_CONCURRENT_CHILDREN = 3
CALLS = []


def handler(args, **kw):
    parent = kw.get("parent_agent")
    CALLS.append({"args": json.loads(json.dumps(args)), "parent": parent})
    if parent is None:
        return json.dumps({"error": "delegate_task requires a parent agent context."})
    tasks = args.get("tasks")
    if tasks:
        if len(tasks) > MAX_CONCURRENT_CHILDREN:
            return json.dumps({"error": f"Too many tasks: {len(tasks)} provided"})
    elif args.get("goal"):
        tasks = [{"goal": args["goal"], "context": args.get("context"),
                  "toolsets": args.get("toolsets")}]
    else:
        return json.dumps({"error": "Provide either 'goal' (single task) or 'tasks' (batch)."})
    mine = getattr(parent, "enabled_toolsets", [])
    results = []
    for i, t in enumerate(tasks):
        wanted = t.get("toolsets") or args.get("toolsets") or mine
        got = [x for x in wanted if x in mine]
        results.append({"task_index": i, "status": "completed",
                        "summary": f"done: {t['goal']}", "toolsets": got,
                        "api_calls": 1, "duration_seconds": 0.0})
    return json.dumps({"results": results, "total_duration_seconds": 0.0})


SCHEMA = {
    "name": "delegate_task",
    "description": "Spawn one or more subagents in isolated contexts (fake).",
    "parameters": {"type": "object", "properties": {
        "goal": {"type": "string"}, "context": {"type": "string"},
        "toolsets": {"type": "array", "items": {"type": "string"}},
        "tasks": {"type": "array", "items": {"type": "object", "properties": {
            "goal": {"type": "string"}, "context": {"type": "string"},
            "toolsets": {"type": "array", "items": {"type": "string"}},
            "acp_command": {"type": "string"},
            "acp_args": {"type": "array", "items": {"type": "string"}},
            "role": {"type": "string", "enum": ["leaf", "orchestrator"]}},
            "required": ["goal"]}},
        "role": {"type": "string", "enum": ["leaf", "orchestrator"]},
        "background": {"type": "boolean"}, "acp_command": {"type": "string"},
        "acp_args": {"type": "array", "items": {"type": "string"}},
    }, "required": []},
}

TOOLS = [dict(name="delegate_task", toolset="delegation", schema=SCHEMA, handler=handler)]
