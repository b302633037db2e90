"""Start a real relay daemon for the SDK tests: built from this repository, temp RELAY_HOME, free port."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

_BIN = None
_BUILD_DIR = None


def repo_root() -> str:
    d = os.path.dirname(os.path.abspath(__file__))
    while d != os.path.dirname(d):
        if os.path.exists(os.path.join(d, "go.mod")):
            return d
        d = os.path.dirname(d)
    raise RuntimeError("go.mod not found above sdk/python/tests; run the tests inside the relay repository")


def relay_binary() -> str:
    """$RELAY_BIN, else `go build` of ./cmd/relay into a temp dir (once per process)."""
    global _BIN, _BUILD_DIR
    if os.environ.get("RELAY_BIN"):
        return os.environ["RELAY_BIN"]
    if _BIN:
        return _BIN
    _BUILD_DIR = tempfile.mkdtemp(prefix="relay-sdk-bin-")
    out = os.path.join(_BUILD_DIR, "relay")
    subprocess.run(["go", "build", "-o", out, "./cmd/relay"], cwd=repo_root(), check=True)
    _BIN = out
    return out


def cleanup_binary() -> None:
    if _BUILD_DIR:
        shutil.rmtree(_BUILD_DIR, ignore_errors=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    """One `relay up --foreground` process; restartable on the same home and port."""

    def __init__(self, token: str = "test-token-123"):
        self.home = tempfile.mkdtemp(prefix="relay-sdk-home-")
        self.port = free_port()
        self.token = token
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.log = None
        with open(os.path.join(self.home, "config.json"), "w", encoding="utf-8") as f:
            json.dump({"token": token, "port": self.port}, f)

    def env(self) -> dict:
        env = dict(os.environ)
        env["RELAY_HOME"] = self.home
        for k in ("RELAY_URL", "RELAY_TOKEN"):
            env.pop(k, None)
        return env

    def start(self, timeout: float = 20.0) -> "Daemon":
        self.log = open(os.path.join(self.home, "test-daemon.out"), "ab")
        self.proc = subprocess.Popen(
            [relay_binary(), "up", "--foreground", "--port", str(self.port)],
            env=self.env(), stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"relay up exited with {self.proc.returncode}: {self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"relay daemon not healthy within {timeout}s: {self.output()}")

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.log:
            self.log.close()
            self.log = None

    def output(self) -> str:
        try:
            with open(os.path.join(self.home, "test-daemon.out"), encoding="utf-8", errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)
