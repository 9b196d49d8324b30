"""The memory tools' hostile cases: where the Honcho key may go, whose conclusions a
delete may remove, and secret or temporary text disguised with Unicode."""

import os
import unittest
from unittest import mock

import honcho_fake
from test_adapters_memory import KEY, MemoryCase


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


if __name__ == "__main__":
    unittest.main()
