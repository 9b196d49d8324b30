"""Helpers for the unit tests: the server as a child process (as the gateway runs it, with
the fake Hermes on PYTHONPATH), and a client that speaks newline-delimited JSON-RPC to it.
"""

import json
import os
import queue
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)  # contrib/hermes-tools
FAKE_HERMES = os.path.normpath(os.path.join(PKG_ROOT, "..", "..", "tests", "fakes", "hermes"))
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "unit", "version": "0"}}


def env_with(pythonpath):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


class Child:
    """python3 -P -m hermes_tools ARGS (-P, as the gateway runs it: the working directory is
    not on sys.path), its stdout read line by line on a thread."""

    def __init__(self, args, pythonpath=None, cwd=None):
        path = pythonpath if pythonpath is not None else [PKG_ROOT, FAKE_HERMES]
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "hermes_tools", *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with(path),
            cwd=cwd or PKG_ROOT)
        self.lines = queue.Queue()
        self.err = []
        self.pumps = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put, True),
                             daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stderr, self.err.append, False),
                             daemon=True)]
        for t in self.pumps:
            t.start()
        self.next_id = 0

    @staticmethod
    def _pump(stream, put, mark_end):
        for line in iter(stream.readline, b""):
            put(line)
        if mark_end:
            put(None)

    def write(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg) -> None:
        self.write(json.dumps(msg).encode() + b"\n")

    def recv(self, timeout=10.0):
        """The next line, parsed; it must be JSON (anything else on stdout is a failure)."""
        line = self.lines.get(timeout=timeout)
        if line is None:
            raise EOFError("the server closed its stdout")
        return json.loads(line)

    def request(self, method, params=None, timeout=10.0):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        reply = self.recv(timeout)
        assert reply.get("id") == self.next_id, reply
        return reply

    def initialize(self):
        reply = self.request("initialize", INIT)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call(self, name, arguments=None, timeout=10.0):
        return self.request("tools/call", {"name": name, "arguments": arguments or {}}, timeout)

    def close(self, timeout=10.0):
        """Close stdin and wait for the exit code."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for t in self.pumps:  # both pipes reach EOF once the process is gone
                t.join(5)
            self.proc.stdout.close()
            self.proc.stderr.close()

    def wait_stderr(self, text, within=5.0):
        """stderr so far, once it holds text (or within seconds have passed)."""
        end = time.monotonic() + within
        while time.monotonic() < end and text not in self.stderr_text():
            time.sleep(0.05)
        return self.stderr_text()

    def stderr_text(self):
        return b"".join(self.err).decode("utf-8", "replace")
