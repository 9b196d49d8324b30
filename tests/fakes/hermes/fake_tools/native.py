"""Fake native Hermes tools: the names the gateway example curates, and some it hides.

Each handler answers with a small JSON object naming the tool, its arguments and the task id,
so a test can see that a call reached Hermes' dispatcher with what it sent. None of them does
real work (no network, no files, no browser).
"""

import json


def _schema(name, description, props=None, required=None):
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": props or {}, "required": required or []},
    }


def _echo(name):
    def handler(args, **kw):
        return json.dumps({"tool": name, "args": args, "task_id": kw.get("task_id")})
    return handler


_S = {"type": "string"}
_SPECS = [
    # (name, toolset, description, properties, required)
    ("web_search", "web", "Search the web.", {"query": _S}, ["query"]),
    ("web_extract", "web", "Extract pages.", {"urls": {"type": "array", "items": _S}}, ["urls"]),
    ("vision_analyze", "vision", "Describe an image.", {"image_url": _S, "question": _S},
     ["image_url"]),
    ("skills_list", "skills", "List skills.", {"category": _S}, []),
    ("skill_view", "skills", "Show a skill.", {"name": _S}, ["name"]),
    ("skill_manage", "skills", "Create or edit a skill.", {"action": _S}, ["action"]),
    ("read_file", "file", "Read a file.", {"path": _S}, ["path"]),
    ("write_file", "file", "Write a file.", {"path": _S, "content": _S}, ["path", "content"]),
    ("patch", "file", "Patch a file.", {"path": _S, "old_string": _S, "new_string": _S},
     ["path"]),
    ("search_files", "file", "Search files.", {"pattern": _S}, ["pattern"]),
    ("terminal", "terminal", "Run a command.", {"command": _S}, ["command"]),
    ("process", "terminal", "Manage background processes.", {"action": _S}, ["action"]),
    ("image_generate", "image_gen", "Generate an image.", {"prompt": _S}, ["prompt"]),
    ("video_analyze", "video", "Describe a video.", {"video_url": _S}, ["video_url"]),
    ("browser_navigate", "browser", "Open a URL.", {"url": _S}, ["url"]),
    ("browser_click", "browser", "Click an element.", {"ref": _S}, ["ref"]),
    ("browser_type", "browser", "Type into an element.", {"ref": _S, "text": _S},
     ["ref", "text"]),
    ("browser_press", "browser", "Press a key.", {"key": _S}, ["key"]),
    ("browser_snapshot", "browser", "Snapshot the page.", {}, []),
    ("browser_scroll", "browser", "Scroll the page.", {"direction": _S}, ["direction"]),
    ("browser_back", "browser", "Go back.", {}, []),
    ("browser_get_images", "browser", "List the page's images.", {}, []),
    ("browser_console", "browser", "Read the console.", {}, []),
    ("browser_vision", "browser", "Look at the page.", {"question": _S}, ["question"]),
    # Offered by Hermes, never by the gateway example.
    ("browser_exec", "browser", "Run JavaScript in the page.", {"code": _S}, ["code"]),
    ("browser_cdp", "browser", "Send a raw CDP command.", {"method": _S}, ["method"]),
    ("computer_use", "computer_use", "Drive the desktop.", {"action": _S}, ["action"]),
    ("text_to_speech", "tts", "Speak text.", {"text": _S}, ["text"]),
    ("todo", "todo", "The agent's todo list.", {"todos": {"type": "array"}}, []),
    ("memory", "memory", "The agent's built-in memory.", {"action": _S}, ["action"]),
]

TOOLS = [
    dict(name=n, toolset=ts, schema=_schema(n, d, p, r), handler=_echo(n))
    for (n, ts, d, p, r) in _SPECS
]
