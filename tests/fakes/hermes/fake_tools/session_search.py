"""A fake of Hermes' session_search tool (tools/session_search_tool.py).

Registered like Hermes' own: name session_search, toolset session_search,
handler(args, **kw) -> JSON string. Like Hermes it has two databases here,
one per profile ("default", the served one, and "work"): `profile` reads
the other one, and a read by session_id that misses in the default profile
finds the session in another profile and says so with "profile". As in
Hermes, a session_id containing "/" is an "@session:<profile>/<id>" link:
the part before the "/" is the profile to read (unless `profile` is also
given) and the rest the id, for reads and scrolls alike. Every session in
an answer carries Hermes' "link": "@session:<profile>/<id>", the profile
being the one read (or hermes_cli.profiles.get_active_profile_name(), and
a bare "@session:<id>" when that cannot be imported, as here by default).
Simplified: search is a case-insensitive substring match, not FTS5, and
results carry only session_id, title, snippet and messages.
"""

import json

SESSIONS = {
    "default": {
        "20261201_101500_aaaaaa": {"title": "auth refactor", "messages": [
            {"id": 1, "role": "user", "content": "let us refactor the auth module"},
            {"id": 2, "role": "assistant", "content": "the auth refactor is planned"}]},
        "20261202_090000_bbbbbb": {"title": "gateway", "messages": [
            {"id": 3, "role": "user", "content": "start the gateway on port 3060"}]},
    },
    "work": {
        "20261203_120000_cccccc": {"title": "payroll", "messages": [
            {"id": 4, "role": "user", "content": "the payroll secret project"}]},
    },
}
CALLS = []


def _link(sid, profile=None):
    name = (profile or "").strip()
    if not name:
        try:
            from hermes_cli.profiles import get_active_profile_name
            name = get_active_profile_name()
            name = "" if name == "custom" else name
        except Exception:
            name = ""
    return f"@session:{name}/{sid}" if name else f"@session:{sid}"


def _read(profile, sid, link_profile=None):
    s = SESSIONS[profile].get(sid)
    if s is None:
        return None
    return {"success": True, "session_id": sid, "link": _link(sid, link_profile),
            "title": s["title"], "messages": s["messages"]}


def handler(args, **kw):
    CALLS.append(dict(args))
    asked = args.get("profile")
    sid = args.get("session_id")
    if isinstance(sid, str) and "/" in sid:  # Hermes: "<profile>/<id>" is a link
        emb_profile, _, emb_id = sid.partition("/")
        if emb_id:
            sid = emb_id
            if emb_profile and not (asked or "").strip():
                asked = emb_profile
    profile = asked or "default"
    if profile not in SESSIONS:
        return json.dumps({"success": False, "error": f"profile '{profile}': not found"})
    if sid:
        found = _read(profile, sid, asked)
        if found:
            return json.dumps(found)
        for other in SESSIONS:  # Hermes scans every profile on a miss
            found = _read(other, sid, other)
            if found:
                found["profile"] = other
                return json.dumps(found)
        return json.dumps({"success": False, "error": f"Session {sid} not found"})
    query = (args.get("query") or "").lower()
    limit = max(1, min(int(args.get("limit", 3)), 10))
    results = []
    for sid, s in SESSIONS[profile].items():
        hits = [m for m in s["messages"] if query in m["content"].lower()]
        if hits or not query:
            results.append({"session_id": sid, "link": _link(sid, asked), "title": s["title"],
                            "snippet": (hits or s["messages"])[0]["content"]})
    return json.dumps({"success": True, "query": query, "results": results[:limit],
                       "count": len(results[:limit])})


SCHEMA = {
    "name": "session_search",
    "description": "Search past sessions stored in the local session DB (fake).",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "limit": {"type": "integer", "default": 3},
        "sort": {"type": "string", "enum": ["newest", "oldest"]},
        "detail": {"type": "string", "enum": ["adaptive", "full"]},
        "session_id": {"type": "string"}, "around_message_id": {"type": "integer"},
        "window": {"type": "integer"}, "role_filter": {"type": "string"},
        "profile": {"type": "string"}, "scope": {"type": "string", "enum": ["current", "all"]},
    }, "required": []},
}

TOOLS = [dict(name="session_search", toolset="session_search", schema=SCHEMA, handler=handler)]
