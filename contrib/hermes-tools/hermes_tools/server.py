"""The MCP side: newline-delimited JSON-RPC 2.0 over a pair of byte streams (stdio).

One reader (the caller's thread) parses requests; every tools/call runs on a worker thread
(workers.py) so a slow or hung tool never stops the reader: a timer answers the call with a
tool error when its time is up, and the worker, which Python cannot kill, keeps its
concurrency slot until it returns, so hung tools cannot pile up without bound. When every
slot has been held by a call past its timeout for stuck_exit_s, nothing can run any more:
on_stuck is told (the program exits so the gateway restarts it). Results are capped
(max_result_bytes): a longer text is cut with a marker and loses its structuredContent.
Responses are written whole, one line each, under a lock.
"""

import json
import logging
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import __version__
from .tool import CallContext, Tool, ToolResult
from .workers import Workers

log = logging.getLogger("hermes_tools")

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")  # newest first

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


class _Call:
    """One tools/call in flight: answered once, by the worker or by the timer."""

    def __init__(self, rid):
        self.rid = rid
        self.lock = threading.Lock()
        self.settled = False
        self.cancelled = False
        self.timer: Optional[threading.Timer] = None


class Server:
    def __init__(self, tools: List[Tool], out, call_native, task_id: Optional[str] = None,
                 timeout_for=lambda name: 120.0, max_line_bytes: int = 4 * 1024 * 1024,
                 max_concurrent: int = 8, max_result_bytes: int = 1024 * 1024,
                 stuck_exit_s: float = 60.0,
                 on_stuck: Optional[Callable[[int, List[str]], None]] = None):
        self.tools: Dict[str, Tool] = {t.name: t for t in tools}
        self.order = [t.name for t in tools]
        self.out = out
        self.call_native = call_native
        self.task_id = task_id
        self.timeout_for = timeout_for
        self.max_line = max_line_bytes
        self.max_result = max_result_bytes
        self.workers = Workers(max_concurrent)
        self.stuck_exit_s = stuck_exit_s
        self.on_stuck = on_stuck  # (slots, tool names); None: never checked
        self.stuck_told = False
        self.busy: Dict[int, Tuple[float, str]] = {}  # job -> (deadline, tool); calls_lock
        self.busy_seq = 0
        self.write_lock = threading.Lock()
        self.calls_lock = threading.Lock()
        self.calls_done = threading.Condition(self.calls_lock)
        self.calls: Dict[Any, _Call] = {}
        self.initialized = False
        self.closed = False

    # ---- output -----------------------------------------------------------------------

    def send(self, msg: Dict[str, Any]) -> None:
        line = _encode(msg)
        if line is None:  # a result JSON cannot carry (NaN, too deep, not JSON at all)
            log.warning("an answer could not be encoded as JSON")
            line = _encode({"jsonrpc": "2.0", "id": msg.get("id"), "result": {
                "content": [{"type": "text", "text": "the result could not be encoded as JSON"}],
                "isError": True}})
        with self.write_lock:
            if self.closed:
                return
            try:
                self.out.write(line + b"\n")
                self.out.flush()
            except (OSError, ValueError):
                self.closed = True  # the client is gone; the reader sees EOF next

    def reply(self, rid, result) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def error(self, rid, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})

    # ---- input ------------------------------------------------------------------------

    def serve(self, inp) -> None:
        """Read requests until EOF. A line over the cap is refused before it is parsed
        (and before more than the cap is held in memory)."""
        while not self.closed:
            line = inp.readline(self.max_line + 1)
            if not line:
                return
            if len(line) > self.max_line and not line.endswith(b"\n"):
                while True:  # drop the rest of the line, a bounded chunk at a time
                    rest = inp.readline(65536)
                    if not rest or rest.endswith(b"\n"):
                        break
                self.error(None, INVALID_REQUEST, f"request line over {self.max_line} bytes")
                continue
            if not line.strip():
                continue
            try:
                self.handle_line(line)
            except Exception as e:  # a bug here must not end the session; no message text
                log.error("request handling failed: %s", type(e).__name__)

    def drain(self) -> None:
        """Wait until every call in flight is answered (each is bounded by its timeout), so
        a client that sends its last request and closes its end still gets the answer."""
        with self.calls_lock:
            while self.calls:
                self.calls_done.wait()

    def handle_line(self, line: bytes) -> None:
        try:
            msg = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            # RecursionError: nesting deeper than Python's parser goes ("[[[[...").
            self.error(None, PARSE_ERROR, "invalid JSON")
            return
        if isinstance(msg, list):
            self.error(None, INVALID_REQUEST, "batches are not supported")
            return
        if not isinstance(msg, dict):
            self.error(None, INVALID_REQUEST, "a request must be a JSON object")
            return
        has_id = "id" in msg
        rid = msg.get("id")
        if has_id and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
            self.error(None, INVALID_REQUEST, "id must be a string or an integer")
            return
        method = msg.get("method")
        if msg.get("jsonrpc") != "2.0" or not isinstance(method, str):
            if has_id and ("result" in msg or "error" in msg) and method is None:
                return  # a response; we send no requests, so nothing waits for it
            self.error(rid, INVALID_REQUEST, "not a JSON-RPC 2.0 request")  # rid: None if absent
            return
        params = msg.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            if has_id:
                self.error(rid, INVALID_PARAMS, "params must be an object")
            return
        if not has_id:
            self.notification(method, params)
            return
        self.request(rid, method, params)

    def notification(self, method: str, params: Dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            rid = params.get("requestId")
            if isinstance(rid, bool) or not isinstance(rid, (str, int)):
                return
            with self.calls_lock:
                call = self.calls.get(_key(rid))
            if call is not None:
                with call.lock:
                    call.cancelled = True  # no answer will be sent for it
        # notifications/initialized and anything else: nothing to do

    def request(self, rid, method: str, params: Dict[str, Any]) -> None:
        if method == "initialize":
            self.initialize(rid, params)
        elif method == "ping":
            self.reply(rid, {})
        elif method in ("tools/list", "tools/call") and not self.initialized:
            self.error(rid, INVALID_REQUEST, "initialize first")
        elif method == "tools/list":
            self.reply(rid, {"tools": [self.tools[n].definition() for n in self.order]})
        elif method == "tools/call":
            self.tools_call(rid, params)
        else:
            self.error(rid, METHOD_NOT_FOUND, f"method not found: {method[:100]}")

    def initialize(self, rid, params: Dict[str, Any]) -> None:
        if self.initialized:
            self.error(rid, INVALID_REQUEST, "already initialized")
            return
        asked = params.get("protocolVersion")
        if not isinstance(asked, str):
            self.error(rid, INVALID_PARAMS, "protocolVersion must be a string")
            return
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        self.initialized = True
        self.reply(rid, {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "hermes-tools", "version": __version__},
        })

    # ---- tools/call -------------------------------------------------------------------

    def tools_call(self, rid, params: Dict[str, Any]) -> None:
        name = params.get("name")
        args = params.get("arguments", {})
        if args is None:
            args = {}
        if not isinstance(name, str) or name not in self.tools:
            shown = name[:100] if isinstance(name, str) else name
            self.error(rid, INVALID_PARAMS, f"unknown tool: {shown}")
            return
        if not isinstance(args, dict):
            self.error(rid, INVALID_PARAMS, "arguments must be an object")
            return
        key = _key(rid)
        with self.calls_lock:
            if key in self.calls:
                self.error(rid, INVALID_REQUEST, "a call with this id is in progress")
                return
            call = self.calls[key] = _Call(rid)
        tool = self.tools[name]
        timeout = self.timeout_for(name)
        call.timer = threading.Timer(timeout, self.time_out, (
            call, ToolResult(text=f"{name} timed out after {timeout:g} s", is_error=True)))
        call.timer.daemon = True
        ctx = CallContext(call_native=self.call_native, cancelled=lambda: call.cancelled,
                          task_id=self.task_id)
        with self.calls_lock:
            self.busy_seq += 1
            job = self.busy_seq
            self.busy[job] = (time.monotonic() + timeout, name)

        def not_busy():
            with self.calls_lock:
                self.busy.pop(job, None)

        def work(free):
            try:
                self.run(call, tool, args, ctx, lambda: (not_busy(), free()))
            finally:
                not_busy()
        if not self.workers.try_submit(work):
            not_busy()
            self.settle(call, ToolResult(text="too many calls in progress; try again later",
                                         is_error=True))
            return
        call.timer.start()

    def run(self, call: _Call, tool: Tool, args: Dict[str, Any], ctx: CallContext,
            free) -> None:
        try:
            result = tool.call(args, ctx)
            if not isinstance(result, ToolResult):
                log.warning("tool %s returned a %s", tool.name, type(result).__name__)
                result = ToolResult(text=f"{tool.name} returned no result", is_error=True)
        except Exception as e:  # a tool error, never a crash; no message: it may hold secrets
            log.warning("tool %s raised %s", tool.name, type(e).__name__)
            result = ToolResult(text=f"{tool.name} failed ({type(e).__name__})", is_error=True)
        free()  # before the answer goes out, so a client's next call finds the place
        call.timer.cancel()
        self.settle(call, result)

    def time_out(self, call: _Call, result: ToolResult) -> None:
        self.settle(call, result)
        self.check_stuck()

    def check_stuck(self) -> None:
        """Called when a call times out (the moment the last free slot can become stuck),
        then again once stuck_exit_s would have passed: if every slot is still held by a
        call past its deadline, and has been for stuck_exit_s, tell on_stuck once."""
        if self.on_stuck is None or self.stuck_told:
            return
        with self.calls_lock:
            now = time.monotonic()
            if (len(self.busy) < self.workers.limit
                    or any(d > now for d, _ in self.busy.values())):
                return  # a slot is free or still within its time: the next timeout rechecks
            left = max(d for d, _ in self.busy.values()) + self.stuck_exit_s - now
            slots, names = len(self.busy), sorted({n for _, n in self.busy.values()})
            if left <= 0:
                self.stuck_told = True
        if left > 0:
            timer = threading.Timer(left, self.check_stuck)
            timer.daemon = True
            timer.start()
            return
        self.on_stuck(slots, names)  # it reports (the program, on stderr)

    def settle(self, call: _Call, result: ToolResult) -> None:
        with call.lock:
            if call.settled:
                return
            call.settled = True
            answer = not call.cancelled
            call.cancelled = True  # a timed-out tool that polls cancelled() can stop
        with self.calls_lock:
            self.calls.pop(_key(call.rid), None)
            self.calls_done.notify_all()
        if answer:
            self.send_result(call.rid, result)

    def send_result(self, rid, result: ToolResult) -> None:
        """Every result passes here, native or adapter: the size cap is applied here. Over
        max_result_bytes (UTF-8), the text is cut with a marker saying so and the
        structuredContent (a second copy of the same data, or too large itself) is dropped."""
        text = result.text if isinstance(result.text, str) else str(result.text)
        structured = result.structured if isinstance(result.structured, dict) else None
        raw = text.encode("utf-8", "replace")
        if len(raw) > self.max_result:
            cut = raw[:self.max_result].decode("utf-8", "ignore")  # no half character
            text = (f"{cut}\n[hermes-tools: result truncated: {len(raw)} bytes, over the "
                    f"max_result_bytes cap of {self.max_result}]")
            structured = None
        elif structured is not None:
            encoded = _encode(structured)
            if encoded is not None and len(encoded) > self.max_result:
                structured = None  # the text stays whole; its JSON copy goes
        body: Dict[str, Any] = {"content": [{"type": "text", "text": text}],
                                "isError": bool(result.is_error)}
        if structured is not None:
            body["structuredContent"] = structured
        self.reply(rid, body)


def _encode(msg) -> Optional[bytes]:
    try:
        text = json.dumps(msg, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return text.encode("utf-8", "replace")  # a lone surrogate (from "\\ud800") becomes "?"


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def _key(rid):
    """Request ids 1 and "1" are different requests: keep their type in the key."""
    return (type(rid).__name__, rid)
