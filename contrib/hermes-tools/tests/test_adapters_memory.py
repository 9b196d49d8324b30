"""The memory tools against the fake Honcho service, and Hermes' Honcho config resolution."""

import json
import os
import tempfile
import unittest

import honcho_fake
from adapters_support import FakeHermes, by_name
from hermes_tools import adapters
from hermes_tools.adapters import honcho, memory

KEY = "hk-test-0123456789abcdef"


class MemoryCase(unittest.TestCase):
    """A fake Honcho with user peer alice and the tools built on it (no tests of its own)."""

    def setUp(self):
        self.server, self.state, url = honcho_fake.start(api_key=KEY)
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.state.seed_peer("hermes", "alice", card=["prefers tabs", "lives in Lyon"],
                             messages=[{"id": "m1", "content": "I deploy with systemd"},
                                       {"id": "m2", "content": "tabs over spaces"}])
        self.home = tempfile.TemporaryDirectory()
        self.addCleanup(self.home.cleanup)
        hermes_home = os.path.join(self.home.name, ".hermes")
        os.makedirs(hermes_home)
        with open(os.path.join(hermes_home, "honcho.json"), "w") as f:
            json.dump({"apiKey": KEY, "baseUrl": url,
                       "hosts": {"hermes": {"workspace": "hermes", "peerName": "alice",
                                            "aiPeer": "hermes"}}}, f)
        self.env = {"HOME": self.home.name, "HERMES_HOME": hermes_home}
        self.fake = FakeHermes()
        self.build({})

    def build(self, memory_cfg):
        self.tools = by_name(adapters.build({"memory": memory_cfg}, dispatch=self.fake.dispatch,
                                            env=self.env))

    def call(self, name, args=None):
        return self.tools[name].call(args if args is not None else {}, self.fake.ctx())


class Memory(MemoryCase):
    def test_profile_is_the_user_peer_card_and_read_only(self):
        r = self.call("memory_profile")
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(r.structured["peer_card"], ["prefers tabs", "lives in Lyon"])
        self.assertTrue(self.tools["memory_profile"].annotations["readOnlyHint"])
        self.assertTrue(self.call("memory_profile", {"peer": "bob"}).is_error)
        self.assertEqual({m for m, _, _ in self.state.requests}, {"GET"})

    def test_search_context_reasoning(self):
        r = self.call("memory_search", {"query": "systemd"})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual([m["id"] for m in r.structured["results"]], ["m1"])
        r = self.call("memory_context", {"query": "editor"})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(r.structured["peer_id"], "alice")
        r = self.call("memory_reasoning", {"question": "what does alice prefer?"})
        self.assertIn("prefers tabs", r.structured["answer"])
        self.assertTrue(self.call("memory_search", {}).is_error)
        self.assertTrue(self.call("memory_reasoning", {"question": 3}).is_error)

    def test_conclude_create_read_back_delete(self):
        r = self.call("memory_conclude", {"content": "uses Debian 12 on servers",
                                          "kind": "project_state"})
        self.assertFalse(r.is_error, r.text)
        made = r.structured["created"][0]
        self.assertEqual((made["observer_id"], made["observed_id"]), ("chatgpt", "alice"))
        self.assertEqual(made["content"], "[project_state] uses Debian 12 on servers")
        listed = self.call("memory_conclude", {"action": "list"}).structured["items"]
        self.assertEqual([c["id"] for c in listed], [made["id"]])
        found = self.call("memory_conclude", {"action": "list", "query": "debian"})
        self.assertEqual([c["id"] for c in found.structured["items"]], [made["id"]])
        ctx = self.call("memory_context").structured
        self.assertIn("uses Debian 12", ctx["representation"])
        r = self.call("memory_conclude", {"action": "delete", "id": made["id"]})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(self.call("memory_conclude", {"action": "list"}).structured["items"], [])
        r = self.call("memory_conclude", {"action": "delete", "id": made["id"]})
        self.assertTrue(r.is_error)
        self.assertIn("only those can be deleted", r.text)

    def test_list_shows_only_this_adapters_conclusions_about_the_user(self):
        self.state.conclusions["x"] = {"id": "x", "content": "by hermes", "observer_id": "hermes",
                                       "observed_id": "alice", "workspace_id": "hermes"}
        self.assertEqual(self.call("memory_conclude", {"action": "list"}).structured["items"], [])

    def test_create_needs_a_durable_kind(self):
        for kind in (None, "temporary", "fact", "", ["decision"]):
            args = {"content": "likes short answers"}
            if kind is not None:
                args["kind"] = kind
            with self.subTest(kind=kind):
                r = self.call("memory_conclude", args)
                self.assertTrue(r.is_error)
                self.assertIn("kind", r.text)
        self.assertFalse(self.call("memory_conclude", {"content": "likes short answers",
                                                       "kind": "preference"}).is_error)

    def test_secret_like_content_refused(self):
        for text in ("my key is sk-ant-api03-abcdefghijklmnopqrstuv",
                     "password: hunter2hunter2", "the api key = 9f8e7d6c5b4a",
                     "token ghp_abcdefghijklmnopqrstuvwxyz0123",
                     "db at postgres://admin:s3cret@db.local/app",
                     "AKIAABCDEFGHIJKLMNOP is the access key",
                     "-----BEGIN OPENSSH PRIVATE KEY-----",
                     "deploy hash 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a",
                     "my password is hunter2!", "Authorization: Bearer abcdefghijklmnop1234",
                     "client_secret=abcd1234"):
            with self.subTest(text=text):
                r = self.call("memory_conclude", {"content": text, "kind": "decision"})
                self.assertTrue(r.is_error)
                self.assertIn("secret", r.text)
                self.assertNotIn(text, r.text)
        self.assertEqual(self.state.conclusions, {})

    def test_temporary_content_refused(self):
        for text in ("use the staging DB for now", "Temporarily pin numpy to 1.26",
                     "only for this session, answer in French",
                     "skip the tests until tomorrow", "this is a temporary workaround",
                     "the rule is temporary"):
            with self.subTest(text=text):
                r = self.call("memory_conclude", {"content": text, "kind": "decision"})
                self.assertTrue(r.is_error)
                self.assertIn("temporary", r.text)
        self.assertEqual(self.state.conclusions, {})

    def test_ordinary_durable_text_is_not_mistaken(self):
        for text in ("prefers PostgreSQL over MySQL for new services",
                     "the gateway listens on 127.0.0.1:3060",
                     "decided to keep the token bucket in src/http/ratelimit.c",
                     "use bearer tokens for the public API", "the password policy needs 12 chars",
                     "the secret is simplicity", "temporary files go under /run/user",
                     "api keys live in the env file, never in argv"):
            with self.subTest(text=text):
                self.assertFalse(memory.secret_like(text))
                self.assertFalse(memory.temporary(text))

    def test_list_and_delete_take_no_kind_or_content(self):
        self.assertTrue(self.call("memory_conclude", {"action": "list", "kind": "x"}).is_error)
        self.assertTrue(self.call("memory_conclude", {"action": "delete"}).is_error)
        self.assertTrue(self.call("memory_conclude", {"action": "update", "id": "x"}).is_error)

    def test_wrong_key_is_a_tool_error_without_the_key(self):
        self.state.api_key = "another-key"
        r = self.call("memory_profile")
        self.assertTrue(r.is_error)
        self.assertIn("401", r.text)
        self.assertNotIn(KEY, r.text)

    def test_oversized_or_garbled_answers_are_tool_errors(self):
        self.state.raw_next = (200, b"[" + b"0," * (2 * 1024 * 1024) + b"0]")
        r = self.call("memory_search", {"query": "x"})
        self.assertTrue(r.is_error)
        self.assertIn("over", r.text)
        self.state.raw_next = (200, b"<html>oops</html>")
        r = self.call("memory_profile")
        self.assertTrue(r.is_error)
        self.assertIn("not JSON", r.text)
        self.state.raw_next = (500, b'{"detail": "token sk-leaky-0123456789abcdef"}')
        r = self.call("memory_profile")
        self.assertTrue(r.is_error)
        self.assertIn("500", r.text)
        self.assertNotIn("leaky", r.text)

    def test_honcho_down_is_a_tool_error(self):
        self.server.shutdown()
        self.server.server_close()
        r = self.call("memory_search", {"query": "x"})
        self.assertTrue(r.is_error)
        self.assertIn("unreachable", r.text)


