"""The guarded capabilities against the fake Hermes tools: each refusal and each allowed path."""

import json
import os
import sys
import threading
import types
import unittest

import run_agent
from adapters_support import FakeHermes, by_name
from hermes_tools import adapters


def build(fake, config=None):
    """The adapters with Hermes' registry replaced; the parent agent is Hermes'
    AIAgent class (the fake run_agent), built as in production."""
    run_agent.AGENTS.clear()
    tools = by_name(adapters.build(config or {}, dispatch=fake.dispatch))
    return tools, run_agent.AGENTS


class SessionSearch(unittest.TestCase):
    def setUp(self):
        self.fake = FakeHermes()
        self.tool = build(self.fake)[0]["session_search"]

    def call(self, args):
        return self.tool.call(args, self.fake.ctx())

    def test_search_reaches_hermes_through_the_registry(self):
        r = self.call({"query": "auth", "limit": 2})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual([x["title"] for x in r.structured["results"]], ["auth refactor"])
        self.assertEqual(self.fake.native_calls, [])  # never via handle_function_call

    def test_is_read_only_in_its_annotations(self):
        self.assertTrue(self.tool.annotations["readOnlyHint"])
        self.assertNotIn("profile", self.tool.input_schema["properties"])

    def test_profile_override_refused_before_hermes(self):
        r = self.call({"query": "payroll", "profile": "work"})
        self.assertTrue(r.is_error)
        self.assertIn("profile", r.text)
        self.assertEqual(self.fake.mods["session_search"].CALLS, [])

    def test_read_that_hermes_finds_in_another_profile_is_withheld(self):
        r = self.call({"session_id": "20261203_120000_cccccc"})
        self.assertTrue(r.is_error)
        self.assertNotIn("payroll", r.text)

    def test_read_in_this_profile_passes(self):
        r = self.call({"session_id": "20261202_090000_bbbbbb"})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(r.structured["title"], "gateway")

    def test_profile_link_as_session_id_refused_before_hermes(self):
        # Hermes reads "<profile>/<id>" from that profile's state.db (read and scroll).
        for args in ({"session_id": "work/20261203_120000_cccccc"},
                     {"session_id": "work/20261203_120000_cccccc", "around_message_id": 4},
                     {"session_id": "default/20261202_090000_bbbbbb"},
                     {"session_id": "@session:work/20261203_120000_cccccc"},
                     {"session_id": "../work"}, {"session_id": ""}, {"session_id": "a b"},
                     {"session_id": "x" * 129}):
            with self.subTest(args=args):
                r = self.call(args)
                self.assertTrue(r.is_error)
                self.assertNotIn("payroll", r.text)
        self.assertEqual(self.fake.mods["session_search"].CALLS, [])
        # The fake does follow the link, as Hermes does: the refusal is what stops it.
        raw = self.fake.dispatch("session_search", {"session_id": "work/20261203_120000_cccccc"})
        self.assertIn("payroll", raw)

    def test_answer_linking_another_profile_is_withheld(self):
        def dispatch(name, args, **kw):
            return json.dumps({"success": True, "mode": "browse", "results": [
                {"session_id": "s1", "link": "@session:s1", "title": "mine"},
                {"session_id": "s2", "link": "@session:work/s2", "title": "payroll"}]})
        tool = by_name(adapters.build({}, dispatch=dispatch))["session_search"]
        r = tool.call({}, self.fake.ctx())
        self.assertTrue(r.is_error)
        self.assertNotIn("payroll", r.text)

    def test_links_naming_this_profile_pass(self):
        fake_profiles = types.ModuleType("hermes_cli.profiles")
        fake_profiles.get_active_profile_name = lambda: "default"
        fake_cli = types.ModuleType("hermes_cli")
        fake_cli.profiles = fake_profiles
        saved = {k: sys.modules.get(k) for k in ("hermes_cli", "hermes_cli.profiles")}
        sys.modules.update({"hermes_cli": fake_cli, "hermes_cli.profiles": fake_profiles})
        try:
            r = self.call({"query": "auth"})
            r2 = self.call({"session_id": "20261202_090000_bbbbbb"})
            r3 = self.call({"session_id": "20261203_120000_cccccc"})
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(r.structured["results"][0]["link"],
                         "@session:default/20261201_101500_aaaaaa")
        self.assertFalse(r2.is_error, r2.text)
        self.assertTrue(r3.is_error)  # found by Hermes' scan in "work": withheld
        self.assertNotIn("payroll", r3.text)

    def test_bad_arguments_refused(self):
        for args in ({"query": "x" * 513}, {"limit": 0}, {"limit": "3"}, {"sort": "random"},
                     {"scope": "all"}, {"bogus": 1}, ["not", "an", "object"]):
            with self.subTest(args=args):
                self.assertTrue(self.call(args).is_error)
        self.assertEqual(self.fake.mods["session_search"].CALLS, [])


