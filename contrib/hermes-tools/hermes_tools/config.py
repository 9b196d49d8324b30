"""The server's configuration: a JSON file and command-line arguments.

JSON because the server is standard library only. Nothing is served unless named (the
allowlist is default deny). Unknown keys are refused so a typo cannot silently widen or narrow
what runs. The "adapters" object is passed on untouched to hermes_tools.adapters.build.
"""

import argparse
import json
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

MAX_LINE_DEFAULT = 4 * 1024 * 1024
MAX_RESULT_DEFAULT = 1024 * 1024
STUCK_EXIT_DEFAULT = 60.0


class ConfigError(Exception):
    """A configuration the server will not start with (the message is one line)."""


@dataclass
class Config:
    allow: List[str] = field(default_factory=list)
    toolsets: Optional[List[str]] = None  # Hermes toolsets to load; None: all
    timeout_s: float = 120.0
    timeouts: Dict[str, float] = field(default_factory=dict)  # per-tool overrides
    max_line_bytes: int = MAX_LINE_DEFAULT
    max_result_bytes: int = MAX_RESULT_DEFAULT  # a longer result text is cut
    max_concurrent: int = 8
    stuck_exit_s: float = STUCK_EXIT_DEFAULT  # every slot hung this long past its timeout
    task_id: str = "hermes-tools"
    user_task: Optional[str] = None
    adapters: Dict[str, Any] = field(default_factory=dict)

    def timeout_for(self, name: str) -> float:
        return self.timeouts.get(name, self.timeout_s)


_KEYS = {"allow", "toolsets", "timeout_seconds", "timeouts", "max_line_bytes",
         "max_result_bytes", "max_concurrent", "stuck_exit_seconds", "task_id", "user_task",
         "adapters"}


def _names(value, what):
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{what} must be a list of non-empty strings")
    return list(value)


def _positive(value, what, kind=float):
    """A positive finite number: json.load and float() accept Infinity and NaN, and an
    infinite timeout or cap would silently mean none."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value <= 0):
        raise ConfigError(f"{what} must be a positive finite number")
    if kind is int and value != int(value):
        raise ConfigError(f"{what} must be a whole number")
    return kind(value)


def from_dict(d: Dict[str, Any], cfg: Optional[Config] = None) -> Config:
    """Apply a parsed config file to cfg (a new Config when None)."""
    cfg = cfg or Config()
    if not isinstance(d, dict):
        raise ConfigError("the config file must hold a JSON object")
    unknown = sorted(set(d) - _KEYS)
    if unknown:
        raise ConfigError(f"unknown config key {unknown[0]!r}")
    if "allow" in d:
        cfg.allow = _names(d["allow"], "allow")
    if "toolsets" in d:
        cfg.toolsets = None if d["toolsets"] is None else _names(d["toolsets"], "toolsets")
    if "timeout_seconds" in d:
        cfg.timeout_s = _positive(d["timeout_seconds"], "timeout_seconds")
    if "timeouts" in d:
        if not isinstance(d["timeouts"], dict):
            raise ConfigError("timeouts must map tool names to seconds")
        cfg.timeouts = {k: _positive(v, f"timeouts.{k}") for k, v in d["timeouts"].items()}
    if "max_line_bytes" in d:
        cfg.max_line_bytes = _positive(d["max_line_bytes"], "max_line_bytes", int)
    if "max_result_bytes" in d:
        cfg.max_result_bytes = _positive(d["max_result_bytes"], "max_result_bytes", int)
    if "max_concurrent" in d:
        cfg.max_concurrent = _positive(d["max_concurrent"], "max_concurrent", int)
    if "stuck_exit_seconds" in d:
        cfg.stuck_exit_s = _positive(d["stuck_exit_seconds"], "stuck_exit_seconds")
    for key in ("task_id", "user_task"):
        if key in d:
            if not isinstance(d[key], str) or not d[key]:
                raise ConfigError(f"{key} must be a non-empty string")
            setattr(cfg, key, d[key])
    if "adapters" in d:
        if not isinstance(d["adapters"], dict):
            raise ConfigError("adapters must be an object")
        cfg.adapters = d["adapters"]
    return cfg


def parse_args(argv: List[str]) -> Config:
    """The command line: --config FILE, then --allow/--timeout/... on top of it."""
    p = argparse.ArgumentParser(prog="python3 -m hermes_tools",
                                description="Hermes' tools over MCP (stdio).")
    p.add_argument("--config", metavar="FILE", help="JSON config file")
    p.add_argument("--allow", metavar="NAME[,NAME...]", action="append", default=[],
                   help="serve these tools (repeatable; added to the file's allow)")
    p.add_argument("--toolsets", metavar="NAME[,NAME...]",
                   help="Hermes toolsets to load (default: all)")
    p.add_argument("--timeout", metavar="SECONDS", type=float, help="per-call timeout")
    p.add_argument("--max-line-bytes", metavar="N", type=int, help="request line cap")
    p.add_argument("--max-result-bytes", metavar="N", type=int, help="result text cap")
    p.add_argument("--stuck-exit-seconds", metavar="SECONDS", type=float,
                   help="exit when every call slot has been hung past its timeout this long")
    p.add_argument("--task-id", metavar="ID", help="Hermes task id for every call")
    a = p.parse_args(argv)
    cfg = Config()
    if a.config:
        try:
            with open(a.config, encoding="utf-8") as f:
                d = json.load(f, parse_constant=_no_constant)
        except OSError as e:
            raise ConfigError(f"cannot read {a.config}: {e.strerror}")
        except ValueError as e:
            raise ConfigError(f"{a.config} is not valid JSON: {e}")
        from_dict(d, cfg)
    for item in a.allow:
        cfg.allow += [n for n in item.split(",") if n]
    if a.toolsets:
        cfg.toolsets = [n for n in a.toolsets.split(",") if n]
    if a.timeout is not None:
        cfg.timeout_s = _positive(a.timeout, "--timeout")
    if a.max_line_bytes is not None:
        cfg.max_line_bytes = _positive(a.max_line_bytes, "--max-line-bytes", int)
    if a.max_result_bytes is not None:
        cfg.max_result_bytes = _positive(a.max_result_bytes, "--max-result-bytes", int)
    if a.stuck_exit_seconds is not None:
        cfg.stuck_exit_s = _positive(a.stuck_exit_seconds, "--stuck-exit-seconds")
    if a.task_id:
        cfg.task_id = a.task_id
    return cfg


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")
