"""session_search, delegate_task and cronjob as guarded adapters.

Each one offers a smaller schema than Hermes' tool, checks every call
against its policy before Hermes sees it, and refuses (a tool error) what
the policy removes, so a client cannot reach a Hermes feature by sending an
argument the schema does not show.
"""

import re
from typing import Any, Callable, Dict, List, Optional

from ..tool import CallContext, Tool, ToolResult
from .common import Refusal, from_hermes, only_known, refuse, want_int, want_str
from .hermes_calls import Dispatch, OnceInBackground, ParentFactory, discover_mcp


def _obj(props: Dict[str, Any], required: Optional[List[str]] = None) -> Dict[str, Any]:
    schema = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _s(desc: str, **extra: Any) -> Dict[str, Any]:
    return {"type": "string", "description": desc, **extra}


def _i(desc: str, lo: int, hi: int) -> Dict[str, Any]:
    return {"type": "integer", "description": desc, "minimum": lo, "maximum": hi}


def _guard(check):
    """Run check(args, ctx) -> ToolResult, turning a Refusal into a tool error."""
    def call(args: Dict[str, Any], ctx: CallContext) -> ToolResult:
        try:
            return check(args if args is not None else {}, ctx)
        except Refusal as r:
            return refuse(str(r))
    return call


# --- session_search ---------------------------------------------------------

_SEARCH_FIELDS = ("query", "limit", "sort", "detail", "session_id", "around_message_id",
                  "window", "role_filter")
_SESSION_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_LINK = re.compile(r"@session:(?:([^/\s]*)/)?(\S+)")


def hermes_profile_name() -> str:
    """The profile name Hermes writes into its own session links ("" when none).

    Hermes' session links are "@session:<profile>/<id>", the profile being
    hermes_cli.profiles.get_active_profile_name() ("custom" and a failed
    import give the bare "@session:<id>"); the same lookup here tells this
    profile's links from another profile's.
    """
    try:
        from hermes_cli.profiles import get_active_profile_name  # Hermes, at runtime only
        name = get_active_profile_name() or ""
    except Exception:
        return ""
    return "" if name == "custom" else name


def _linked_profiles(answer: Dict[str, Any]) -> List[str]:
    """Every profile named by the answer: "profile" and the profile of each link."""
    found = [answer["profile"]] if answer.get("profile") else []
    items = [answer] + [r for r in answer.get("results") or [] if isinstance(r, dict)]
    for item in items:
        link = item.get("link")
        m = _LINK.fullmatch(link) if isinstance(link, str) else None
        if isinstance(link, str) and m is None:
            found.append("?")  # a link we cannot read is not trusted
        elif m and m.group(1) is not None:
            found.append(m.group(1))
    return found