class DelegateTask(unittest.TestCase):
    def setUp(self):
        self.fake = FakeHermes()
        tools, self.parents = build(self.fake)
        self.tool = tools["delegate_task"]
        self.calls = self.fake.mods["delegate_task"].CALLS

    def call(self, args, **kw):
        return self.tool.call(args, self.fake.ctx(**kw))

    def test_one_child_with_default_toolsets(self):
        r = self.call({"goal": "summarise the README"})
        self.assertFalse(r.is_error, r.text)
        sent = self.calls[0]["args"]
        self.assertEqual(sent["role"], "leaf")
        self.assertIs(sent["background"], False)
        self.assertEqual(sent["toolsets"], ["web", "vision", "skills", "mcp-context-mode"])
        self.assertEqual(self.parents[0].enabled_toolsets, sent["toolsets"])
        self.assertIs(self.calls[0]["parent"], self.parents[0])
        self.assertTrue(self.parents[0].quiet_mode)
        self.assertEqual(r.structured["results"][0]["summary"], "done: summarise the README")
        self.assertEqual(self.fake.native_calls, [])

    def test_two_children_with_their_own_toolsets(self):
        r = self.call({"tasks": [{"goal": "a", "toolsets": ["web"]},
                                 {"goal": "b", "context": "c", "toolsets": ["vision", "skills"]}]})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual([x["toolsets"] for x in r.structured["results"]],
                         [["web"], ["vision", "skills"]])
        self.assertTrue(all(t["role"] == "leaf" for t in self.calls[0]["args"]["tasks"]))

    def test_three_children_refused(self):
        r = self.call({"tasks": [{"goal": "a"}, {"goal": "b"}, {"goal": "c"}]})
        self.assertTrue(r.is_error)
        self.assertIn("1 to 2", r.text)
        self.assertEqual(self.calls, [])

    def test_toolsets_outside_the_allowed_list_refused(self):
        for args in ({"goal": "g", "toolsets": ["terminal"]},
                     {"goal": "g", "toolsets": ["web", "delegation"]},
                     {"goal": "g", "toolsets": ["file"]},
                     {"goal": "g", "toolsets": []},
                     {"tasks": [{"goal": "g", "toolsets": ["code_execution"]}]}):
            with self.subTest(args=args):
                self.assertTrue(self.call(args).is_error)
        self.assertEqual(self.calls, [])

    def test_recursion_background_and_acp_refused(self):
        for args in ({"goal": "g", "role": "orchestrator"}, {"goal": "g", "role": "leaf"},
                     {"goal": "g", "background": True}, {"goal": "g", "acp_command": "copilot"},
                     {"goal": "g", "max_iterations": 500},
                     {"tasks": [{"goal": "g", "role": "orchestrator"}]},
                     {"tasks": [{"goal": "g", "acp_args": ["--x"]}]}):
            with self.subTest(args=args):
                r = self.call(args)
                self.assertTrue(r.is_error)
                self.assertIn("not available here", r.text)
        self.assertEqual(self.calls, [])

    def test_goal_and_tasks_are_exclusive_and_one_is_needed(self):
        for args in ({}, {"goal": "a", "tasks": [{"goal": "b"}]}, {"goal": "  "},
                     {"tasks": [{"goal": "b"}], "toolsets": ["web"]}, {"tasks": [{}]},
                     {"tasks": "[]"}):
            with self.subTest(args=args):
                self.assertTrue(self.call(args).is_error)
        self.assertEqual(self.calls, [])

    def test_cancelled_call_starts_no_child(self):
        r = self.call({"goal": "g"}, cancelled=True)
        self.assertTrue(r.is_error)
        self.assertEqual(self.calls, [])

    def test_a_parent_that_cannot_be_built_is_a_tool_error(self):
        def broken(toolsets):
            raise RuntimeError("api_key=sk-should-not-leak")
        tool = by_name(adapters.build({}, dispatch=self.fake.dispatch,
                                      parent_factory=broken))["delegate_task"]
        r = tool.call({"goal": "g"}, self.fake.ctx())
        self.assertTrue(r.is_error)
        self.assertIn("RuntimeError", r.text)
        self.assertNotIn("sk-should", r.text)

    def test_mcp_discovery_runs_once_before_the_first_child(self):
        import tools.mcp_tool as mcp_tool  # the fake's
        mcp_tool.CALLS.clear()
        self.assertFalse(self.call({"goal": "a"}).is_error)
        self.assertFalse(self.call({"goal": "b"}).is_error)
        self.assertEqual(mcp_tool.CALLS, [1])

    def test_mcp_discovery_failure_or_hang_does_not_stop_delegation(self):
        import io
        from contextlib import redirect_stderr
        from hermes_tools.adapters import guarded
        release = threading.Event()

        def broken():
            raise RuntimeError("https://user:secret@mcp.example/")
        for discover, cfg in ((broken, {}), (release.wait, {"mcp_discovery_wait_s": 0.05})):
            tool = guarded.delegate_task(cfg, self.fake.dispatch, run_agent.AIAgent,
                                         discover=discover)
            err = io.StringIO()
            with redirect_stderr(err):
                r = tool.call({"goal": "g"}, self.fake.ctx())
            self.assertFalse(r.is_error, r.text)
            self.assertNotIn("secret", err.getvalue())
            if discover is broken:
                self.assertEqual(err.getvalue().count("\n"), 1)
                self.assertIn("MCP discovery failed (RuntimeError)", err.getvalue())
        release.set()

    def test_no_mcp_discovery_without_an_mcp_toolset(self):
        from hermes_tools.adapters import guarded
        ran = []
        tool = guarded.delegate_task({"toolsets": ["web"]}, self.fake.dispatch,
                                     run_agent.AIAgent, discover=lambda: ran.append(1))
        self.assertFalse(tool.call({"goal": "g"}, self.fake.ctx()).is_error)
        self.assertEqual(ran, [])

    def test_configured_toolsets_and_limit(self):
        tools, _ = build(self.fake, {"adapters": {"guarded": {"delegate_task": {
            "toolsets": ["web"], "max_children": 1}}}})
        tool = tools["delegate_task"]
        self.assertTrue(tool.call({"goal": "g", "toolsets": ["vision"]}, self.fake.ctx()).is_error)
        self.assertTrue(tool.call({"tasks": [{"goal": "a"}, {"goal": "b"}]},
                                  self.fake.ctx()).is_error)
        self.assertFalse(tool.call({"goal": "g"}, self.fake.ctx()).is_error)
        self.assertEqual(tool.input_schema["properties"]["tasks"]["maxItems"], 1)


