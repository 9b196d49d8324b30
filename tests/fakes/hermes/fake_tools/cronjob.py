"""A fake of Hermes' cron job tool (tools/cronjob_tools.py).

As in current Hermes the tool is named cronjob_manage, toolset "cronjob",
answers JSON with "success" (false plus "error" on a failure, e.g. a
missing job_id or an unknown job), and shows jobs in the shape of Hermes'
_format_job: "job_id", "name", "deliver" (Hermes shows a job without one
as "local"), "enabled", and only when set "failure_deliver", "script",
"monitor_script", "monitor_url", "no_agent" (true), "enabled_toolsets",
"workdir". Its check_fn is Hermes' check_cronjob_requirements: one of
HERMES_INTERACTIVE, HERMES_GATEWAY_SESSION, HERMES_EXEC_ASK truthy. As in
Hermes, that only hides the tool from get_tool_definitions: the registry's
dispatch (and so handle_function_call) runs it regardless.
Simplified: jobs live in memory (JOBS, stored as Hermes stores them:
"id", "monitor" split into monitor_script/monitor_url), nothing is ever
scheduled or run ("run" only counts), a job is found by exact id or name,
and the fake records every argument object it receives (CALLS), so tests
can check what reached Hermes.
"""

import json
import os

JOBS = {}
CALLS = []
_next = [1]
_STORED = ("name", "prompt", "schedule", "deliver", "failure_deliver", "script", "no_agent",
           "enabled_toolsets", "workdir", "skills")
_OPTIONAL = ("failure_deliver", "script", "monitor_script", "monitor_url", "no_agent",
             "enabled_toolsets", "workdir")


def check_cronjob_requirements():
    return any(os.environ.get(k, "").strip().lower() in ("1", "true", "yes", "on")
               for k in ("HERMES_INTERACTIVE", "HERMES_GATEWAY_SESSION", "HERMES_EXEC_ASK"))


def _fail(msg):
    return json.dumps({"success": False, "error": msg})


def _format(job):
    out = {"job_id": job["id"], "name": job.get("name") or job["id"],
           "prompt_preview": (job.get("prompt") or "")[:100], "schedule": job.get("schedule"),
           "deliver": job.get("deliver", "local"), "enabled": job.get("enabled", True),
           "skills": job.get("skills") or [], "runs": job.get("runs", 0)}
    for key in _OPTIONAL:
        if job.get(key):
            out[key] = True if key == "no_agent" else job[key]
    return out


def _store(job, args):
    for k in _STORED:
        if args.get(k) is not None:
            job[k] = args[k]
    mon = args.get("monitor")
    if mon is not None:
        url = mon.strip().lower().startswith(("http://", "https://"))
        job["monitor_url"], job["monitor_script"] = (mon, "") if url else ("", mon)


def handler(args, **kw):
    CALLS.append(json.loads(json.dumps(args)))
    action = (args.get("action") or "").strip().lower()
    if action == "list":
        jobs = [_format(j) for j in JOBS.values()
                if args.get("include_disabled", True) or j.get("enabled", True)]
        return json.dumps({"success": True, "count": len(jobs), "jobs": jobs})
    if action == "create":
        if not args.get("schedule") or not args.get("prompt"):
            return _fail("schedule and prompt are required for create")
        jid = f"job{_next[0]}"
        _next[0] += 1
        job = {"id": jid, "deliver": "origin", "enabled": not args.get("paused", False),
               "runs": 0}
        _store(job, args)
        JOBS[jid] = job
        return json.dumps({"success": True, "job_id": jid, "job": _format(job)})
    if action not in ("update", "pause", "resume", "remove", "run", "run_now", "trigger", "resnap"):
        return _fail(f"Unknown cron action '{action}'")
    jid = args.get("job_id")
    if not jid:
        return _fail(f"job_id is required for action '{action}'")
    job = JOBS.get(jid) or next((j for j in JOBS.values() if j.get("name") == jid), None)
    if job is None:
        return _fail(f"Job with ID or name '{jid}' not found.")
    if action == "remove":
        del JOBS[job["id"]]
        return json.dumps({"success": True, "removed": job["id"]})
    if action in ("pause", "resume"):
        job["enabled"] = action == "resume"
    elif action == "update":
        _store(job, {k: v for k, v in args.items() if k != "paused"})
    elif action in ("run", "run_now", "trigger"):
        job["runs"] = job.get("runs", 0) + 1
    return json.dumps({"success": True, "job": _format(job)})


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

TOOLS = [dict(name="cronjob_manage", toolset="cronjob", schema=SCHEMA, handler=handler,
              check_fn=check_cronjob_requirements)]
