"""The five memory tools, over Hermes' Honcho workspace and user peer.

Reads (profile, search, context, reasoning) look at the user peer as Honcho
knows it. memory_conclude writes conclusions the assistant peer draws about
the user; creating one needs a durable kind and text that is neither
secret-like nor explicitly temporary, because a conclusion outlives the
conversation and is shared with every Hermes surface on this workspace.
list and delete are Honcho's own, narrowed to this surface's conclusions:
list shows the assistant peer's conclusions about the user with the ids
delete takes, and delete removes only an id that list would show (Honcho
deletes any id in the workspace, Hermes' own agent's conclusions included).
"""

import re
import unicodedata
from typing import Any, Callable, Dict, List, Optional

from ..tool import CallContext, Tool, ToolResult
from .common import Refusal, only_known, refuse, want_int, want_str
from .honcho import Honcho, HonchoError

KINDS = ("preference", "decision", "architecture", "project_state")
MAX_CONTENT = 2000
LIST_PAGE = 100        # Honcho's largest page
LIST_PAGES = 50        # a delete looks through at most this many pages of conclusions

# The secret check is a superset of the hermes-mcp gateway's reject_secrets detector
# (src/gateway/gwsecret.c, gw_secret_like), which guards the same memory tools when they are
# reached through the gateway: keep the two in step. Every shape the gateway names is here
# (its key prefixes, AKIA/ASIA ids, PEM private keys, "Bearer <16+>"); its hex after a
# credential word is a run _TOKENISH catches; its random 32+ tokens are caught by _TOKENISH
# (any with a digit) or _random_looking (the gateway's case and word-pair filters without its
# entropy and word tests, on the same windows). The adapter adds assignments to credential
# words, credentials in URLs, JWTs and pk-/rk- keys.
_KEYWORD = (r"(?i)\b(password|passwd|passphrase|secret|api[_ -]?key|access[_ -]?token|"
            r"auth[_ -]?token|private[_ -]?key|client[_ -]?secret)\b")
_AT = r"(?<![A-Za-z0-9])"    # a key starts a token or follows punctuation, as the gateway has it
_SECRET = [re.compile(p) for p in (
    r"(?i)private key-----",                         # a PEM private key, BEGIN or END
    _AT + r"(sk|pk|rk)-[A-Za-z0-9_-]{16,}",          # OpenAI/Anthropic/Stripe style keys
    _AT + r"(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_-]{20,}", _AT + r"github_pat_[A-Za-z0-9_-]{20,}",
    _AT + r"(xox[abposr]|xapp)-[A-Za-z0-9_-]{10,}", _AT + r"glpat-[A-Za-z0-9_-]{20,}",
    _AT + r"(AKIA|ASIA)[0-9A-Z]{16}", _AT + r"AIza[0-9A-Za-z_-]{30,}",
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.",  # a JWT
    r"(?i)bearer\s+[A-Za-z0-9._~+/=-]{16,}",           # an Authorization header's value
    _KEYWORD + r"\s*[:=]\s*\S{4,}",                     # "password: ...", "api key = ..."
    _KEYWORD + r"\s+is\s+(?=\S*[0-9!@#$%^&*_+=/-])\S{6,}",  # "my password is hunter2!"
    r"(?i)://[^/\s:@]+:[^/\s@]+@",                   # credentials inside a URL
)]
_TOKENISH = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
_GW_TOKEN = re.compile(r"[A-Za-z0-9_+/=.-]{32,}")   # the gateway's token characters
_WINDOW = 128                                       # the gateway's window on long tokens
_TEMPORARY = re.compile(
    r"(?i)\b(temporarily|for now|for the moment|for today|today only|just today|"
    r"this session only|for this session|just this once|only this time|ephemeral|"
    r"(is|are|as an?|only|just) temporary|temporary (fix|workaround|measure|change|"
    r"decision|preference|setting|note|rule|exception)|"
    r"until (tomorrow|tonight|later|the end of (the )?(day|week|session))|"
    r"for the (next|rest of the) (few )?(minutes?|hours?|day|session|week))\b")


def _plain(text: str) -> str:
    """text as the checks read it: compatibility forms folded (full-width "ｐａｓｓｗｏｒｄ"
    is "password"), and format characters (zero-width spaces and joiners, soft hyphens,
    bidi controls: category Cf) and combining marks dropped, so none of them hides a
    pattern. Only the checks see this; the conclusion is stored as written."""
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if unicodedata.category(c) not in ("Cf", "Mn", "Me"))
    return unicodedata.normalize("NFKC", kept)


