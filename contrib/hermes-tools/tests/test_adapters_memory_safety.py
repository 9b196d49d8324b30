"""The memory tools' hostile cases: where the Honcho key may go, whose conclusions a
delete may remove, and secret or temporary text disguised with Unicode."""

import os
import random
import re
import unittest
from unittest import mock

import honcho_fake
from hermes_tools.adapters import memory
from test_adapters_memory import KEY, MemoryCase

GATEWAY_TESTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "unit",
                             "test_gwsecret.c")


class KeyStaysWithHoncho(MemoryCase):
    def other_listener(self):
        server, state, url = honcho_fake.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return state, url

    def test_a_redirect_is_refused_and_the_key_never_reaches_its_target(self):
        other, url = self.other_listener()
        for code in (301, 302, 303, 307, 308):
            with self.subTest(code=code):
                self.state.redirect = (code, url)
                for name, args in (("memory_profile", {}),
                                   ("memory_conclude", {"content": "uses Debian",
                                                        "kind": "project_state"})):
                    r = self.call(name, args)
                    self.assertTrue(r.is_error, r.text)
                    self.assertIn("redirect", r.text)
                    self.assertNotIn(KEY, r.text)
        self.assertNotIn("Bearer " + KEY, other.authorizations)
        self.assertEqual(other.requests, [])
        self.assertTrue(self.state.authorizations)
        self.assertTrue(all(a == "Bearer " + KEY for a in self.state.authorizations))

    def test_the_environments_proxy_is_not_used(self):
        proxy, url = self.other_listener()
        env = {"HTTP_PROXY": url, "http_proxy": url, "HTTPS_PROXY": url, "https_proxy": url}
        with mock.patch.dict(os.environ, env):
            for k in ("NO_PROXY", "no_proxy"):
                os.environ.pop(k, None)
            r = self.call("memory_profile")
        self.assertFalse(r.is_error, r.text)
        self.assertNotIn("Bearer " + KEY, proxy.authorizations)
        self.assertEqual(proxy.requests, [])
        self.assertEqual(self.state.authorizations, ["Bearer " + KEY])

    def test_a_configured_proxy_is_used(self):
        proxy, url = self.other_listener()
        proxy.seed_peer("hermes", "alice", card=["via the proxy"])
        self.build({"proxy": url})
        r = self.call("memory_profile")
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(r.structured["peer_card"], ["via the proxy"])
        self.assertEqual(self.state.requests, [])
        self.build({"proxy": "socks5://127.0.0.1:1"})
        r = self.call("memory_profile")
        self.assertTrue(r.is_error)
        self.assertIn("proxy", r.text)


class DeleteOnlyOurs(MemoryCase):
    def conclusion(self, cid, observer, observed="alice"):
        self.state.conclusions[cid] = {"id": cid, "content": "x", "observer_id": observer,
                                       "observed_id": observed, "workspace_id": "hermes"}

    def test_another_peers_conclusion_is_refused_and_kept(self):
        self.conclusion("by-hermes", "hermes")
        self.conclusion("about-bob", "chatgpt", "bob")
        for cid in ("by-hermes", "about-bob", "nonexistent"):
            with self.subTest(cid=cid):
                r = self.call("memory_conclude", {"action": "delete", "id": cid})
                self.assertTrue(r.is_error, r.text)
                self.assertIn("only those can be deleted", r.text)
        self.assertEqual(set(self.state.conclusions), {"by-hermes", "about-bob"})
        self.assertNotIn("DELETE", {m for m, _, _ in self.state.requests})

    def test_ours_is_found_past_the_first_page(self):
        for i in range(230):
            self.conclusion(f"c{i:03}", "chatgpt")
        self.conclusion("by-hermes", "hermes")
        r = self.call("memory_conclude", {"action": "delete", "id": "c229"})
        self.assertFalse(r.is_error, r.text)
        self.assertNotIn("c229", self.state.conclusions)
        self.assertIn("by-hermes", self.state.conclusions)
        lists = [p for m, p, _ in self.state.requests if p.endswith("/conclusions/list")]
        self.assertEqual(len(lists), 3)


