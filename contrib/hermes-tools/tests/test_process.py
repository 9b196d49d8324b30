"""The server as the gateway runs it: a child process with the fake Hermes on PYTHONPATH,
spoken to over its stdin and stdout. Includes the hostile set (oversized lines, invalid JSON,
unknown methods, a tool that raises, a tool that hangs past its timeout, stdout noise)."""

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from support import FAKE_HERMES, PKG_ROOT, Child, env_with


class ProcessTest(unittest.TestCase):
    def start(self, *args, **kw):
        child = Child(list(args), **kw)
        self.addCleanup(child.close)
        return child

    def assertNoMessage(self, child, within):
        with self.assertRaises(queue.Empty):
            child.lines.get(timeout=within)


class Handshake(ProcessTest):
    def test_initialize_list_and_call(self):
        c = self.start("--allow", "web_search,web_extract")
        r = c.initialize()["result"]
        self.assertEqual(r["protocolVersion"], "2025-11-25")
        self.assertEqual(r["serverInfo"]["name"], "hermes-tools")
        self.assertIn("tools", r["capabilities"])
        tools = c.request("tools/list")["result"]["tools"]
        self.assertEqual([t["name"] for t in tools], ["web_search", "web_extract"])
        self.assertEqual(tools[0]["inputSchema"]["required"], ["query"])
        self.assertEqual(tools[0]["inputSchema"]["type"], "object")
        res = c.call("web_search", {"query": "hermes"})["result"]
        self.assertFalse(res["isError"])
        self.assertEqual(res["structuredContent"],
                         {"tool": "web_search", "args": {"query": "hermes"},
                          "task_id": "hermes-tools"})
        self.assertEqual(json.loads(res["content"][0]["text"]), res["structuredContent"])
        self.assertEqual(c.request("ping")["result"], {})
        self.assertEqual(c.close(), 0)

    def test_older_protocol_is_echoed_and_unknown_gets_ours(self):
        c = self.start()
        r = c.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        self.assertEqual(r["result"]["protocolVersion"], "2025-06-18")
        c2 = self.start()
        r = c2.request("initialize", {"protocolVersion": "1999-01-01", "capabilities": {}})
        self.assertEqual(r["result"]["protocolVersion"], "2025-11-25")

    def test_tools_before_initialize_are_refused(self):
        c = self.start("--allow", "web_search")
        self.assertEqual(c.request("tools/list")["error"]["code"], -32600)
        self.assertEqual(c.request("ping")["result"], {})

    def test_task_id_from_arguments(self):
        c = self.start("--allow", "web_search", "--task-id", "gw-1")
        c.initialize()
        res = c.call("web_search", {"query": "x"})["result"]
        self.assertEqual(res["structuredContent"]["task_id"], "gw-1")


class Allowlist(ProcessTest):
    def test_default_deny(self):
        c = self.start()
        c.initialize()
        self.assertEqual(c.request("tools/list")["result"]["tools"], [])
        err = c.call("web_search", {"query": "x"})["error"]
        self.assertEqual(err["code"], -32602)
        self.assertIn("no tool allowed", c.wait_stderr("no tool allowed"))

    def test_unlisted_hermes_tools_are_not_callable(self):
        c = self.start("--allow", "web_search")
        c.initialize()
        for name in ("browser_exec", "browser_cdp", "computer_use", "terminal"):
            self.assertEqual(c.call(name, {})["error"]["code"], -32602, name)

    def test_allowed_but_absent_tool_is_named_on_stderr(self):
        c = self.start("--allow", "web_search,no_such_tool")
        c.initialize()
        names = [t["name"] for t in c.request("tools/list")["result"]["tools"]]
        self.assertEqual(names, ["web_search"])
        self.assertIn("no_such_tool is not offered", c.wait_stderr("no_such_tool"))

    def test_config_file_and_toolsets(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"allow": ["web_search", "read_file"], "toolsets": ["web"]}, f)
        self.addCleanup(os.unlink, f.name)
        c = self.start("--config", f.name)
        c.initialize()
        # read_file is allowed but its toolset is not loaded: not offered.
        names = [t["name"] for t in c.request("tools/list")["result"]["tools"]]
        self.assertEqual(names, ["web_search"])