class Cronjob(unittest.TestCase):
    def setUp(self):
        self.fake = FakeHermes()
        self.tool = build(self.fake)[0]["cronjob"]
        self.mod = self.fake.mods["cronjob"]

    def call(self, args):
        return self.tool.call(args, self.fake.ctx())

    def create(self, **extra):
        args = {"action": "create", "schedule": "every 2h", "prompt": "check mail",
                "confirmed": True, **extra}
        return self.call(args)

    def test_list_is_read_only_and_needs_no_confirmation(self):
        r = self.call({"action": "list"})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(self.fake.native_calls, [("cronjob_manage", {"action": "list"})])

    def test_each_mutation_without_confirmed_true_is_refused(self):
        for action in ("create", "update", "pause", "resume", "remove", "run"):
            for confirmed in (None, False, "true", 1):
                args = {"action": action, "job_id": "job1", "schedule": "1h", "prompt": "p"}
                if confirmed is not None:
                    args["confirmed"] = confirmed
                with self.subTest(action=action, confirmed=confirmed):
                    r = self.call(args)
                    self.assertTrue(r.is_error)
                    self.assertIn("confirmed", r.text)
        self.assertEqual(self.mod.CALLS, [])

    def test_confirmed_lifecycle_with_local_delivery(self):
        r = self.create(name="mail")
        self.assertFalse(r.is_error, r.text)
        jid = r.structured["job_id"]
        self.assertEqual(self.mod.JOBS[jid]["deliver"], "local")
        self.assertNotIn("confirmed", self.mod.CALLS[-1])
        for action in ("pause", "resume", "run"):
            r = self.call({"action": action, "job_id": jid, "confirmed": True})
            self.assertFalse(r.is_error, r.text)
        r = self.call({"action": "update", "job_id": jid, "prompt": "new", "confirmed": True})
        self.assertEqual(self.mod.CALLS[-1]["deliver"], "local")
        r = self.call({"action": "remove", "job_id": jid, "confirmed": True})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(self.mod.JOBS, {})

    def test_overrides_and_execution_fields_refused(self):
        for key, value in (("model", "gpt-x"), ("provider", "openrouter"),
                           ("base_url", "http://evil"), ("script", "x.sh"), ("no_agent", True),
                           ("monitor", "https://x"), ("monitor_script", "m.sh"),
                           ("monitor_url", "https://x"), ("workdir", "/"),
                           ("failure_deliver", "telegram"), ("enabled_toolsets", ["terminal"])):
            with self.subTest(key=key):
                r = self.create(**{key: value})
                self.assertTrue(r.is_error)
                self.assertIn(key, r.text)
                r = self.call({"action": "list", key: value})
                self.assertTrue(r.is_error)
        self.assertEqual(self.mod.CALLS, [])
        for key in ("model", "provider", "base_url", "script", "no_agent", "monitor"):
            self.assertNotIn(key, self.tool.input_schema["properties"])

    def test_badly_typed_fields_refused(self):
        for extra in ({"skills": "web"}, {"skills": [1]}, {"skills": ["s"] * 33},
                      {"paused": "yes"}, {"continuity": 1}, {"repeat": "2"},
                      {"prompt": "p" * 16385}, {"job_id": 7}):
            with self.subTest(extra=extra):
                self.assertTrue(self.create(**extra).is_error)
        self.assertTrue(self.call({"action": "list", "include_disabled": "no"}).is_error)
        self.assertEqual(self.mod.CALLS, [])
        self.assertFalse(self.create(skills=["ponytail"], paused=True).is_error)

    def test_delivery_other_than_local_refused(self):
        for deliver in ("origin", "telegram:-100:1", "all", "local,all"):
            with self.subTest(deliver=deliver):
                self.assertTrue(self.create(deliver=deliver).is_error)
        self.assertFalse(self.create(deliver="local").is_error)

    def test_other_hermes_actions_refused(self):
        for action in ("resnap", "run_now", "trigger", "LIST", "", None):
            with self.subTest(action=action):
                self.assertTrue(self.call({"action": action, "job_id": "j", "confirmed": True,
                                           "all": True} if action == "resnap" else
                                          {"action": action, "confirmed": True}).is_error)
        self.assertEqual(self.mod.CALLS, [])

    def test_create_always_sends_the_allowed_toolsets(self):
        r = self.create()
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(self.mod.CALLS[-1]["enabled_toolsets"],
                         ["web", "vision", "skills", "mcp-context-mode"])
        self.assertEqual(self.mod.JOBS[r.structured["job_id"]]["enabled_toolsets"],
                         ["web", "vision", "skills", "mcp-context-mode"])
        r = self.create(enabled_toolsets=["web", "web"])
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(self.mod.CALLS[-1]["enabled_toolsets"], ["web"])

    def test_toolsets_outside_the_allowed_list_refused(self):
        before = len(self.mod.CALLS)
        for value in (["terminal"], ["web", "file"], ["delegation"], [], "web", [1]):
            with self.subTest(value=value):
                r = self.create(enabled_toolsets=value)
                self.assertTrue(r.is_error)
                self.assertIn("enabled_toolsets", r.text)
        for action in ("pause", "resume", "remove", "run"):
            r = self.call({"action": action, "job_id": "job1", "confirmed": True,
                           "enabled_toolsets": ["web"]})
            self.assertTrue(r.is_error)
        self.assertEqual(len(self.mod.CALLS), before)

    def seed(self, **job):
        """A job made outside the adapter (Hermes' CLI, a chat platform)."""
        self.mod.JOBS["ext1"] = {"id": "ext1", "name": "outside", "prompt": "p",
                                 "schedule": "1h", "deliver": "local", "enabled": True,
                                 "enabled_toolsets": ["web"], **job}

    def test_jobs_made_outside_the_policy_are_not_run_updated_or_resumed(self):
        for job in ({"deliver": "telegram:-100:1"}, {"deliver": "origin"},
                    {"failure_deliver": "discord"}, {"script": "x.py"}, {"no_agent": True},
                    {"monitor_url": "https://x"}, {"monitor_script": "m.sh"},
                    {"enabled_toolsets": None}, {"enabled_toolsets": []},
                    {"enabled_toolsets": ["web", "terminal"]}):
            for action in ("run", "update", "resume"):
                with self.subTest(job=job, action=action):
                    self.seed(**job)
                    self.mod.CALLS.clear()
                    r = self.call({"action": action, "job_id": "ext1", "confirmed": True,
                                   "prompt": "new"})
                    self.assertTrue(r.is_error)
                    self.assertIn("not made under this policy", r.text)
                    self.assertEqual([c["action"] for c in self.mod.CALLS], ["list"])
        self.assertEqual(self.mod.JOBS["ext1"]["prompt"], "p")
        self.assertEqual(self.mod.JOBS["ext1"].get("runs", 0), 0)
        # Pausing or removing such a job only makes it do less: allowed without a check.
        self.assertFalse(self.call({"action": "pause", "job_id": "ext1",
                                    "confirmed": True}).is_error)
        self.assertFalse(self.call({"action": "remove", "job_id": "ext1",
                                    "confirmed": True}).is_error)

    def test_update_says_when_it_would_change_delivery(self):
        self.seed(deliver="telegram:-100:1")
        r = self.call({"action": "update", "job_id": "ext1", "prompt": "x", "confirmed": True})
        self.assertTrue(r.is_error)
        self.assertIn("change its delivery to local", r.text)
        self.assertNotIn("-100", r.text)
        self.assertEqual(self.mod.JOBS["ext1"]["deliver"], "telegram:-100:1")
        self.seed(script="x.py")
        r = self.call({"action": "update", "job_id": "ext1", "prompt": "x", "confirmed": True})
        self.assertNotIn("delivery", r.text)

    def test_jobs_within_the_policy_run_and_update_by_id_or_name(self):
        self.seed()
        r = self.call({"action": "run", "job_id": "outside", "confirmed": True})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(self.mod.CALLS[-1], {"action": "run", "job_id": "ext1"})
        r = self.call({"action": "update", "job_id": "ext1", "prompt": "new",
                       "enabled_toolsets": ["vision"], "confirmed": True})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(self.mod.CALLS[-1]["enabled_toolsets"], ["vision"])
        self.assertEqual(self.mod.CALLS[-1]["deliver"], "local")
        r = self.call({"action": "update", "job_id": "ext1", "prompt": "newer",
                       "confirmed": True})
        self.assertNotIn("enabled_toolsets", self.mod.CALLS[-1])  # the checked list stays
        self.assertEqual(self.mod.JOBS["ext1"]["enabled_toolsets"], ["vision"])

    def test_unknown_or_ambiguous_job_refused_before_any_change(self):
        self.seed()
        self.mod.JOBS["ext2"] = dict(self.mod.JOBS["ext1"], id="ext2")
        for ref in ("nope", "outside"):
            with self.subTest(ref=ref):
                self.mod.CALLS.clear()
                r = self.call({"action": "run", "job_id": ref, "confirmed": True})
                self.assertTrue(r.is_error)
                self.assertEqual([c["action"] for c in self.mod.CALLS], ["list"])

    def test_fake_has_hermes_check_fn_which_dispatch_ignores(self):
        from unittest import mock
        entry = self.mod.TOOLS[0]
        keys = ("HERMES_INTERACTIVE", "HERMES_GATEWAY_SESSION", "HERMES_EXEC_ASK")
        clean = {k: v for k, v in os.environ.items() if k not in keys}
        with mock.patch.dict(os.environ, clean, clear=True):
            self.assertFalse(entry["check_fn"]())
            # handle_function_call / registry.dispatch do not consult check_fn (as in Hermes)
            self.assertFalse(self.call({"action": "list"}).is_error)
            for k in keys:
                with mock.patch.dict(os.environ, {k: "1"}):
                    self.assertTrue(entry["check_fn"]())

    def test_hermes_failure_is_a_tool_error(self):
        r = self.call({"action": "pause", "job_id": "nope", "confirmed": True})
        self.assertTrue(r.is_error)
        self.assertIn("not found", r.text)

    def test_confirmation_can_be_left_to_the_gateway(self):
        tool = build(self.fake, {"guarded": {"cronjob": {"require_confirmed": False}}})[0]["cronjob"]
        r = tool.call({"action": "create", "schedule": "1h", "prompt": "p"}, self.fake.ctx())
        self.assertFalse(r.is_error, r.text)

    def test_native_name_for_older_hermes(self):
        tool = build(self.fake, {"guarded": {"cronjob": {"native": "cronjob"}}})[0]["cronjob"]
        tool.call({"action": "list"}, self.fake.ctx())
        self.assertEqual(self.fake.native_calls[-1][0], "cronjob")


