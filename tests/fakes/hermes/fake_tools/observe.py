"""What a test outside the process can see of the fake Hermes, and a way to break its web.

The gateway example's test runs hermes-tools as the gateway's child, so it cannot look at the
fake's in-memory CALLS. When $HERMES_HOME/fake-hermes.json exists (a test writes it; Hermes
never has such a file), this module wraps the registry's dispatch, the one door every Hermes
tool call goes through (handle_function_call and the agent-loop tools alike):
  {"calls": "/abs/file"}   append one JSON line per call: {"tool": name, "args": args}
  {"fail": ["web_extract"]} those tools answer what Hermes' web tools answer while the
                            provider's auth is not usable: a success whose per-URL result
                            holds the error (a nested error, not a top-level one)
Without the file nothing changes (the hermes-tools unit tests never write it).
"""

import json
import os
import threading

from tools.registry import registry

TOOLS = []  # registers nothing of its own


def _settings():
    home = os.environ.get("HERMES_HOME")
    if not home:
        return None
    try:
        with open(os.path.join(home, "fake-hermes.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _install(settings):
    inner = registry.dispatch
    lock = threading.Lock()
    log, fail = settings.get("calls"), set(settings.get("fail") or [])

    def dispatch(name, args, **kwargs):
        if log:
            with lock, open(log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"tool": name, "args": args}) + "\n")
        if name in fail:
            urls = args.get("urls") if isinstance(args, dict) else None
            return json.dumps({"success": True, "results": [
                {"url": u, "error": "Firecrawl: Nous gateway authentication required"}
                for u in (urls if isinstance(urls, list) else ["?"])]})
        return inner(name, args, **kwargs)

    registry.dispatch = dispatch


_found = _settings()
if _found:
    _install(_found)
