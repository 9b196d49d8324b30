"""native.py: Hermes' definitions converted to MCP tools, Hermes' answers to MCP results,
and the start-up check of Hermes' API (against stand-in modules, no Hermes imported)."""

import sys
import types
import unittest

from hermes_tools import native
from hermes_tools.tool import CallContext


def fake_model_tools(**attrs):
    mod = types.ModuleType("model_tools")
    mod.__dict__.update(attrs)
    return mod


class WithModule(unittest.TestCase):
    def use(self, mod):
        saved = sys.modules.get("model_tools")
        sys.modules["model_tools"] = mod
        self.addCleanup(lambda: sys.modules.__setitem__("model_tools", saved) if saved
                        else sys.modules.pop("model_tools", None))


class Definitions(unittest.TestCase):
    def test_openai_function_to_mcp_tool(self):
        d = {"type": "function", "function": {"name": "web_search", "description": "Search.",
                                              "parameters": {"type": "object", "properties": {
                                                  "query": {"type": "string"}},
                                                  "required": ["query"]}}}
        self.assertEqual(native.to_mcp_definition(d), {
            "name": "web_search", "description": "Search.",
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}},
                            "required": ["query"]}})

    def test_missing_or_odd_parameters_become_an_object_schema(self):
        for params in (None, [], {"properties": {}}):
            d = {"type": "function", "function": {"name": "t", "parameters": params}}
            mcp = native.to_mcp_definition(d)
            self.assertEqual(mcp["inputSchema"]["type"], "object", params)
            self.assertEqual(mcp["description"], "")

    def test_malformed_definitions_are_skipped(self):
        for d in (None, [], {}, {"function": {}}, {"function": {"name": ""}},
                  {"function": {"name": 3}}):
            self.assertIsNone(native.to_mcp_definition(d), d)

    def test_build_filters_by_toolsets_and_calls_by_keyword(self):
        seen = {}

        def get_tool_definitions(enabled_toolsets=None, disabled_toolsets=None,
                                 quiet_mode=False):
            seen["defs"] = (enabled_toolsets, quiet_mode)
            return [{"type": "function", "function": {"name": "a", "parameters": {}}},
                    {"type": "function", "function": {}}]

        def handle_function_call(function_name, function_args, task_id=None,
                                 tool_call_id=None, user_task=None):
            seen["call"] = (function_name, function_args, task_id, tool_call_id, user_task)
            return '{"ok": true}'
        mt = types.SimpleNamespace(get_tool_definitions=get_tool_definitions,
                                   handle_function_call=handle_function_call)
        with self.assertLogs("hermes_tools", "WARNING"):
            tools = native.build(mt, ["web"])
        self.assertEqual(seen["defs"], (["web"], True))
        self.assertEqual([t.name for t in tools], ["a"])
        ctx = CallContext(call_native=native.make_caller(mt, "task-9", "the task"))
        res = tools[0].call({"x": 1}, ctx)
        self.assertEqual(seen["call"], ("a", {"x": 1}, "task-9", None, "the task"))
        self.assertEqual((res.structured, res.is_error), ({"ok": True}, False))


class Results(unittest.TestCase):
    def test_shapes(self):
        r = native.result_from_hermes('{"success": true, "n": 2}')
        self.assertEqual((r.text, r.structured, r.is_error),
                         ('{"success": true, "n": 2}', {"success": True, "n": 2}, False))
        r = native.result_from_hermes('{"success": false, "error": "no key"}')
        self.assertTrue(r.is_error)
        self.assertEqual(r.structured["error"], "no key")
        for falsy in ('{"error": null}', '{"error": ""}'):
            self.assertFalse(native.result_from_hermes(falsy).is_error, falsy)
        for text in ("plain", "[1, 2]", '"s"', "3", ""):
            r = native.result_from_hermes(text)
            self.assertEqual((r.text, r.structured, r.is_error), (text, None, False), text)
        for odd in ('{"v": NaN}', "[" * 100000):
            r = native.result_from_hermes(odd)
            self.assertEqual((r.structured, r.is_error), (None, False))
        r = native.result_from_hermes(None)
        self.assertTrue(r.is_error)
        r = native.result_from_hermes({"_multimodal": True, "content": [
            {"type": "text", "text": "one"}, "junk", {"type": "image_url"},
            {"type": "text", "text": "two"}]})
        self.assertEqual((r.text, r.is_error), ("one\n[image]\ntwo", False))


class StartCheck(WithModule):
    def test_present_api_passes(self):
        self.use(fake_model_tools(get_tool_definitions=lambda **k: [],
                                  handle_function_call=lambda n, a, **kw: "{}"))
        self.assertIsNotNone(native.load_model_tools())

    def test_missing_function(self):
        self.use(fake_model_tools(get_tool_definitions=lambda **k: []))
        with self.assertRaisesRegex(native.HermesMissing, "no handle_function_call"):
            native.load_model_tools()

    def test_missing_keyword(self):
        def handle_function_call(function_name, function_args, task_id=None):
            return "{}"
        self.use(fake_model_tools(get_tool_definitions=lambda **k: [],
                                  handle_function_call=handle_function_call))
        with self.assertRaisesRegex(native.HermesMissing, "takes no user_task="):
            native.load_model_tools()

    def test_import_failure_is_one_line(self):
        self.use(None)  # a None entry makes the import raise ImportError
        with self.assertRaises(native.HermesMissing) as cm:
            native.load_model_tools()
        self.assertNotIn("\n", str(cm.exception))
        self.assertIn("Hermes' venv", str(cm.exception))

    def test_errors_are_described_without_their_message(self):
        try:
            raise ValueError("api_key: sk-SECRET")
        except ValueError as e:
            self.assertEqual(native.describe(e), f"ValueError in {__name__}")
        self.assertEqual(native.describe(ModuleNotFoundError("x", name="honcho")),
                         "ModuleNotFoundError, module honcho")
        self.assertEqual(native.describe(OSError("sk-SECRET")), "OSError")  # never raised


if __name__ == "__main__":
    unittest.main()
