"""Fake tools that misbehave, for the server's hostile tests (toolset "hostile").

Never on an allowlist outside tests. Their names start with hostile_ so no real Hermes tool
can clash with them.
"""

import json
import os
import sys
import threading
import time

# Set by a test to release hostile_hang early (the server never waits for it).
RELEASE = threading.Event()


def _raise(args, **kw):
    raise RuntimeError("hostile tool failed on purpose")


def _hang(args, **kw):
    RELEASE.wait(float(args.get("seconds", 3600)))
    return json.dumps({"woke": True})


def _noisy(args, **kw):
    print("hostile_noisy: print on stdout")
    sys.stdout.flush()
    os.write(1, b"hostile_noisy: raw fd 1\n")
    return json.dumps({"quiet": False})


def _error(args, **kw):
    return json.dumps({"error": "the tool reports a failure"})


def _text(args, **kw):
    return "plain text, not JSON"


def _list(args, **kw):
    return json.dumps([1, 2, 3])


def _wrong_type(args, **kw):
    return 42


def _multimodal(args, **kw):
    return {"_multimodal": True, "content": [
        {"type": "text", "text": "a caption"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]}


def _sleep(args, **kw):
    time.sleep(float(args.get("seconds", 0.2)))
    return json.dumps({"slept": args.get("seconds", 0.2), "task_id": kw.get("task_id")})


def _big(args, **kw):
    """A 10 MB JSON object (Hermes does not cap what a tool returns: a file read or a web
    page can be that large); the server must cut it."""
    return json.dumps({"data": "x" * (10 * 1024 * 1024)})


def _schema(name):
    return {"name": name, "description": f"Hostile test tool {name}.",
            "parameters": {"type": "object", "properties": {"seconds": {"type": "number"}}}}


TOOLS = [
    dict(name=n, toolset="hostile", schema=_schema(n), handler=h)
    for n, h in [("hostile_raise", _raise), ("hostile_hang", _hang), ("hostile_noisy", _noisy),
                 ("hostile_error", _error), ("hostile_text", _text), ("hostile_list", _list),
                 ("hostile_wrong_type", _wrong_type), ("hostile_multimodal", _multimodal),
                 ("hostile_sleep", _sleep), ("hostile_big", _big)]
]