def session_search(cfg: Dict[str, Any], dispatch: Dispatch,
                   profile_name: Optional[Callable[[], str]] = None) -> Tool:
    """Read-only search of this profile's Hermes sessions.

    Hermes reaches another profile's database three ways: the `profile`
    argument, a session_id of the link form "<profile>/<id>" (it splits on
    "/" and opens that profile's state.db, for reads and scrolls alike), and
    a read by session_id that misses here, after which it scans every
    profile (the answer then carries "profile"). The adapter removes the
    argument, accepts only plain session ids ([A-Za-z0-9_.-], as Hermes
    makes them), and withholds any answer that names another profile, in
    "profile" or in a link, so only the served profile is ever visible.
    """
    max_query = int(cfg.get("max_query", 512))
    served = profile_name or hermes_profile_name

    def check(args: Dict[str, Any], ctx: CallContext) -> ToolResult:
        only_known(args, _SEARCH_FIELDS, {
            "profile": "only this Hermes profile's sessions are searched",
            "scope": "not offered by this adapter"})
        want_str(args, "query", max_len=max_query)
        want_int(args, "limit", 1, 10)
        want_int(args, "window", 1, 20)
        want_int(args, "around_message_id", 0, 2**62)
        for key in ("session_id", "role_filter", "sort", "detail"):
            want_str(args, key, max_len=256)
        sid = args.get("session_id")
        if sid is not None and not _SESSION_ID.fullmatch(sid):
            raise Refusal("'session_id' must be a plain session id (letters, digits, _ . -): "
                          "links to another profile's sessions are not followed")
        if args.get("sort") not in (None, "newest", "oldest"):
            raise Refusal("'sort' must be newest or oldest")
        if args.get("detail") not in (None, "adaptive", "full"):
            raise Refusal("'detail' must be adaptive or full")
        result = from_hermes(dispatch("session_search", dict(args), task_id=ctx.task_id))
        if result.structured is not None:
            mine = served()
            if any(p != mine for p in _linked_profiles(result.structured)):
                return refuse("that session is not in this Hermes profile")
        return result

    return Tool(
        name="session_search",
        description=(
            "Search or read past Hermes conversations of this profile (read-only). "
            "Pass query to search (FTS5 syntax), session_id with around_message_id to "
            "scroll, session_id alone to read one session, nothing to list recent ones. "
            "Results are what was said then, not proof of the current state of anything."),
        input_schema=_obj({
            "query": _s("Full-text query; omit to list recent sessions.", maxLength=max_query),
            "limit": _i("Sessions to return (default 3).", 1, 10),
            "sort": _s("Bias by time.", enum=["newest", "oldest"]),
            "detail": _s("adaptive (default) or full.", enum=["adaptive", "full"]),
            "session_id": _s("A session id from an earlier result.", maxLength=128,
                             pattern="^[A-Za-z0-9_.-]+$"),
            "around_message_id": {"type": "integer", "minimum": 0,
                                  "description": "Scroll around this message id."},
            "window": _i("Messages each side when scrolling (default 5).", 1, 20),
            "role_filter": _s("Comma-separated roles, e.g. user,assistant.", maxLength=256),
        }),
        call=_guard(check),
        annotations={"readOnlyHint": True, "openWorldHint": False},
    )


# --- delegate_task ----------------------------------------------------------

DEFAULT_CHILD_TOOLSETS = ("web", "vision", "skills", "mcp-context-mode")