class DisguisedText(MemoryCase):
    ZW = "\u200b"  # zero-width space

    def test_unicode_disguised_secrets_are_refused(self):
        for text in ("ｐａｓｓｗｏｒｄ: hunter22",
                     "my ｐａｓｓｗｏｒｄ ｉｓ hunter2!",
                     "key sk-" + self.ZW.join("ant-api03-abcdefghijklmnopqrstuv"),
                     "s\u200dk-ant-api03-abcdefghijklmnop",
                     "gh\u2060p_abcdefghijklmnopqrstuvwxyz0123",
                     "pass\u00adword = hunter22",
                     "ｓｋ－ａｎｔ－ａｐｉ０３－ａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐ",
                     "AKIA\ufeffABCDEFGHIJKLMNOP",
                     "pa\u0301ssword: hunter22",
                     "-----BEGIN RSA PRIVATE\u200b KEY-----"):
            with self.subTest(text=text):
                self.assertTrue(memory.secret_like(text))
                r = self.call("memory_conclude", {"content": text, "kind": "decision"})
                self.assertTrue(r.is_error)
                self.assertIn("secret", r.text)
        self.assertEqual(self.state.conclusions, {})

    def test_unicode_disguised_temporary_text_is_refused(self):
        for text in ("use the staging DB ｆｏｒ ｎｏｗ", "use the staging DB for" + self.ZW + " now",
                     "Tem\u200cporarily pin numpy", "skip the tests until\u00a0tomorrow",
                     "a tempor\u00adary workaround"):
            with self.subTest(text=text):
                r = self.call("memory_conclude", {"content": text, "kind": "decision"})
                self.assertTrue(r.is_error, text)
                self.assertIn("temporary", r.text)
        self.assertEqual(self.state.conclusions, {})

    def test_ordinary_unicode_text_is_kept_as_written(self):
        text = "préfère les réponses courtes; 日本語の資料も読む; signs off with 👩\u200d💻"
        self.assertFalse(memory.secret_like(text))
        self.assertFalse(memory.temporary(text))
        r = self.call("memory_conclude", {"content": text, "kind": "preference"})
        self.assertFalse(r.is_error, r.text)
        self.assertEqual(r.structured["created"][0]["content"], "[preference] " + text)


class GatewaySuperset(unittest.TestCase):
    """The adapter refuses at least what the gateway's reject_secrets refuses."""

    def gateway_secrets(self):
        with open(GATEWAY_TESTS, encoding="utf-8") as f:
            src = f.read()
        block = src[src.index("secrets[] = {"):]
        block = re.sub(r"/\*.*?\*/", "", block[: block.index("};")], flags=re.S)
        found = [re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m[1], m[1]), lit)
                 for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', block)]
        self.assertGreaterEqual(len(found), 15, "the gateway's secret cases were not found")
        return found

    def test_every_gateway_secret_case_is_refused(self):
        for text in self.gateway_secrets():
            with self.subTest(text=text):
                self.assertTrue(memory.secret_like(text))

    def test_gateway_shapes_the_adapter_lacked(self):
        for text in ("glpat-abcdefghij0123456789", "ASIAIOSFODNN7EXAMPLE",
                     "xapp-1-A0123456789-abcdef", "xoxb-abc_def_ghi1",
                     "-----begin openssh private key-----", "KEY_sk-ABCDEFGHIJ0123456789abcd",
                     "ZrQmLxVbTnWcKyHpJdFsGaZrQmLxVbTnWcKy"):  # letters only, random
            with self.subTest(text=text):
                self.assertTrue(memory.secret_like(text))
        self.assertFalse(memory.secret_like("ThisIsAVeryLongCamelCaseIdentifierNameForTheTest"))

    def test_random_tokens_of_every_usual_alphabet_are_refused(self):
        b62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        rnd = random.Random(20261207)
        missed = []
        for i in range(2000):
            alphabet = b62 if i % 2 else b62 + "-_"
            token = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(32, 128)))
            if not memory.secret_like(("the token is " if i & 4 else "") + token):
                missed.append(token)
        self.assertEqual(missed, [])


if __name__ == "__main__":
    unittest.main()