class Examples(ProcessTest):
    def test_the_native_example_serves_its_tools_from_hermes(self):
        path = os.path.join(PKG_ROOT, "hermes-tools.example.json")
        with open(path) as f:
            allow = json.load(f)["allow"]
        c = self.start("--config", path)
        c.initialize()
        names = [t["name"] for t in c.request("tools/list")["result"]["tools"]]
        native = [n for n in allow if n not in ("session_search", "delegate_task", "cronjob")]
        self.assertEqual(len(native), 23)
        self.assertEqual([n for n in names if n in native], native)
        self.assertFalse({"browser_exec", "browser_cdp", "computer_use"} & set(names))

    def test_the_memory_example_loads(self):
        c = self.start("--config", os.path.join(PKG_ROOT, "memory.example.json"))
        self.assertEqual(c.initialize()["result"]["serverInfo"]["name"], "hermes-tools")


class Hostile(ProcessTest):
    def test_oversized_line_is_refused_and_the_server_goes_on(self):
        c = self.start("--allow", "web_search", "--max-line-bytes", "1024")
        c.initialize()
        big = {"jsonrpc": "2.0", "id": 99, "method": "ping", "params": {"pad": "x" * 5000}}
        c.send(big)
        err = c.recv()
        self.assertIsNone(err["id"])
        self.assertEqual(err["error"]["code"], -32600)
        self.assertIn("1024", err["error"]["message"])
        self.assertEqual(c.request("ping")["result"], {})
        # A line of exactly the cap (newline excluded) is accepted.
        line = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode()
        c.write(line + b" " * (1024 - len(line)) + b"\n")
        self.assertEqual(c.recv()["id"], 7)

    def test_default_cap_is_four_mib(self):
        c = self.start()
        c.initialize()
        c.write(b"[" + b"1," * (2 * 1024 * 1024) + b"1]\n")
        err = c.recv(timeout=30)
        self.assertEqual(err["error"]["code"], -32600)
        self.assertIn(str(4 * 1024 * 1024), err["error"]["message"])
        self.assertEqual(c.request("ping")["result"], {})

    def test_invalid_json_and_invalid_utf8(self):
        c = self.start()
        for bad in (b"{\"jsonrpc\": \"2.0\", \"id\": 1,\n", b"garbage\n", b"\xff\xfe{}\n"):
            c.write(bad)
            err = c.recv()
            self.assertIsNone(err["id"])
            self.assertEqual(err["error"]["code"], -32700)
        self.assertEqual(c.request("ping")["result"], {})

    def test_deep_nesting_and_non_json_numbers(self):
        c = self.start()
        for bad in (b"[" * 200000 + b"\n", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}\n',
                    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":-Infinity}}\n'):
            c.write(bad)
            err = c.recv()
            self.assertEqual((err["id"], err["error"]["code"]), (None, -32700))
        c.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": [1, {"a": 2}]}})
        self.assertEqual(c.request("ping")["result"], {})

    def test_batches_and_non_objects_are_refused(self):
        c = self.start()
        c.write(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n')
        err = c.recv()
        self.assertEqual(err["error"]["code"], -32600)
        self.assertIn("batch", err["error"]["message"])
        c.write(b'"ping"\n')
        self.assertEqual(c.recv()["error"]["code"], -32600)
        self.assertEqual(c.request("ping")["result"], {})

    def test_unknown_method_and_unknown_notification(self):
        c = self.start()
        c.initialize()
        err = c.request("resources/list")["error"]
        self.assertEqual(err["code"], -32601)
        c.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
        self.assertEqual(c.request("ping")["result"], {})  # no answer to the notification

    def test_tool_that_raises_is_a_tool_error(self):
        c = self.start("--allow", "hostile_raise,web_search")
        c.initialize()
        res = c.call("hostile_raise")["result"]
        self.assertTrue(res["isError"])
        self.assertIn("[TOOL_ERROR]", res["content"][0]["text"])
        self.assertFalse(c.call("web_search", {"query": "x"})["result"]["isError"])

    def test_tool_reported_errors(self):
        c = self.start("--allow", "hostile_error,hostile_wrong_type")
        c.initialize()
        res = c.call("hostile_error")["result"]
        self.assertTrue(res["isError"])
        self.assertEqual(res["structuredContent"], {"error": "the tool reports a failure"})
        res = c.call("hostile_wrong_type")["result"]
        self.assertTrue(res["isError"])
        self.assertEqual(res["structuredContent"]["error_type"], "tool_result_contract")

    def test_non_object_results_are_text_only(self):
        c = self.start("--allow", "hostile_text,hostile_list,hostile_multimodal")
        c.initialize()
        for name, text in (("hostile_text", "plain text, not JSON"), ("hostile_list", "[1, 2, 3]"),
                           ("hostile_multimodal", "a caption\n[image]")):
            res = c.call(name)["result"]
            self.assertFalse(res["isError"], name)
            self.assertNotIn("structuredContent", res, name)
            self.assertEqual(res["content"], [{"type": "text", "text": text}], name)

    def test_hang_past_timeout_is_a_tool_error_and_the_server_keeps_serving(self):
        c = self.start("--allow", "hostile_hang,web_search", "--timeout", "0.5")
        c.initialize()
        c.send({"jsonrpc": "2.0", "id": "hang", "method": "tools/call",
                "params": {"name": "hostile_hang", "arguments": {}}})
        # While it hangs, other requests are answered.
        self.assertFalse(c.call("web_search", {"query": "x"})["result"]["isError"])
        t0 = time.monotonic()
        res = c.recv(timeout=10)
        self.assertEqual(res["id"], "hang")
        self.assertTrue(res["result"]["isError"])
        self.assertIn("timed out after 0.5 s", res["result"]["content"][0]["text"])
        self.assertLess(time.monotonic() - t0, 5)
        self.assertFalse(c.call("web_search", {"query": "y"})["result"]["isError"])
        self.assertEqual(c.close(), 0)  # hung threads do not hold the exit

    def test_hung_tools_hold_their_slot(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"allow": ["hostile_hang", "web_search"], "max_concurrent": 1,
                       "timeout_seconds": 0.3}, f)
        self.addCleanup(os.unlink, f.name)
        c = self.start("--config", f.name)
        c.initialize()
        self.assertIn("timed out", c.call("hostile_hang")["result"]["content"][0]["text"])
        res = c.call("web_search", {"query": "x"})["result"]
        self.assertTrue(res["isError"])
        self.assertIn("too many calls in progress", res["content"][0]["text"])

    def test_a_10_mb_result_is_cut_to_the_cap(self):
        c = self.start("--allow", "hostile_big,hostile_text")
        c.initialize()
        res = c.call("hostile_big", timeout=30)["result"]
        self.assertNotIn("structuredContent", res)
        self.assertFalse(res["isError"])
        text = res["content"][0]["text"]
        self.assertTrue(text.startswith('{"data": "xxx'))
        self.assertTrue(text.endswith(f"[hermes-tools: result truncated: {10 * 1024 * 1024 + 12}"
                                      " bytes, over the max_result_bytes cap of 1048576]"), text[-200:])
        self.assertLess(len(text.encode()), 1024 * 1024 + 200)
        self.assertEqual(c.call("hostile_text")["result"]["content"][0]["text"],
                         "plain text, not JSON")
        c2 = self.start("--allow", "hostile_big", "--max-result-bytes", "100")
        c2.initialize()
        text = c2.call("hostile_big", timeout=30)["result"]["content"][0]["text"]
        self.assertEqual(len(text.split("\n")[0]), 100)

    def test_every_slot_stuck_ends_the_process(self):
        # Two slots, both hung past their timeout: after stuck_exit_seconds the process says
        # so on stderr and exits non-zero, so the gateway restarts it.
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"allow": ["hostile_hang", "web_search"], "max_concurrent": 2,
                       "timeout_seconds": 0.2, "stuck_exit_seconds": 0.5}, f)
        self.addCleanup(os.unlink, f.name)
        c = self.start("--config", f.name)
        c.initialize()
        self.assertIn("timed out", c.call("hostile_hang")["result"]["content"][0]["text"])
        time.sleep(1.0)  # one slot stuck, one free: the process goes on
        self.assertIsNone(c.proc.poll())
        self.assertFalse(c.call("web_search", {"query": "x"})["result"]["isError"])
        t0 = time.monotonic()
        self.assertIn("timed out", c.call("hostile_hang")["result"]["content"][0]["text"])
        self.assertEqual(c.proc.wait(10), 3)
        self.assertGreaterEqual(time.monotonic() - t0, 0.4)
        self.assertIn("hermes-tools: every call slot (2) has been stuck past its timeout for "
                      "0.5 s (hostile_hang); exiting so the gateway restarts this process",
                      c.wait_stderr("exiting"))

    def test_stdout_noise_never_reaches_the_stream(self):
        c = self.start("--allow", "hostile_noisy")
        c.initialize()  # import noise came before: recv() parses every line as JSON
        res = c.call("hostile_noisy")["result"]
        self.assertEqual(res["structuredContent"], {"quiet": False})
        self.assertEqual(c.request("ping")["result"], {})
        self.assertEqual(c.close(), 0)
        err = c.stderr_text()
        for noise in ("fake model_tools: discovering tools", "fake model_tools: raw fd 1 noise",
                      "hostile_noisy: print on stdout", "hostile_noisy: raw fd 1"):
            self.assertIn(noise, err)