def delegate_task(cfg: Dict[str, Any], dispatch: Dispatch, parent_factory: ParentFactory,
                  discover: Optional[Callable[[], Any]] = None) -> Tool:
    """Synchronous leaf delegation to one or two children with bounded toolsets.

    Children only ever get toolsets from the allowed list (all of it when the
    caller names none, since Hermes would otherwise give them the parent's),
    never run in the background, never as orchestrators, and never through
    another ACP command; each of those Hermes arguments is refused.

    When an allowed toolset is an MCP server's ("mcp-..."), the first call
    runs Hermes' MCP discovery once (nothing else in this process does), in
    the background, waiting at most mcp_discovery_wait_s for it.
    """
    allowed = tuple(cfg.get("toolsets", DEFAULT_CHILD_TOOLSETS))
    mcp_wait = float(cfg.get("mcp_discovery_wait_s", 60))
    mcp = (OnceInBackground(discover or discover_mcp, "MCP discovery")
           if any(t.startswith("mcp-") for t in allowed) else None)
    max_children = int(cfg.get("max_children", 2))
    max_text = int(cfg.get("max_text", 16384))
    removed = {
        "background": "delegation here is synchronous only",
        "role": "children are leaves and cannot delegate",
        "acp_command": "children run as Hermes agents only",
        "acp_args": "children run as Hermes agents only",
        "max_iterations": "Hermes' configured budget applies",
    }

    def toolsets_of(value: Any, where: str) -> List[str]:
        if value is None:
            return list(allowed)
        if not isinstance(value, list) or not value or \
                not all(isinstance(t, str) for t in value):
            raise Refusal(f"'{where}' must be a non-empty list of toolset names")
        for t in value:
            if t not in allowed:
                raise Refusal(f"toolset '{t}' is not allowed for children; "
                              f"allowed: {', '.join(allowed)}")
        return list(dict.fromkeys(value))

    def check(args: Dict[str, Any], ctx: CallContext) -> ToolResult:
        only_known(args, ("goal", "context", "toolsets", "tasks"), removed)
        goal = want_str(args, "goal", max_len=max_text)
        context = want_str(args, "context", max_len=max_text)
        tasks = args.get("tasks")
        if (goal is None) == (tasks is None):
            raise Refusal("pass either 'goal' (one child) or 'tasks' (a batch), not both")
        sent: Dict[str, Any] = {"role": "leaf", "background": False}
        if goal is not None:
            if not goal.strip():
                raise Refusal("'goal' must not be empty")
            sent.update(goal=goal, toolsets=toolsets_of(args.get("toolsets"), "toolsets"))
            if context is not None:
                sent["context"] = context
        else:
            if not isinstance(tasks, list) or not 1 <= len(tasks) <= max_children:
                raise Refusal(f"'tasks' must hold 1 to {max_children} tasks")
            if "toolsets" in args or context is not None:
                raise Refusal("with 'tasks', give context and toolsets per task")
            sent["tasks"] = []
            for i, t in enumerate(tasks):
                where = f"tasks[{i}]"
                if not isinstance(t, dict):
                    raise Refusal(f"'{where}' must be an object")
                only_known(t, ("goal", "context", "toolsets"), removed)
                g = want_str(t, "goal", required=True, max_len=max_text)
                task = {"goal": g, "role": "leaf",
                        "toolsets": toolsets_of(t.get("toolsets"), where + ".toolsets")}
                c = want_str(t, "context", max_len=max_text)
                if c is not None:
                    task["context"] = c
                sent["tasks"].append(task)
        if mcp is not None:
            mcp.wait(mcp_wait)
        if ctx.cancelled():
            return refuse("cancelled before the children started")
        try:
            parent = parent_factory(allowed)
        except Exception as e:  # Hermes could not build an agent: say which kind of failure
            return refuse(f"could not start a parent agent for delegation ({type(e).__name__})")
        return from_hermes(dispatch("delegate_task", sent, task_id=ctx.task_id,
                                    parent_agent=parent))

    task_schema = _obj({
        "goal": _s("What the child should do; self-contained.", maxLength=max_text),
        "context": _s("Everything the child needs to know.", maxLength=max_text),
        "toolsets": {"type": "array", "items": {"type": "string", "enum": list(allowed)},
                     "minItems": 1, "description": "Toolsets for this child."},
    }, ["goal"])
    return Tool(
        name="delegate_task",
        description=(
            f"Run one or {max_children} Hermes child agents now and wait for their summaries. "
            "Children are leaves (they cannot delegate), start with no memory of this "
            f"conversation, and may use only these toolsets: {', '.join(allowed)} "
            "(all of them when none are named). Spends model inference."),
        input_schema=_obj({
            "goal": task_schema["properties"]["goal"],
            "context": task_schema["properties"]["context"],
            "toolsets": task_schema["properties"]["toolsets"],
            "tasks": {"type": "array", "items": task_schema, "minItems": 1,
                      "maxItems": max_children,
                      "description": "A batch instead of goal: each runs in parallel."},
        }),
        call=_guard(check),
        annotations={"readOnlyHint": False, "destructiveHint": False, "openWorldHint": True},
    )


# --- cronjob ----------------------------------------------------------------

MUTATIONS = ("create", "update", "pause", "resume", "remove", "run")
# Actions that make a stored job fire (or change it): its stored fields are checked first.
_CHECKED = ("update", "resume", "run")


def _off_policy(job: Dict[str, Any], allowed: tuple) -> List[str]:
    """What in a stored job (Hermes' list shape, _format_job) the policy does not allow.

    Hermes fires a job without enabled_toolsets with every default tool
    (terminal, files, browser, delegation), so a missing list is off-policy.
    """
    why = []
    if (job.get("deliver") or "local") != "local":
        why.append("it delivers somewhere other than local")
    if (job.get("failure_deliver") or "local") != "local":
        why.append("its failure notices go somewhere other than local")
    if job.get("script"):
        why.append("it runs a script")
    if job.get("no_agent"):
        why.append("it is a no-agent script job")
    if job.get("monitor_script") or job.get("monitor_url") or job.get("monitor"):
        why.append("it has a monitor")
    toolsets = job.get("enabled_toolsets")
    if not isinstance(toolsets, list) or not toolsets:
        why.append("it has no enabled_toolsets, so it would get all of Hermes' default tools")
    elif any(t not in allowed for t in toolsets):
        why.append("its enabled_toolsets go beyond " + ", ".join(allowed))
    return why


