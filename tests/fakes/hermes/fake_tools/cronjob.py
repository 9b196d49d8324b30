"""A fake of Hermes' cron job tool (tools/cronjob_tools.py).

As in current Hermes the tool is named cronjob_manage, toolset "cronjob",
and answers JSON with "success" (false plus "error" on a failure, e.g. a
missing job_id or an unknown job). Simplified: jobs live in memory (JOBS),
nothing is ever scheduled or run ("run" only counts), and the fake records
every argument object it receives (CALLS), so tests can check that removed
fields never reach Hermes and that delivery is local.
"""

import json

JOBS = {}
CALLS = []
_next = [1]


def _fail(msg):
    return json.dumps({"success": False, "error": msg})


def handler(args, **kw):
    CALLS.append(dict(args))
    action = (args.get("action") or "").strip().lower()
    if action == "list":
        jobs = [j for j in JOBS.values() if args.get("include_disabled", True) or j["enabled"]]
        return json.dumps({"success": True, "count": len(jobs), "jobs": jobs})
    if action == "create":
        if not args.get("schedule") or not args.get("prompt"):
            return _fail("schedule and prompt are required for create")
        jid = f"job{_next[0]}"
        _next[0] += 1
        JOBS[jid] = {"id": jid, "name": args.get("name") or jid, "prompt": args["prompt"],
                     "schedule": args["schedule"], "deliver": args.get("deliver") or "origin",
                     "enabled": not args.get("paused", False), "runs": 0}
        return json.dumps({"success": True, "job_id": jid, "job": JOBS[jid]})
    if action not in ("update", "pause", "resume", "remove", "run", "run_now", "trigger", "resnap"):
        return _fail(f"Unknown cron action '{action}'")
    jid = args.get("job_id")
    if not jid:
        return _fail(f"job_id is required for action '{action}'")
    job = JOBS.get(jid) or next((j for j in JOBS.values() if j["name"] == jid), None)
    if job is None:
        return _fail(f"Job with ID or name '{jid}' not found.")
    if action == "remove":
        del JOBS[job["id"]]
        return json.dumps({"success": True, "removed": job["id"]})
    if action in ("pause", "resume"):
        job["enabled"] = action == "resume"
    elif action == "update":
        for k in ("name", "prompt", "schedule", "deliver"):
            if args.get(k) is not None:
                job[k] = args[k]
    elif action in ("run", "run_now", "trigger"):
        job["runs"] += 1
    return json.dumps({"success": True, "job": job})


SCHEMA = {
    "name": "cronjob_manage",
    "description": "Manage scheduled cron jobs (fake).",
    "parameters": {"type": "object", "properties": {
        k: {"type": "string"} for k in (
            "action", "job_id", "prompt", "schedule", "name", "deliver", "failure_deliver",
            "script", "monitor", "workdir", "reason", "paused_reason")} | {
        "repeat": {"type": "integer"}, "no_agent": {"type": "boolean"},
        "paused": {"type": "boolean"}, "all": {"type": "boolean"},
        "skills": {"type": "array", "items": {"type": "string"}},
        "enabled_toolsets": {"type": "array", "items": {"type": "string"}}},
        "required": ["action"]},
}

TOOLS = [dict(name="cronjob_manage", toolset="cronjob", schema=SCHEMA, handler=handler)]
