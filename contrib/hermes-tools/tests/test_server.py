"""server.Server in process, with hand-made Tools (no Hermes): the protocol's edges, tools
that misbehave in ways Hermes' own dispatcher would hide (raising, wrong return types),
timeouts seen by the tool through cancelled(), and request ids."""

import io
import json
import threading
import time
import unittest

from hermes_tools.server import Server
from hermes_tools.tool import Tool, ToolResult


class Sink:
    """A write-only stream collecting the server's lines; wait() for the next one."""

    def __init__(self):
        self.cond = threading.Condition()
        self.lines = []

    def write(self, data):
        with self.cond:
            for line in data.splitlines():
                self.lines.append(json.loads(line))
            self.cond.notify_all()

    def flush(self):
        pass

    def wait(self, n=1, timeout=5.0):
        """The first n lines, once there are n (fails after timeout)."""
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.lines) >= n, timeout):
                raise AssertionError(f"{len(self.lines)} lines, wanted {n}: {self.lines}")
            return self.lines[:n]


def tool(name, fn, schema=None):
    return Tool(name=name, description=f"{name} for tests",
                input_schema=schema or {"type": "object"}, call=fn)


class ServerTest(unittest.TestCase):
    def make(self, tools=(), **kw):
        self.sink = Sink()
        self.natives = []
        kw.setdefault("timeout_for", lambda name: 2.0)
        self.server = Server(list(tools), self.sink,
                             lambda n, a: self.natives.append((n, a)) or '{"ok": true}',
                             task_id="t-1", **kw)
        return self.server

    def feed(self, *msgs):
        for m in msgs:
            self.server.handle_line(m if isinstance(m, bytes) else json.dumps(m).encode())

    def init(self):
        self.feed({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {}}})
        self.sink.wait(1)
        self.sink.lines.clear()

    def call(self, rid, name, args=None):
        self.feed({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": name, "arguments": args or {}}})


class Protocol(ServerTest):
    def test_invalid_ids_and_params(self):
        self.make()
        self.init()
        self.feed({"jsonrpc": "2.0", "id": True, "method": "ping"},
                  {"jsonrpc": "2.0", "id": None, "method": "ping"},
                  {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
                  {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": [1]},
                  {"jsonrpc": "1.0", "id": 3, "method": "ping"},
                  {"jsonrpc": "2.0", "id": 4},
                  {},
                  {"jsonrpc": "1.0", "method": "notifications/initialized"})
        got = self.sink.wait(8)
        self.assertEqual([(m["id"], m["error"]["code"]) for m in got],
                         [(None, -32600), (None, -32600), (None, -32600), (2, -32602),
                          (3, -32600), (4, -32600), (None, -32600), (None, -32600)])

    def test_client_responses_are_ignored(self):
        self.make()
        self.feed({"jsonrpc": "2.0", "id": 9, "result": {}},
                  {"jsonrpc": "2.0", "id": 10, "error": {"code": 1, "message": "x"}},
                  {"jsonrpc": "2.0", "id": 11, "method": "ping"})
        self.assertEqual(self.sink.wait(1)[0], {"jsonrpc": "2.0", "id": 11, "result": {}})
        time.sleep(0.1)
        self.assertEqual(len(self.sink.lines), 1)

    def test_initialize_once_and_needs_a_version(self):
        self.make()
        self.feed({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        self.init()
        self.feed({"jsonrpc": "2.0", "id": 2, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25"}})
        self.assertEqual(self.sink.wait(1)[0]["error"]["code"], -32600)

    def test_call_arguments_must_be_an_object(self):
        self.make([tool("t", lambda a, c: ToolResult(text="x"))])
        self.init()
        self.feed({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "t", "arguments": [1]}},
                  {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 7}},
                  {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}})
        self.assertEqual([m["error"]["code"] for m in self.sink.wait(3)], [-32602] * 3)

    def test_list_keeps_the_servers_order_and_annotations(self):
        a = tool("b_tool", lambda a, c: ToolResult(text=""))
        a.annotations = {"readOnlyHint": True}
        self.make([a, tool("a_tool", lambda a, c: ToolResult(text=""))])
        self.init()
        self.feed({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        tools = self.sink.wait(1)[0]["result"]["tools"]
        self.assertEqual([t["name"] for t in tools], ["b_tool", "a_tool"])
        self.assertEqual(tools[0]["annotations"], {"readOnlyHint": True})
        self.assertNotIn("annotations", tools[1])

    def test_serve_reads_until_eof(self):
        self.make()
        data = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n\n   \n{"jsonrpc":"2.0","id":2,"method":"ping"}'
        self.server.serve(io.BytesIO(data))
        self.assertEqual([m["id"] for m in self.sink.wait(2)], [1, 2])


class Calls(ServerTest):
    def test_a_raising_tool_is_a_tool_error_without_its_message(self):
        def boom(args, ctx):
            raise ValueError("password=hunter2")
        self.make([tool("boom", boom)])
        self.init()
        with self.assertLogs("hermes_tools", "WARNING") as logs:
            self.call(1, "boom")
            res = self.sink.wait(1)[0]["result"]
        self.assertEqual(logs.output, ["WARNING:hermes_tools:tool boom raised ValueError"])
        self.assertTrue(res["isError"])
        self.assertEqual(res["content"][0]["text"], "boom failed (ValueError)")
        self.assertNotIn("hunter2", json.dumps(res))

    def test_a_tool_returning_no_result_is_a_tool_error(self):
        self.make([tool("bad", lambda a, c: "a string")])
        self.init()
        with self.assertLogs("hermes_tools", "WARNING"):
            self.call(1, "bad")
            self.assertTrue(self.sink.wait(1)[0]["result"]["isError"])

    def test_results_json_cannot_carry(self):
        self.make([tool("nan", lambda a, c: ToolResult(text="x", structured={"v": float("nan")})),
                   tool("surrogate", lambda a, c: ToolResult(text="a\ud800b")),
                   tool("number", lambda a, c: ToolResult(text=42))])
        self.init()
        with self.assertLogs("hermes_tools", "WARNING"):
            self.call(1, "nan")
            res = self.sink.wait(1)[0]
        self.assertEqual(res["id"], 1)
        self.assertTrue(res["result"]["isError"])
        self.assertIn("could not be encoded", res["result"]["content"][0]["text"])
        self.call(2, "surrogate")
        self.assertEqual(self.sink.wait(2)[1]["result"]["content"][0]["text"], "a?b")
        self.call(3, "number")
        self.assertEqual(self.sink.wait(3)[2]["result"]["content"][0]["text"], "42")

    def test_structured_and_context(self):
        seen = {}

        def t(args, ctx):
            seen["task"] = ctx.task_id
            ctx.call_native("web_search", {"q": args["q"]})
            return ToolResult(text='{"a": 1}', structured={"a": 1})
        self.make([tool("t", t)])
        self.init()
        self.call(1, "t", {"q": "x"})
        res = self.sink.wait(1)[0]["result"]
        self.assertEqual(res, {"content": [{"type": "text", "text": '{"a": 1}'}],
                               "isError": False, "structuredContent": {"a": 1}})
        self.assertEqual(seen["task"], "t-1")
        self.assertEqual(self.natives, [("web_search", {"q": "x"})])

    def test_timeout_is_seen_by_the_tool(self):
        gone = threading.Event()

        def slow(args, ctx):
            while not ctx.cancelled():
                time.sleep(0.01)
            gone.set()
            return ToolResult(text="late")
        self.make([tool("slow", slow)], timeout_for=lambda n: 0.2)
        self.init()
        self.call(1, "slow")
        res = self.sink.wait(1)[0]["result"]
        self.assertIn("timed out after 0.2 s", res["content"][0]["text"])
        self.assertTrue(gone.wait(2))
        time.sleep(0.1)
        self.assertEqual(len(self.sink.lines), 1)  # the late result is dropped

    def test_cancel_reaches_the_tool_and_nothing_is_answered(self):
        started, gone = threading.Event(), threading.Event()

        def slow(args, ctx):
            started.set()
            while not ctx.cancelled():
                time.sleep(0.01)
            gone.set()
            return ToolResult(text="late")
        self.make([tool("slow", slow)])
        self.init()
        self.call("c1", "slow")
        self.assertTrue(started.wait(2))
        self.feed({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": "c1"}})
        self.assertTrue(gone.wait(2))
        self.server.drain()
        self.assertEqual(self.sink.lines, [])

    def test_ids_of_different_types_are_different_calls(self):
        release = threading.Event()

        def wait(args, ctx):
            release.wait(2)
            return ToolResult(text="done")
        self.make([tool("w", wait)])
        self.init()
        self.call(1, "w")
        self.call("1", "w")
        self.call(1, "w")  # the same id while the first is in flight
        dup = self.sink.wait(1)[0]
        self.assertEqual((dup["id"], dup["error"]["code"]), (1, -32600))
        release.set()
        ids = sorted(repr(m["id"]) for m in self.sink.wait(3)[1:])
        self.assertEqual(ids, ["'1'", "1"])

    def test_calls_reuse_their_worker_threads(self):
        # Hermes keeps an event loop per thread for async tools: a call must not get a new
        # thread each time. A hung call keeps its thread; the next call gets another.
        seen, release = [], threading.Event()

        def who(args, ctx):
            seen.append(threading.get_ident())
            if args.get("hang"):
                release.wait(5)
            return ToolResult(text="")
        self.make([tool("who", who)], timeout_for=lambda n: 0.2)
        self.init()
        for i in range(3):
            self.call(i, "who")
            self.sink.wait(i + 1)
        self.assertEqual(len(set(seen)), 1)
        self.call(3, "who", {"hang": True})
        self.call(4, "who")
        self.sink.wait(5)
        self.assertNotEqual(seen[3], seen[4])
        release.set()
        self.assertEqual(self.server.workers.threads, 2)

    def test_a_burst_of_calls_is_answered_in_full(self):
        self.make([tool("t", lambda a, c: (time.sleep(0.001), ToolResult(text="ok"))[1])],
                  max_concurrent=3)
        self.init()
        for i in range(200):
            self.call(i, "t")
        got = self.sink.wait(200)
        self.assertEqual(sorted(m["id"] for m in got), list(range(200)))
        texts = {m["result"]["content"][0]["text"] for m in got}
        self.assertLessEqual(texts, {"ok", "too many calls in progress; try again later"})
        self.assertIn("ok", texts)
        self.assertLessEqual(self.server.workers.threads, 3)

    def test_slots_are_bounded_and_freed(self):
        release = threading.Event()

        def wait(args, ctx):
            release.wait(5)
            return ToolResult(text="done")
        self.make([tool("w", wait)], max_concurrent=2)
        self.init()
        self.call(1, "w")
        self.call(2, "w")
        self.call(3, "w")
        busy = self.sink.wait(1)[0]
        self.assertEqual(busy["id"], 3)
        self.assertIn("too many calls", busy["result"]["content"][0]["text"])
        release.set()
        self.server.drain()
        self.call(4, "w")
        self.assertEqual(self.sink.wait(4)[3]["result"]["content"][0]["text"], "done")


class Caps(ServerTest):
    def test_a_result_over_the_cap_is_cut_and_loses_its_structure(self):
        big = "é" * 60  # 120 bytes of UTF-8: the cut must not split a character
        self.make([tool("big", lambda a, c: ToolResult(text=big, structured={"v": 1})),
                   tool("fits", lambda a, c: ToolResult(text="short", structured={"v": big})),
                   tool("edge", lambda a, c: ToolResult(text="a" * 101, is_error=True))],
                  max_result_bytes=101)
        self.init()
        self.call(1, "big")
        res = self.sink.wait(1)[0]["result"]
        self.assertNotIn("structuredContent", res)
        self.assertEqual(res["content"][0]["text"], "é" * 50 + "\n[hermes-tools: result "
                         "truncated: 120 bytes, over the max_result_bytes cap of 101]")
        self.call(2, "fits")  # short text, structure over the cap: the structure goes
        res = self.sink.wait(2)[1]["result"]
        self.assertEqual((res["content"][0]["text"], "structuredContent" in res),
                         ("short", False))
        self.call(3, "edge")  # at the cap: whole; isError is kept
        res = self.sink.wait(3)[2]["result"]
        self.assertEqual((res["content"][0]["text"], res["isError"]), ("a" * 101, True))


class Stuck(ServerTest):
    def test_on_stuck_once_every_slot_is_hung_past_its_time(self):
        release, told = threading.Event(), []
        self.addCleanup(release.set)

        def hang(args, ctx):
            release.wait(10)
            return ToolResult(text="late")
        self.make([tool("hang", hang), tool("ok", lambda a, c: ToolResult(text="ok"))],
                  max_concurrent=2, timeout_for=lambda n: 0.1, stuck_exit_s=0.3,
                  on_stuck=lambda slots, names: told.append((slots, names)))
        self.init()
        self.call(1, "hang")
        self.sink.wait(1)
        time.sleep(0.6)
        self.assertEqual(told, [])  # one slot still free
        t0 = time.monotonic()
        self.call(2, "hang")
        self.sink.wait(2)
        deadline = time.monotonic() + 3
        while not told and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(told, [(2, ["hang"])])
        self.assertGreaterEqual(time.monotonic() - t0, 0.35)
        release.set()
        self.server.drain()
        time.sleep(0.1)
        self.assertEqual(told, [(2, ["hang"])])  # told once

    def test_slots_freed_in_time_are_not_stuck(self):
        release, told = threading.Event(), []

        def hang(args, ctx):
            release.wait(10)
            return ToolResult(text="late")
        self.make([tool("hang", hang)], max_concurrent=1, timeout_for=lambda n: 0.1,
                  stuck_exit_s=1.0, on_stuck=lambda s, n: told.append(s))
        self.init()
        self.call(1, "hang")
        self.sink.wait(1)
        release.set()  # returns before stuck_exit_s has passed
        time.sleep(1.3)
        self.assertEqual(told, [])
        self.assertEqual(self.server.busy, {})


if __name__ == "__main__":
    unittest.main()
