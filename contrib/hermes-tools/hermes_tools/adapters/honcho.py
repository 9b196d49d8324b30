"""Honcho as Hermes has it configured, reached over HTTP with the standard library.

Hermes' Honcho memory provider (plugins/memory/honcho) talks to Honcho
through the honcho-ai SDK, which Hermes installs only when Honcho is the
chosen provider; this adapter must not depend on it, so it reads Hermes'
Honcho configuration itself and calls Honcho's HTTP API with urllib.

Configuration, as Hermes resolves it: the first of $HERMES_HOME/honcho.json,
~/.hermes/honcho.json, ~/.honcho/config.json; the host block hosts.<host>
(host "hermes", or "hermes_<profile>" when HERMES_HOME is a profile's home)
wins over the root, which wins over the environment (HONCHO_API_KEY,
HONCHO_BASE_URL). workspace defaults to the host name and peerName (the
user peer) is required. The assistant peer is this adapter's own
("chatgpt" unless configured), not Hermes' aiPeer, so what this surface
concludes is told apart from what Hermes' agent concludes.

The key goes only to baseUrl: redirects are refused (urllib would copy an
ordinary header to whatever host a 3xx names, https to http included) and
the environment's HTTP(S)_PROXY is ignored; a proxy is used only when the
adapter's own "proxy" setting names one.
"""

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

ENVIRONMENTS = {"production": "https://api.honcho.dev", "local": "http://localhost:8000"}
MAX_RESPONSE = 4 * 1024 * 1024


class HonchoError(Exception):
    """A Honcho failure, with a message that holds no credential."""


@dataclass
class HonchoSettings:
    base_url: str
    workspace: str
    user_peer: str
    assistant_peer: str
    api_key: Optional[str] = None
    api_prefix: str = "/v3"
    timeout_s: float = 30.0
    proxy: Optional[str] = None


def _host_name(hermes_home: Path) -> str:
    if hermes_home.parent.name == "profiles":
        return "hermes_" + hermes_home.name
    return "hermes"


def _first_config(hermes_home: Path, home: Path) -> Optional[Path]:
    for p in (hermes_home / "honcho.json", home / ".hermes" / "honcho.json",
              home / ".honcho" / "config.json"):
        if p.is_file():
            return p
    return None


def resolve(cfg: Dict[str, Any], env: Optional[Dict[str, str]] = None) -> HonchoSettings:
    """Hermes' Honcho settings for this adapter; HonchoError names what is missing."""
    env = dict(os.environ if env is None else env)
    home = Path(env.get("HOME", str(Path.home())))
    hermes_home = Path(env.get("HERMES_HOME") or home / ".hermes")
    path = Path(cfg["config_file"]) if cfg.get("config_file") else _first_config(hermes_home, home)
    data: Dict[str, Any] = {}
    if path is not None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise HonchoError(f"cannot read Honcho config {path}: {type(e).__name__}")
        if not isinstance(data, dict):
            raise HonchoError(f"Honcho config {path} is not a JSON object")
    host = cfg.get("host") or _host_name(hermes_home)
    block = (data.get("hosts") or {}).get(host) or {}

    def pick(key: str, env_name: Optional[str] = None) -> Any:
        for src in (block, data):
            if isinstance(src, dict) and src.get(key) not in (None, ""):
                return src[key]
        return env.get(env_name) if env_name else None

    base_url = pick("baseUrl", "HONCHO_BASE_URL") or \
        ENVIRONMENTS.get(pick("environment") or "production")
    if not base_url or not str(base_url).startswith(("http://", "https://")):
        raise HonchoError("Honcho's baseUrl must be an http(s) URL")
    user_peer = pick("peerName")
    if not user_peer:
        raise HonchoError(f"no user peer: set peerName in Hermes' Honcho config (host {host})")
    proxy = cfg.get("proxy")
    if proxy is not None and not (isinstance(proxy, str) and
                                  proxy.startswith(("http://", "https://"))):
        raise HonchoError("the memory adapter's proxy must be an http(s) URL")
    return HonchoSettings(
        base_url=str(base_url).rstrip("/"),
        workspace=str(pick("workspace") or host),
        user_peer=str(user_peer),
        assistant_peer=str(cfg.get("assistant_peer", "chatgpt")),
        api_key=pick("apiKey", "HONCHO_API_KEY") or None,
        api_prefix=str(cfg.get("api_prefix", "/v3")),
        timeout_s=float(cfg.get("timeout_s", 30)),
        proxy=proxy,
    )


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse every 3xx: the request fails with the redirect's HTTPError."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def _opener(proxy: Optional[str]) -> urllib.request.OpenerDirector:
    """An opener that follows no redirect and no proxy but the configured one."""
    proxies = {"http": proxy, "https": proxy} if proxy else {}
    return urllib.request.build_opener(urllib.request.ProxyHandler(proxies), _NoRedirect())


class Honcho:
    """The few Honcho routes the memory tools use, scoped to one workspace."""

    def __init__(self, s: HonchoSettings):
        self.s = s
        self._peers_made = False
        self._open = _opener(s.proxy).open

    def _url(self, path: str, query: Optional[Dict[str, Any]], top: bool) -> str:
        q = {k: v for k, v in (query or {}).items() if v is not None}
        url = f"{self.s.base_url}{self.s.api_prefix}/workspaces"
        if not top:
            url += "/" + urllib.parse.quote(self.s.workspace, safe="") + path
        return url + ("?" + urllib.parse.urlencode(q) if q else "")

    def request(self, method: str, path: str, body: Any = None,
                query: Optional[Dict[str, Any]] = None, top: bool = False) -> Any:
        """One call under this workspace (or, top=True, to /workspaces itself).

        Errors name the method and route, never the key or the answer's body.
        """
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self._url(path, query, top), data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.s.api_key:
            # unredirected: kept out of anything built from req.headers
            req.add_unredirected_header("Authorization", "Bearer " + self.s.api_key)
        shown = f"{method} /workspaces{'' if top else '/…' + path.split('/')[1]}"
        try:
            with self._open(req, timeout=self.s.timeout_s) as resp:
                raw = resp.read(MAX_RESPONSE + 1)
        except urllib.error.HTTPError as e:
            e.close()
            if 300 <= e.code < 400:
                raise HonchoError(f"Honcho answered {shown} with a redirect (HTTP {e.code}), "
                                  "which is not followed: set baseUrl to the final address")
            raise HonchoError(f"Honcho answered HTTP {e.code} to {shown}")
        except (urllib.error.URLError, OSError) as e:
            raise HonchoError(f"Honcho is unreachable ({type(e).__name__}) for {shown}")
        if len(raw) > MAX_RESPONSE:
            raise HonchoError(f"Honcho's answer to {shown} is over {MAX_RESPONSE} bytes")
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise HonchoError(f"Honcho's answer to {shown} is not JSON")

    @staticmethod
    def peer(name: str) -> str:
        return "/peers/" + urllib.parse.quote(name, safe="")

    def ensure_peers(self) -> None:
        """Get-or-create the workspace and both peers once, before the first write."""
        if self._peers_made:
            return
        self.request("POST", "", {"id": self.s.workspace}, top=True)
        for name in (self.s.user_peer, self.s.assistant_peer):
            self.request("POST", "/peers", {"id": name})
        self._peers_made = True
