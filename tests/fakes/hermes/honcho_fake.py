"""A fake Honcho HTTP service (v3 routes) for the memory adapter's tests.

It serves the routes the adapter uses, under /v3/workspaces, as Honcho's
own routers define them (src/routers/peers.py, conclusions.py):
  POST   /v3/workspaces                               get-or-create {id}
  POST   /v3/workspaces/W/peers                       get-or-create {id}
  GET    /v3/workspaces/W/peers/P/card                {peer_card: [...]}
  GET    /v3/workspaces/W/peers/P/context             {peer_id, target_id, representation, peer_card}
  POST   /v3/workspaces/W/peers/P/search              [message, ...]
  POST   /v3/workspaces/W/peers/P/chat                {content}
  POST   /v3/workspaces/W/conclusions                 201 [conclusion, ...]
  POST   /v3/workspaces/W/conclusions/list            {items, total, page, size, pages}
  POST   /v3/workspaces/W/conclusions/query           [conclusion, ...]
  DELETE /v3/workspaces/W/conclusions/ID              204, or 404
Simplified: no deriver or dialectic model; search is a substring match over
seeded messages, chat answers from the peer card, context's representation
lists the conclusions about the peer, and filters match exact fields only.
With api_key set, a request without "Authorization: Bearer <key>" gets 401.
Every request is recorded in state.requests as (method, path, body), and
its Authorization header (or None) in state.authorizations;
state.raw_next = (status, bytes) makes the next answer exactly that (for
hostile answers: oversized, not JSON); state.redirect = (status, base)
answers every request with that 3xx to base + the request's path (a
redirect to another listener). A request sent through it as a proxy
(absolute URL) is recorded the same way. conclusions/list pages as Honcho
does: query page (from 1) and size (1-100, default 50).

Run alone: python3 honcho_fake.py [--api-key KEY] prints "port N" and serves
on 127.0.0.1 until killed.
"""

import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class State:
    def __init__(self, api_key=None):
        self.api_key = api_key
        self.workspaces = set()
        self.peers = {}          # (workspace, peer) -> {"card": [...], "messages": [...]}
        self.conclusions = {}    # id -> conclusion
        self.requests = []
        self.raw_next = None     # (status, bytes): the next answer, whatever was asked
        self.redirect = None     # (status, base): answer every request with a redirect
        self.authorizations = []
        self.lock = threading.Lock()

    def seed_peer(self, workspace, peer, card=(), messages=()):
        self.workspaces.add(workspace)
        self.peers[(workspace, peer)] = {"card": list(card), "messages": list(messages)}


