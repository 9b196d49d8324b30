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


if __name__ == "__main__":
    unittest.main()