def cronjob(cfg: Dict[str, Any], call_native_name: Optional[str] = None) -> Tool:
    """Hermes' cron jobs: list freely, change only with confirmed: true.

    A cron job is an unattended Hermes agent, and Hermes gives a job without
    enabled_toolsets all its default tools (terminal, files, browser,
    delegation). So every create sends enabled_toolsets, the caller's subset
    of the allowed list (the one delegate_task's children get) or all of it,
    and deliver=local so output stays on this machine. Per-job model,
    provider and base-URL pins, scripts, no-agent runs, monitors and other
    deliveries are removed. update, resume and run first look the job up
    (action list) and refuse one whose stored delivery, script, no-agent,
    monitor or toolsets are outside the policy (a job made elsewhere), so
    the adapter never fires or edits such a job. Hermes' other actions
    (resnap, run_now, trigger) are not offered. The native tool is
    "cronjob_manage" in current Hermes ("cronjob" in older releases).
    """
    native = call_native_name or cfg.get("native", "cronjob_manage")
    require_confirmed = bool(cfg.get("require_confirmed", True))
    allowed = tuple(cfg.get("toolsets", DEFAULT_CHILD_TOOLSETS))
    execution = "execution fields are not offered; the job runs as a plain agent prompt"
    removed = {
        "model": "per-job model overrides are not offered",
        "provider": "per-job provider overrides are not offered",
        "base_url": "per-job endpoint overrides are not offered",
        "script": execution, "no_agent": execution, "monitor": execution,
        "monitor_script": execution, "monitor_url": execution,
        "failure_deliver": "delivery is local", "attach_to_session": "delivery is local",
        "workdir": execution, "context_from": execution,
    }
    fields = ("action", "job_id", "name", "prompt", "schedule", "repeat", "deliver",
              "skills", "reason", "include_disabled", "paused", "paused_reason",
              "continuity", "confirmed", "enabled_toolsets")

    def toolsets_of(value: Any) -> List[str]:
        if not isinstance(value, list) or not value or \
                not all(isinstance(t, str) for t in value):
            raise Refusal("'enabled_toolsets' must be a non-empty list of toolset names")
        for t in value:
            if t not in allowed:
                raise Refusal(f"'enabled_toolsets': toolset '{t}' is not allowed for cron jobs; "
                              f"allowed: {', '.join(allowed)}")
        return list(dict.fromkeys(value))

    def stored_job(ref: str, ctx: CallContext) -> Dict[str, Any]:
        listed = from_hermes(ctx.call_native(native, {"action": "list",
                                                      "include_disabled": True}))
        jobs = (listed.structured or {}).get("jobs") if not listed.is_error else None
        if not isinstance(jobs, list):
            raise Refusal("could not list Hermes' cron jobs to check this one")
        hits = [j for j in jobs if isinstance(j, dict) and j.get("job_id") == ref]
        hits = hits or [j for j in jobs if isinstance(j, dict) and j.get("name") == ref]
        if not hits:
            raise Refusal(f"no cron job with id or name '{ref}' (list the jobs first)")
        if len(hits) > 1:
            raise Refusal(f"more than one cron job is named '{ref}': use its job_id")
        return hits[0]

    def check(args: Dict[str, Any], ctx: CallContext) -> ToolResult:
        only_known(args, fields, removed)
        for key in ("paused", "continuity", "include_disabled"):
            if key in args and not isinstance(args[key], bool):
                raise Refusal(f"'{key}' must be a boolean")
        skills = args.get("skills")
        if skills is not None and (not isinstance(skills, list) or len(skills) > 32 or
                                   not all(isinstance(x, str) and len(x) <= 256 for x in skills)):
            raise Refusal("'skills' must be a list of at most 32 skill names")
        action = args.get("action")
        if action == "list":
            if "enabled_toolsets" in args:
                raise Refusal("'enabled_toolsets' is for create and update")
            sent = {"action": "list"}
            if isinstance(args.get("include_disabled"), bool):
                sent["include_disabled"] = args["include_disabled"]
            return from_hermes(ctx.call_native(native, sent))
        if action not in MUTATIONS:
            raise Refusal(f"'action' must be list or one of {', '.join(MUTATIONS)}")
        if require_confirmed and args.get("confirmed") is not True:
            raise Refusal(f"'{action}' changes Hermes' cron jobs: call again with "
                          "confirmed: true (the boolean) after the user approved it")
        if args.get("deliver") not in (None, "local"):
            raise Refusal("'deliver' must be local: job output stays on this machine")
        for key in ("job_id", "name", "schedule", "reason", "paused_reason"):
            want_str(args, key, max_len=512)
        want_str(args, "prompt", max_len=16384)
        want_int(args, "repeat", 1, 100000)
        toolsets = None
        if "enabled_toolsets" in args:
            if action not in ("create", "update"):
                raise Refusal("'enabled_toolsets' is for create and update")
            toolsets = toolsets_of(args["enabled_toolsets"])
        if action != "create" and not args.get("job_id"):
            raise Refusal(f"'job_id' is required for {action}")
        if action == "create" and not (args.get("prompt") and args.get("schedule")):
            raise Refusal("create needs 'schedule' and 'prompt'")
        if action in _CHECKED:
            job = stored_job(args["job_id"], ctx)
            why = _off_policy(job, allowed)
            if why:
                extra = (" (an update here would also change its delivery to local)"
                         if action == "update" and any("delivers" in w for w in why) else "")
                raise Refusal(f"'{action}' refused: that job was not made under this policy: "
                              f"{'; '.join(why)}{extra}. Remove it, or change it in Hermes itself")
            args = dict(args, job_id=job["job_id"])  # the id checked, not a name
        sent = {k: v for k, v in args.items() if k not in ("confirmed", "include_disabled")}
        if action in ("create", "update"):
            sent["deliver"] = "local"
        if action == "create":
            sent["enabled_toolsets"] = toolsets or list(allowed)
        elif toolsets is not None:
            sent["enabled_toolsets"] = toolsets
        return from_hermes(ctx.call_native(native, sent))

    return Tool(
        name="cronjob",
        description=(
            "Hermes' scheduled jobs. action=list is read-only. create, update, pause, "
            "resume, remove and run change jobs and need confirmed: true after the user "
            "approved. Jobs run a self-contained prompt as a Hermes agent limited to the "
            f"toolsets {', '.join(allowed)}; output is kept locally (deliver is always local). "
            "update, resume and run refuse a job made outside these rules. Jobs fire only "
            "while Hermes' own gateway (its scheduler) runs."),
        input_schema=_obj({
            "action": _s("list, or a change: " + ", ".join(MUTATIONS),
                         enum=["list", *MUTATIONS]),
            "confirmed": {"type": "boolean",
                          "description": "Must be true for every action except list."},
            "job_id": _s("The job (id or name) for update/pause/resume/remove/run.",
                         maxLength=512),
            "name": _s("A name for the job.", maxLength=512),
            "prompt": _s("create: the job's self-contained prompt; run: extra context.",
                         maxLength=16384),
            "schedule": _s("create/update: '30m', 'every 2h', '0 9 * * *', an ISO time.",
                           maxLength=512),
            "repeat": {"type": "integer", "minimum": 1, "description": "How many runs."},
            "deliver": _s("Always local.", enum=["local"]),
            "skills": {"type": "array", "items": {"type": "string"},
                       "description": "Skills loaded before the prompt."},
            "reason": _s("pause: why.", maxLength=512),
            "include_disabled": {"type": "boolean", "description": "list: show paused jobs."},
            "paused": {"type": "boolean", "description": "create: start paused."},
            "paused_reason": _s("create: why it starts paused.", maxLength=512),
            "continuity": {"type": "boolean",
                           "description": "Each run sees the job's previous output."},
            "enabled_toolsets": {"type": "array", "minItems": 1,
                                 "items": {"type": "string", "enum": list(allowed)},
                                 "description": "create/update: the job agent's toolsets "
                                                "(create: all allowed ones when omitted)."},
        }, ["action"]),
        call=_guard(check),
        annotations={"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False},
    )