def _random_looking(run: str) -> bool:
    """The gateway's first filters for a random token, window by window: both cases make
    up an eighth of it each, and it has a digit or its lower-case letters are mostly not
    followed by lower-case ones (in words they are)."""
    n = len(run)
    starts = [0] if n <= _WINDOW else \
        sorted({min(a, n - _WINDOW) for a in range(0, n - _WINDOW + _WINDOW // 2, _WINDOW // 2)})
    for a in starts:
        w = run[a:a + _WINDOW]
        lower = sum(c.islower() for c in w)
        upper = sum(c.isupper() for c in w)
        if lower * 8 < len(w) or upper * 8 < len(w):
            continue
        pairs = [(x, y) for x, y in zip(w, w[1:]) if x.islower()]
        wordlike = sum(y.islower() for _, y in pairs) >= 0.7 * len(pairs)
        if any(c.isdigit() for c in w) or not wordlike:
            return True
    return False


def _secret_in(text: str) -> bool:
    if any(p.search(text) for p in _SECRET):
        return True
    for run in _TOKENISH.findall(text):
        if re.search(r"[0-9]", run) and re.search(r"[A-Za-z]", run) and not run.isalpha():
            return True
    return any(_random_looking(run) for run in _GW_TOKEN.findall(text))


def secret_like(text: str) -> bool:
    """True for text that looks like it holds a credential.

    Known key shapes, a bearer value, "password: ..."-style assignments (or
    "... is <value with a digit or symbol>"), credentials in URLs, long
    unbroken runs mixing letters and digits (a token or a hash) and long
    mixed-case runs that are not words. Words like "password policy" or
    "bearer tokens" alone are not secrets. Checked on the text as written
    (what the gateway sees) and as _plain reads it (what a reader sees).
    """
    return _secret_in(text) or _secret_in(_plain(text))


def temporary(text: str) -> bool:
    """True for text that says it is only meant to hold for a while.

    "temporary files" is a durable fact; "a temporary workaround", "for
    now", "temporarily" or "until tomorrow" say the text itself expires.
    Read through _plain, so full-width or zero-width characters hide nothing.
    """
    return _TEMPORARY.search(_plain(text)) is not None


def _ok(value: Any) -> ToolResult:
    import json
    structured = value if isinstance(value, dict) else {"result": value}
    return ToolResult(text=json.dumps(value, ensure_ascii=False), structured=structured)


def build(cfg: Dict[str, Any], client: Callable[[], Honcho]) -> List[Tool]:
    """The five memory tools; client() gives the Honcho client or raises HonchoError."""

    def tool(name, description, schema, run, read_only=True):
        def call(args: Dict[str, Any], ctx: CallContext) -> ToolResult:
            try:
                return run(args if args is not None else {}, client())
            except Refusal as r:
                return refuse(str(r))
            except HonchoError as e:
                return refuse(f"memory is unavailable: {e}")
        return Tool(name=name, description=description, input_schema=schema, call=call,
                    annotations={"readOnlyHint": read_only, "openWorldHint": False})

    def obj(props, required=None):
        s = {"type": "object", "properties": props, "additionalProperties": False}
        if required:
            s["required"] = required
        return s

    def profile(args, h: Honcho):
        only_known(args, (), {})
        card = h.request("GET", h.peer(h.s.user_peer) + "/card")
        return _ok({"peer": h.s.user_peer, "peer_card": (card or {}).get("peer_card")})

    def search(args, h: Honcho):
        only_known(args, ("query", "limit"), {})
        q = want_str(args, "query", required=True, max_len=1000)
        limit = want_int(args, "limit", 1, 50) or 10
        found = h.request("POST", h.peer(h.s.user_peer) + "/search", {"query": q, "limit": limit})
        return _ok({"results": found if isinstance(found, list) else (found or {}).get("items", [])})

    def context(args, h: Honcho):
        only_known(args, ("query", "max_conclusions"), {})
        q = want_str(args, "query", max_len=1000)
        n = want_int(args, "max_conclusions", 1, 100)
        got = h.request("GET", h.peer(h.s.user_peer) + "/context",
                        query={"search_query": q, "max_conclusions": n})
        return _ok(got or {})

    def reasoning(args, h: Honcho):
        only_known(args, ("question",), {})
        q = want_str(args, "question", required=True, max_len=4000)
        got = h.request("POST", h.peer(h.s.user_peer) + "/chat", {"query": q, "stream": False})
        return _ok({"answer": (got or {}).get("content")})

    def conclude(args, h: Honcho):
        only_known(args, ("action", "content", "kind", "id", "query", "limit"), {})
        action = args.get("action", "create")
        if action == "create":
            content = want_str(args, "content", required=True, max_len=MAX_CONTENT)
            kind = args.get("kind")
            if kind not in KINDS:
                raise Refusal(f"creating a conclusion needs 'kind', one of {', '.join(KINDS)}")
            if secret_like(content):
                raise Refusal("the content looks like it holds a secret; conclusions never do")
            if temporary(content):
                raise Refusal("the content says it is temporary; conclusions are durable")
            h.ensure_peers()
            made = h.request("POST", "/conclusions", {"conclusions": [{
                "content": f"[{kind}] {content}", "observer_id": h.s.assistant_peer,
                "observed_id": h.s.user_peer}]})
            return _ok({"created": made})
        for key in ("content", "kind"):
            if key in args:
                raise Refusal(f"'{key}' is only for action create")
        filters = {"observer_id": h.s.assistant_peer, "observed_id": h.s.user_peer}
        if action == "list":
            limit = want_int(args, "limit", 1, 100) or 20
            q = want_str(args, "query", max_len=1000)
            if q:
                got = h.request("POST", "/conclusions/query",
                                {"query": q, "top_k": limit, "filters": filters})
                return _ok({"items": got or []})
            got = h.request("POST", "/conclusions/list", {"filters": filters},
                            query={"size": limit})
            return _ok({"items": (got or {}).get("items", []), "total": (got or {}).get("total")})
        if action == "delete":
            cid = want_str(args, "id", required=True, max_len=256)
            if not _ours(h, filters, cid):
                raise Refusal(f"no conclusion with that id among {h.s.assistant_peer}'s "
                              f"conclusions about {h.s.user_peer}; only those can be deleted")
            h.request("DELETE", "/conclusions/" + _quote(cid))
            return _ok({"deleted": cid})
        raise Refusal("'action' must be create, list or delete")

    return [
        tool("memory_profile",
             "The user's peer card in Hermes' Honcho memory: key facts (read-only).",
             obj({}), profile),
        tool("memory_search",
             "Search what the user said across Hermes sessions (Honcho).",
             obj({"query": {"type": "string", "maxLength": 1000},
                  "limit": {"type": "integer", "minimum": 1, "maximum": 50}}, ["query"]),
             search),
        tool("memory_context",
             "Honcho's representation and peer card of the user, optionally focused "
             "on a query.",
             obj({"query": {"type": "string", "maxLength": 1000},
                  "max_conclusions": {"type": "integer", "minimum": 1, "maximum": 100}}),
             context),
        tool("memory_reasoning",
             "Ask Honcho a question about the user; it reasons over everything it knows.",
             obj({"question": {"type": "string", "maxLength": 4000}}, ["question"]),
             reasoning),
        tool("memory_conclude",
             "Durable conclusions about the user. action=create (default) needs content "
             f"and kind ({', '.join(KINDS)}); secret-like or temporary content is refused. "
             "action=list shows conclusions with their ids (query searches them); "
             "action=delete removes one by id.",
             obj({"action": {"type": "string", "enum": ["create", "list", "delete"]},
                  "content": {"type": "string", "maxLength": MAX_CONTENT},
                  "kind": {"type": "string", "enum": list(KINDS)},
                  "id": {"type": "string", "maxLength": 256},
                  "query": {"type": "string", "maxLength": 1000},
                  "limit": {"type": "integer", "minimum": 1, "maximum": 100}}),
             conclude, read_only=False),
    ]


def _ours(h: Honcho, filters: Dict[str, str], cid: str) -> bool:
    """Whether cid is one of the assistant peer's conclusions about the user.

    Honcho's DELETE takes any id in the workspace, so the id is looked up in
    the same filtered list action=list shows, page by page.
    """
    for page in range(1, LIST_PAGES + 1):
        got = h.request("POST", "/conclusions/list", {"filters": filters},
                        query={"page": page, "size": LIST_PAGE}) or {}
        items = got.get("items") or []
        if any(isinstance(c, dict) and c.get("id") == cid for c in items):
            return True
        pages = got.get("pages")
        if not items or not isinstance(pages, int) or page >= pages:
            return False
    raise Refusal(f"more than {LIST_PAGES * LIST_PAGE} conclusions to look through; "
                  "delete the conclusion from Honcho itself")


def _quote(s: str) -> str:
    import urllib.parse
    return urllib.parse.quote(s, safe="")