class Cancellation(ProcessTest):
    def test_cancelled_call_gets_no_answer(self):
        c = self.start("--allow", "hostile_sleep")
        c.initialize()
        c.send({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
                "params": {"name": "hostile_sleep", "arguments": {"seconds": 0.5}}})
        c.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 41, "reason": "user gave up"}})
        self.assertEqual(c.request("ping")["result"], {})
        self.assertNoMessage(c, within=1.0)
        self.assertEqual(c.request("ping")["result"], {})

    def test_eof_waits_for_calls_in_flight(self):
        c = self.start("--allow", "hostile_sleep")
        c.initialize()
        c.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "hostile_sleep", "arguments": {"seconds": 0.3}}})
        c.proc.stdin.close()
        self.assertEqual(c.recv()["result"]["structuredContent"]["slept"], 0.3)
        self.assertEqual(c.proc.wait(10), 0)


class WorkingDirectory(ProcessTest):
    """python -m puts the working directory first on sys.path; -P (how the gateway example
    runs it) keeps a model_tools.py there from replacing Hermes' own."""

    def shadowed_dir(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with open(os.path.join(d, "model_tools.py"), "w") as f:
            f.write("raise RuntimeError('SHADOW model_tools imported')\n")
        return d

    def test_with_P_a_model_tools_in_the_cwd_is_not_imported(self):
        c = self.start("--allow", "web_search", cwd=self.shadowed_dir())
        c.initialize()
        self.assertEqual([t["name"] for t in c.request("tools/list")["result"]["tools"]],
                         ["web_search"])
        self.assertEqual(c.close(), 0)
        self.assertNotIn("SHADOW", c.stderr_text())
        self.assertNotIn("WARNING", c.stderr_text())

    def test_without_P_it_would_be_and_the_server_says_so(self):
        r = subprocess.run([sys.executable, "-m", "hermes_tools"], cwd=self.shadowed_dir(),
                           env=env_with([PKG_ROOT, FAKE_HERMES]), stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=20)
        err = r.stderr.decode()
        self.assertEqual(r.returncode, 1)
        self.assertIn("run as python -P -m hermes_tools", err)
        self.assertIn("cannot import Hermes' model_tools (RuntimeError in model_tools)", err)
        self.assertNotIn("SHADOW", err)  # and its message stays out of the log
        r = subprocess.run([sys.executable, "-P", "-m", "hermes_tools"],
                           env=env_with([PKG_ROOT, "", FAKE_HERMES]), cwd=PKG_ROOT,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
        self.assertIn("PYTHONPATH has an empty entry", r.stderr.decode())

    def test_the_gateway_example_runs_it_with_P(self):
        with open(os.path.join(PKG_ROOT, "..", "gateway", "hermes-gateway.yaml")) as f:
            lines = [ln.strip() for ln in f if "hermes_tools" in ln and "args:" in ln]
        self.assertEqual(len(lines), 2, lines)
        for ln in lines:
            self.assertTrue(ln.startswith("args: [-P, -m, hermes_tools,"), ln)


class StartFailures(ProcessTest):
    def start_failing(self, args, pythonpath):
        c = Child(args, pythonpath=pythonpath)
        code = c.close(20)
        return code, c.stderr_text()

    def test_no_model_tools(self):
        code, err = self.start_failing([], [PKG_ROOT])
        self.assertEqual(code, 1)
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith("hermes-tools: cannot import Hermes' model_tools"))

    def test_model_tools_without_handle_function_call(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with open(os.path.join(d, "model_tools.py"), "w") as f:
            f.write("def get_tool_definitions(*a, **k):\n    return []\n")
        code, err = self.start_failing([], [PKG_ROOT, d])
        self.assertEqual(code, 1)
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertIn("model_tools has no handle_function_call()", lines[0])

    def test_get_tool_definitions_raising(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with open(os.path.join(d, "model_tools.py"), "w") as f:
            f.write("def get_tool_definitions(*a, **k):\n"
                    "    raise OSError('bad config: OPENAI_API_KEY=sk-SECRET')\n"
                    "def handle_function_call(name, args, task_id=None, user_task=None):\n"
                    "    return '{}'\n")
        code, err = self.start_failing([], [PKG_ROOT, d])
        self.assertEqual(code, 1)
        self.assertEqual(err.strip().splitlines(), [
            "hermes-tools: Hermes' get_tool_definitions failed (OSError in model_tools)"])

    def test_import_error_names_its_type_and_module_only(self):
        # Hermes' import can fail on its own config: the message may quote it (a key).
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with open(os.path.join(d, "model_tools.py"), "w") as f:
            f.write("import hermes_cfg\n")
        with open(os.path.join(d, "hermes_cfg.py"), "w") as f:
            f.write("raise ValueError('cannot parse api_key: sk-SECRET')\n")
        code, err = self.start_failing([], [PKG_ROOT, d])
        self.assertEqual(code, 1)
        self.assertEqual(err.strip().splitlines(), [
            "hermes-tools: cannot import Hermes' model_tools (ValueError in hermes_cfg); run "
            "with Hermes' venv python and Hermes' source directory on PYTHONPATH"])

    def test_adapter_failures_name_their_type_only(self):
        # A copy of the package whose adapters fail at import, then at build, with a
        # secret in the message.
        for body, line in (
                ("raise RuntimeError('sk-SECRET')\n",
                 "cannot import the adapters (RuntimeError in hermes_tools.adapters)"),
                ("import honcho_missing_module\n",
                 "cannot import the adapters (ModuleNotFoundError, module honcho_missing_module)"),
                ("def build(cfg):\n    raise KeyError('sk-SECRET')\n",
                 "cannot set up the adapters (KeyError in hermes_tools.adapters)")):
            d = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, d)
            shutil.copytree(os.path.join(PKG_ROOT, "hermes_tools"),
                            os.path.join(d, "hermes_tools"),
                            ignore=shutil.ignore_patterns("adapters", "__pycache__"))
            os.mkdir(os.path.join(d, "hermes_tools", "adapters"))
            with open(os.path.join(d, "hermes_tools", "adapters", "__init__.py"), "w") as f:
                f.write(body)
            code, err = self.start_failing([], [d, FAKE_HERMES])
            self.assertEqual(code, 1, body)
            self.assertNotIn("SECRET", err)
            self.assertEqual(err.strip().splitlines()[-1], f"hermes-tools: {line}", err)

    def test_bad_config(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"allow": ["web_search"], "alow": ["terminal"]}, f)
        self.addCleanup(os.unlink, f.name)
        code, err = self.start_failing(["--config", f.name], None)
        self.assertEqual(code, 1)
        self.assertIn("unknown config key 'alow'", err)


if __name__ == "__main__":
    unittest.main()