class Handler(BaseHTTPRequestHandler):
    state: State = None  # set per server

    def log_message(self, *a):  # keep test output clean
        pass

    def _send(self, code, body=None):
        raw = b"" if body is None else json.dumps(body).encode()
        self.send_response(code)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _handle(self, method):
        st = self.state
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"null") if n else None
        url = urlparse(self.path)
        with st.lock:
            st.requests.append((method, url.path, body))
            st.authorizations.append(self.headers.get("Authorization"))
        if st.redirect is not None:
            self.send_response(st.redirect[0])
            self.send_header("Location", st.redirect[1] + url.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if st.raw_next is not None:
            (code, raw), st.raw_next = st.raw_next, None
            self.send_response(code)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            return
        if st.api_key and self.headers.get("Authorization") != "Bearer " + st.api_key:
            return self._send(401, {"detail": "Invalid API key"})
        parts = url.path.strip("/").split("/")
        if parts[:2] != ["v3", "workspaces"]:
            return self._send(404, {"detail": "Not Found"})
        rest = parts[2:]
        with st.lock:
            return self._route(method, rest, body or {}, parse_qs(url.query))

    def _route(self, method, rest, body, query):
        st = self.state
        if method == "POST" and not rest:
            st.workspaces.add(body.get("id"))
            return self._send(200, {"id": body.get("id"), "metadata": {}})
        if not rest or rest[0] not in st.workspaces:
            return self._send(404, {"detail": "Workspace not found"})
        ws, rest = rest[0], rest[1:]
        if rest == ["peers"] and method == "POST":
            st.peers.setdefault((ws, body.get("id")), {"card": [], "messages": []})
            return self._send(200, {"id": body.get("id"), "workspace_id": ws})
        if len(rest) == 3 and rest[0] == "peers":
            peer = st.peers.get((ws, rest[1]))
            if peer is None:
                return self._send(404, {"detail": "Peer not found"})
            return self._peer(method, ws, rest[1], rest[2], peer, body, query)
        if rest[:1] == ["conclusions"]:
            return self._conclusions(method, ws, rest[1:], body, query)
        return self._send(404, {"detail": "Not Found"})

    def _about(self, ws, observed):
        return [c for c in self.state.conclusions.values()
                if c["workspace_id"] == ws and c["observed_id"] == observed]

    def _peer(self, method, ws, name, what, peer, body, query):
        if method == "GET" and what == "card":
            return self._send(200, {"peer_card": peer["card"] or None})
        if method == "GET" and what == "context":
            rep = "\n".join("- " + c["content"] for c in self._about(ws, name))
            return self._send(200, {"peer_id": name, "target_id": name,
                                    "representation": rep, "peer_card": peer["card"] or None})
        if method == "POST" and what == "search":
            q = (body.get("query") or "").lower()
            hits = [m for m in peer["messages"] if q in m["content"].lower()]
            return self._send(200, hits[: int(body.get("limit") or 10)])
        if method == "POST" and what == "chat":
            facts = "; ".join(peer["card"]) or "nothing yet"
            return self._send(200, {"content": f"About {name}: {facts}"})
        return self._send(404, {"detail": "Not Found"})

    def _conclusions(self, method, ws, rest, body, query):
        st = self.state
        if method == "POST" and not rest:
            made = []
            for c in body.get("conclusions") or []:
                for peer in (c.get("observer_id"), c.get("observed_id")):
                    if (ws, peer) not in st.peers:
                        return self._send(404, {"detail": f"Peer {peer} not found"})
                cid = uuid.uuid4().hex[:21]
                made.append({"id": cid, "content": c["content"], "observer_id": c["observer_id"],
                             "observed_id": c["observed_id"], "session_id": c.get("session_id"),
                             "workspace_id": ws, "created_at": "2026-12-07T00:00:00Z"})
            for c in made:
                st.conclusions[c["id"]] = c
            return self._send(201, made)
        filters = (body or {}).get("filters") or {}

        def match(c):
            return c["workspace_id"] == ws and all(c.get(k) == v for k, v in filters.items())
        if method == "POST" and rest == ["list"]:
            items = [c for c in st.conclusions.values() if match(c)]
            page = int((query.get("page") or ["1"])[0])
            size = int((query.get("size") or ["50"])[0])
            if page < 1 or not 1 <= size <= 100:
                return self._send(422, {"detail": "page or size out of range"})
            return self._send(200, {"items": items[(page - 1) * size: page * size],
                                    "total": len(items), "page": page, "size": size,
                                    "pages": (len(items) + size - 1) // size})
        if method == "POST" and rest == ["query"]:
            q = (body.get("query") or "").lower()
            items = [c for c in st.conclusions.values() if match(c) and q in c["content"].lower()]
            return self._send(200, items[: int(body.get("top_k") or 10)])
        if method == "DELETE" and len(rest) == 1:
            c = st.conclusions.get(rest[0])
            if c is None or c["workspace_id"] != ws:
                return self._send(404, {"detail": "Conclusion not found"})
            del st.conclusions[rest[0]]
            return self._send(204)
        return self._send(404, {"detail": "Not Found"})

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_DELETE(self):
        self._handle("DELETE")


def start(api_key=None):
    """Serve on 127.0.0.1 in a daemon thread; returns (server, state, base_url)."""
    state = State(api_key)
    handler = type("BoundHandler", (Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    return server, state, f"http://127.0.0.1:{server.server_address[1]}"


if __name__ == "__main__":
    key = sys.argv[sys.argv.index("--api-key") + 1] if "--api-key" in sys.argv else None
    srv, _, url = start(key)
    print("port", srv.server_address[1], flush=True)
    threading.Event().wait()