class HermesPaths(unittest.TestCase):
    """Without replacements, build() reaches Hermes' registry and agent class by name."""

    def test_default_dispatch_is_hermes_registry(self):
        fake = FakeHermes()
        seen = []

        class Registry:
            def dispatch(self, name, args, **kw):
                seen.append((name, sorted(kw)))
                return fake.dispatch(name, args, **kw)
        tools_mod = types.ModuleType("tools")
        registry_mod = types.ModuleType("tools.registry")
        registry_mod.registry = Registry()
        tools_mod.registry = registry_mod
        saved = {k: sys.modules.get(k) for k in ("tools", "tools.registry")}
        sys.modules.update({"tools": tools_mod, "tools.registry": registry_mod})
        try:
            tools = by_name(adapters.build({}))
            r1 = tools["session_search"].call({"query": "gateway"}, fake.ctx())
            r2 = tools["delegate_task"].call({"goal": "g"}, fake.ctx())
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
        self.assertFalse(r1.is_error, r1.text)
        self.assertFalse(r2.is_error, r2.text)
        self.assertEqual(seen, [("session_search", ["task_id"]),
                                ("delegate_task", ["parent_agent", "task_id"])])
        self.assertIsInstance(fake.mods["delegate_task"].CALLS[0]["parent"], run_agent.AIAgent)


if __name__ == "__main__":
    unittest.main()
