"""config.py: the JSON file and the arguments, and what it refuses."""

import json
import os
import tempfile
import unittest

from hermes_tools import config


class Config(unittest.TestCase):
    def file(self, d):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(d if isinstance(d, str) else json.dumps(d))
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_defaults_deny_everything(self):
        c = config.parse_args([])
        self.assertEqual(c.allow, [])
        self.assertIsNone(c.toolsets)
        self.assertEqual(c.max_line_bytes, 4 * 1024 * 1024)
        self.assertEqual(c.timeout_for("anything"), 120.0)
        self.assertEqual(c.max_result_bytes, 1024 * 1024)
        self.assertEqual(c.stuck_exit_s, 60.0)

    def test_file_then_arguments(self):
        path = self.file({"allow": ["web_search"], "timeout_seconds": 30,
                          "timeouts": {"delegate_task": 900}, "max_concurrent": 2,
                          "task_id": "gw", "adapters": {"memory": {"x": 1}}})
        c = config.parse_args(["--config", path, "--allow", "read_file,terminal",
                               "--allow", "patch", "--timeout", "5", "--toolsets", "web,file"])
        self.assertEqual(c.allow, ["web_search", "read_file", "terminal", "patch"])
        self.assertEqual((c.timeout_for("web_search"), c.timeout_for("delegate_task")),
                         (5.0, 900.0))
        self.assertEqual((c.max_concurrent, c.task_id), (2, "gw"))
        self.assertEqual(c.toolsets, ["web", "file"])
        self.assertEqual(c.adapters, {"memory": {"x": 1}})

    def test_refusals(self):
        bad = [({"alow": []}, "unknown config key 'alow'"),
               ({"allow": "web_search"}, "allow must be a list"),
               ({"allow": [""]}, "allow must be a list"),
               ({"timeout_seconds": 0}, "timeout_seconds must be a positive"),
               ({"timeout_seconds": True}, "timeout_seconds must be a positive"),
               ({"max_line_bytes": 1.5}, "max_line_bytes must be a whole"),
               ({"timeouts": {"x": -1}}, "timeouts.x must be a positive"),
               ({"task_id": ""}, "task_id must be"),
               ({"adapters": []}, "adapters must be an object"),
               ([], "must hold a JSON object")]
        for d, msg in bad:
            with self.assertRaisesRegex(config.ConfigError, msg, msg=str(d)):
                config.parse_args(["--config", self.file(d)])
        with self.assertRaisesRegex(config.ConfigError, "not valid JSON"):
            config.parse_args(["--config", self.file("{")])
        with self.assertRaisesRegex(config.ConfigError, "cannot read"):
            config.parse_args(["--config", "/nonexistent/hermes-tools.json"])
        with self.assertRaisesRegex(config.ConfigError, "--timeout must be a positive"):
            config.parse_args(["--timeout", "-1"])

    def test_non_finite_numbers_are_refused(self):
        # json.load takes Infinity and NaN and float() takes "inf": an infinite timeout or
        # cap would silently mean none.
        for text in ('{"timeout_seconds": Infinity}', '{"timeouts": {"x": NaN}}',
                     '{"max_result_bytes": -Infinity}'):
            with self.assertRaisesRegex(config.ConfigError, "not valid JSON", msg=text):
                config.parse_args(["--config", self.file(text)])
        for key in ("timeout_seconds", "stuck_exit_seconds", "max_line_bytes"):
            for v in (float("inf"), float("nan")):
                with self.assertRaisesRegex(config.ConfigError, "positive finite"):
                    config.from_dict({key: v})
        for arg in ("--timeout", "--stuck-exit-seconds"):
            for v in ("inf", "nan", "-inf", "0"):
                with self.assertRaisesRegex(config.ConfigError, f"{arg} must be a positive"):
                    config.parse_args([f"{arg}={v}"])

    def test_result_cap_and_stuck_exit(self):
        path = self.file({"max_result_bytes": 4096, "stuck_exit_seconds": 5})
        c = config.parse_args(["--config", path])
        self.assertEqual((c.max_result_bytes, c.stuck_exit_s), (4096, 5.0))
        c = config.parse_args(["--config", path, "--max-result-bytes", "100",
                               "--stuck-exit-seconds", "0.5"])
        self.assertEqual((c.max_result_bytes, c.stuck_exit_s), (100, 0.5))
        with self.assertRaisesRegex(config.ConfigError, "max_result_bytes must be a whole"):
            config.from_dict({"max_result_bytes": 10.5})


if __name__ == "__main__":
    unittest.main()
