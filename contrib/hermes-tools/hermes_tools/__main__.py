"""Start the server: python3 -m hermes_tools [--config FILE] [--allow NAME,...] ...

The MCP stream owns file descriptors 0 and 1. Before Hermes is imported they are moved to
private descriptors and fd 1 becomes a copy of stderr (fd 0 reads /dev/null), so nothing
Hermes prints, not even a subprocess or C library writing to fd 1, can corrupt the stream,
and nothing it runs can eat our input.
"""

import importlib
import logging
import os
import sys


def _take_stdio():
    """Return private binary (input, output) streams; leave fds 0/1 harmless."""
    sys.stdout.flush()
    mcp_in = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    mcp_out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    return mcp_in, mcp_out


def _fail(message: str) -> "None":
    sys.stderr.write(f"hermes-tools: {message}\n")
    sys.stderr.flush()
    os._exit(1)


def _warn_unsafe_path() -> None:
    """Without python -P (or with an empty PYTHONPATH entry) the working directory is on
    sys.path, ahead of Hermes: a model_tools.py or tools/ there would be imported in its
    place, in a process holding Hermes' API keys. Said once at start; not refused, so an
    old command line keeps working while it is fixed."""
    log = logging.getLogger("hermes_tools")
    if not getattr(sys.flags, "safe_path", False):
        log.warning("run as python -P -m hermes_tools: without -P the working directory "
                    "is on sys.path ahead of Hermes' modules")
    if "" in (os.environ.get("PYTHONPATH") or "x").split(os.pathsep):
        log.warning("PYTHONPATH has an empty entry, which puts the working directory on "
                    "sys.path ahead of Hermes' modules")


def main(argv=None) -> None:
    mcp_in, mcp_out = _take_stdio()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="hermes-tools: %(levelname)s %(name)s: %(message)s")
    _warn_unsafe_path()
    from . import config, native
    from .server import Server

    try:
        cfg = config.parse_args(sys.argv[1:] if argv is None else argv)
    except config.ConfigError as e:
        _fail(str(e))
    try:
        mt = native.load_model_tools()
    except native.HermesMissing as e:
        _fail(str(e))
    try:
        offered = {t.name: t for t in native.build(mt, cfg.toolsets)}
    except Exception as e:  # the type and module only: a message can quote Hermes' config
        _fail(f"Hermes' get_tool_definitions failed ({native.describe(e)})")
    try:
        adapters = importlib.import_module(f"{__package__}.adapters")
    except ModuleNotFoundError as e:
        if e.name != f"{__package__}.adapters":
            _fail(f"cannot import the adapters ({native.describe(e)})")
        adapters = None
    except Exception as e:
        _fail(f"cannot import the adapters ({native.describe(e)})")
    if adapters is not None:
        try:
            built = adapters.build(cfg)
        except Exception as e:
            _fail(f"cannot set up the adapters ({native.describe(e)})")
        for t in built:  # an adapter replaces the native tool of its name
            offered[t.name] = t
    served = []
    for name in dict.fromkeys(cfg.allow):
        if name in offered:
            served.append(offered[name])
        else:
            logging.getLogger("hermes_tools").warning("allowed tool %s is not offered", name)
    if not served:
        logging.getLogger("hermes_tools").warning("no tool allowed: serving none (default deny)")
    server = None

    def stuck(slots, names):
        """Every slot hung: this process can serve nothing more. Exit non-zero so the
        gateway restarts it (it restarts a stdio upstream that ends)."""
        sys.stderr.write(f"hermes-tools: every call slot ({slots}) has been stuck past its "
                         f"timeout for {cfg.stuck_exit_s:g} s ({', '.join(names)}); exiting "
                         "so the gateway restarts this process\n")
        _exit(server, mcp_out, 3)
    server = Server(served, mcp_out, native.make_caller(mt, cfg.task_id, cfg.user_task),
                    task_id=cfg.task_id, timeout_for=cfg.timeout_for,
                    max_line_bytes=cfg.max_line_bytes, max_concurrent=cfg.max_concurrent,
                    max_result_bytes=cfg.max_result_bytes, stuck_exit_s=cfg.stuck_exit_s,
                    on_stuck=stuck)
    server.serve(mcp_in)
    server.drain()
    _exit(server, mcp_out, 0)


def _exit(server, mcp_out, code: int) -> "None":
    """Flush what was answered, then exit at once: hung tool threads and Hermes' own
    executors must not hold the process."""
    with server.write_lock:
        try:
            mcp_out.flush()
        except (OSError, ValueError):
            pass
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