class Settings(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.home = self.dir.name

    def write(self, rel, data):
        path = os.path.join(self.home, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(data, f)

    def test_host_block_beats_root_beats_env(self):
        self.write(".hermes/honcho.json", {"apiKey": "root-key", "peerName": "root-peer",
                                           "hosts": {"hermes": {"peerName": "alice"}}})
        s = honcho.resolve({}, {"HOME": self.home, "HONCHO_API_KEY": "env-key"})
        self.assertEqual((s.user_peer, s.api_key, s.workspace, s.assistant_peer),
                         ("alice", "root-key", "hermes", "chatgpt"))
        self.assertEqual(s.base_url, "https://api.honcho.dev")

    def test_profile_home_uses_its_own_host_block(self):
        self.write(".hermes/profiles/work/honcho.json",
                   {"hosts": {"hermes_work": {"peerName": "w", "workspace": "ws"},
                              "hermes": {"peerName": "default"}}})
        s = honcho.resolve({}, {"HOME": self.home,
                                "HERMES_HOME": os.path.join(self.home, ".hermes/profiles/work")})
        self.assertEqual((s.user_peer, s.workspace), ("w", "ws"))

    def test_global_config_is_the_last_resort(self):
        self.write(".honcho/config.json", {"peerName": "g", "baseUrl": "http://127.0.0.1:9"})
        s = honcho.resolve({}, {"HOME": self.home})
        self.assertEqual((s.user_peer, s.base_url), ("g", "http://127.0.0.1:9"))

    def test_missing_peer_or_bad_url_is_named(self):
        with self.assertRaisesRegex(honcho.HonchoError, "peerName"):
            honcho.resolve({}, {"HOME": self.home})
        self.write(".hermes/honcho.json", {"peerName": "a", "baseUrl": "file:///etc/passwd"})
        with self.assertRaisesRegex(honcho.HonchoError, "http"):
            honcho.resolve({}, {"HOME": self.home})

    def test_memory_call_without_config_is_a_tool_error(self):
        tools = by_name(adapters.build({}, env={"HOME": self.home}))
        r = tools["memory_profile"].call({}, FakeHermes().ctx())
        self.assertTrue(r.is_error)
        self.assertIn("peerName", r.text)


if __name__ == "__main__":
    unittest.main()
