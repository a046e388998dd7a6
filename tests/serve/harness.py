"""The harness of the `linnet serve` tests: the server as a subprocess, raw
HTTP for what the official client cannot send, a Prometheus text parser, and
a small test runner. No packages beyond the standard library and `openai`."""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field

import openai

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


class Server:
    """`linnet serve PACKAGE ... --port 0` on 127.0.0.1: started by start(),
    stopped by stop() with SIGTERM (which checks the exit status and that
    stderr has no sanitizer report)."""

    def __init__(self, linnet: str, package: str, args: list[str], name: str = "server"):
        self.cmd = [linnet, "serve", package, "--host", "127.0.0.1", "--port", "0", *args]
        self.name = name
        self.proc: subprocess.Popen | None = None
        self.host = self.port = None
        self.stdout_lines: list[str] = []
        self.health_statuses: list[int] = []  # what /health answered while waiting for ready
        self._listening = threading.Event()
        self._stderr = tempfile.TemporaryFile(mode="w+b")

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 300) -> "Server":
        log(f"[{self.name}] {' '.join(self.cmd)}")
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        deadline = time.monotonic() + 60
        while not self._listening.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"[{self.name}] no `listening on` line (exit {self.proc.poll()}); "
                                     f"stdout {self.stdout_lines!r}; stderr tail:\n{self.stderr_text()[-3000:]}")
        self.wait_healthy(timeout)
        return self

    def _read_stdout(self):
        pattern = re.compile(r"listening on http://(\[[^\]]+\]|[^\s:/]+):(\d+)")
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stdout_lines.append(line)
            m = pattern.search(line)
            if m and not self._listening.is_set():
                self.host, self.port = m.group(1).strip("[]"), int(m.group(2))
                self._listening.set()

    def wait_healthy(self, timeout: float):
        """Polls /health until 200; each answer before that must be a 503."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"[{self.name}] exited {self.proc.returncode} while loading; stderr tail:\n"
                                     f"{self.stderr_text()[-3000:]}")
            try:
                r = self.http("GET", "/health", timeout=5)
                self.health_statuses.append(r.status)
                if r.status == 200:
                    assert r.json() == {"status": "ok"}, f"/health body {r.body!r}"
                    break
                assert r.status == 503, f"/health while loading answered {r.status} {r.body!r}"
            except (ConnectionError, socket.timeout, http.client.HTTPException) as e:
                self.health_statuses.append(-1)
                log(f"[{self.name}] /health: {e!r}")
            if time.monotonic() > deadline:
                raise AssertionError(f"[{self.name}] not ready after {timeout} s; stdout {self.stdout_lines!r}")
            time.sleep(0.1)
        log(f"[{self.name}] ready in {time.monotonic() - self.started_at:.1f} s "
            f"(/health answered 503 {self.health_statuses.count(503)} times first)")

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM; the server must exit 0 with no sanitizer report."""
        if self.proc is None:
            return
        if self.proc.poll() is not None:
            rc, self.proc = self.proc.returncode, None
            raise AssertionError(f"[{self.name}] exited {rc} before SIGTERM; stderr tail:\n{self.stderr_text()[-3000:]}")
        self.proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"[{self.name}] still running {timeout} s after SIGTERM")
        finally:
            self.proc = None
        log(f"[{self.name}] exited {rc} {time.monotonic() - t0:.1f} s after SIGTERM")
        err = self.stderr_text()
        marks = [m for m in SANITIZER_MARKS if m in err]
        assert not marks, f"[{self.name}] sanitizer report in stderr:\n{err[-6000:]}"
        assert rc == 0, f"[{self.name}] exited {rc} after SIGTERM; stderr tail:\n{err[-3000:]}"

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def stderr_text(self) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def client(self, api_key: str = "none", timeout: float = 300) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.base_url + "/v1", api_key=api_key, max_retries=0, timeout=timeout)

    def async_client(self, api_key: str = "none", timeout: float = 300) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=self.base_url + "/v1", api_key=api_key, max_retries=0, timeout=timeout)

    def http(self, method: str, path: str, body=None, headers: dict | None = None, timeout: float = 120) -> "Reply":
        return http_request(self.host, self.port, method, path, body, headers, timeout)

    def metrics(self, headers: dict | None = None) -> "Metrics":
        r = self.http("GET", "/metrics", headers=headers)
        assert r.status == 200, f"GET /metrics: {r.status} {r.body[:500]!r}"
        ctype = r.headers.get("content-type", "")
        assert ctype.startswith("text/plain"), f"/metrics Content-Type {ctype!r}"
        return parse_prometheus(r.body.decode("utf-8"))

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.stop()
        else:
            try:
                self.stop()
            except AssertionError as e:  # the first failure is the one to see; this one is logged
                log(f"[{self.name}] while stopping after a failure: {e}")
            finally:
                self.kill()


@dataclass
class Reply:
    status: int
    headers: dict  # lower-case names
    body: bytes

    def json(self):
        return json.loads(self.body)

    def error(self) -> dict:
        """The OpenAI error object; asserts its shape."""
        try:
            doc = self.json()
        except ValueError:
            raise AssertionError(f"error body is not JSON: {self.status} {self.body[:300]!r}")
        assert isinstance(doc, dict) and isinstance(doc.get("error"), dict), f"error body {doc!r}"
        e = doc["error"]
        assert isinstance(e.get("message"), str) and e["message"], f"error.message missing: {doc!r}"
        assert isinstance(e.get("type"), str) and e["type"], f"error.type missing: {doc!r}"
        return e


def http_request(host, port, method, path, body=None, headers=None, timeout=120) -> Reply:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        if body is not None:
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


def raw_exchange(host, port, chunks, read_timeout=30.0, pause=0.0) -> bytes:
    """Sends `chunks` (bytes) on one connection, stopping early should the
    server answer or close, then reads until the server closes or
    read_timeout. Returns what came back (possibly nothing)."""
    import select

    s = socket.create_connection((host, port), timeout=read_timeout)
    got = b""
    try:
        for chunk in chunks:
            readable, _, _ = select.select([s], [], [], 0)
            if readable:
                break
            try:
                s.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
            if pause:
                time.sleep(pause)
        deadline = time.monotonic() + read_timeout
        while time.monotonic() < deadline:
            try:
                part = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not part:
                break
            got += part
            if _complete_response(got):
                break
    finally:
        s.close()
    return got


def _complete_response(data: bytes) -> bool:
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return bool(m) and len(rest) >= int(m.group(1))


def parse_raw_reply(data: bytes) -> Reply:
    head, sep, rest = data.partition(b"\r\n\r\n")
    assert sep, f"no HTTP response head in {data[:300]!r}"
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
    assert m, f"status line {lines[0]!r}"
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        rest = rest[: int(headers["content-length"])]
    return Reply(int(m.group(1)), headers, rest)


# ---- Prometheus text format 0.0.4 ----------------------------------------

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})(\{{(.*)\}})?\s+(\S+)(\s+-?\d+)?$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


@dataclass
class Metrics:
    types: dict = field(default_factory=dict)  # family -> counter|gauge|histogram|summary|untyped
    helps: dict = field(default_factory=dict)
    samples: list = field(default_factory=list)  # (name, {labels}, value)

    def value(self, name: str, **labels) -> float:
        """The sum of `name`'s samples whose labels include `labels` (0 when none)."""
        return sum(v for n, l, v in self.samples if n == name and all(l.get(k) == x for k, x in labels.items()))

    def has(self, name: str) -> bool:
        return any(n == name for n, _, _ in self.samples)


def parse_prometheus(text: str) -> Metrics:
    m = Metrics()
    assert text.endswith("\n"), "the exposition does not end with a newline"
    for i, line in enumerate(text.split("\n")[:-1], 1):
        where = f"/metrics line {i}: {line!r}"
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                assert re.fullmatch(_NAME, parts[2]), where
                if parts[1] == "TYPE":
                    assert len(parts) == 4 and parts[3] in ("counter", "gauge", "histogram", "summary", "untyped"), where
                    assert parts[2] not in m.types, f"{where}: a second TYPE"
                    m.types[parts[2]] = parts[3]
                else:
                    m.helps[parts[2]] = parts[3] if len(parts) == 4 else ""
            continue
        s = _SAMPLE.match(line)
        assert s, where
        labels = {}
        if s.group(3):
            body = s.group(3)
            pos = 0
            while pos < len(body):
                lm = _LABEL.match(body, pos)
                assert lm and lm.end() > pos, f"{where}: labels"
                labels[lm.group(1)] = lm.group(2)
                pos = lm.end()
        try:
            value = float(s.group(4))  # accepts +Inf, -Inf, NaN
        except ValueError:
            raise AssertionError(f"{where}: value is not a float")
        m.samples.append((s.group(1), labels, value))
    return m


def check_histogram(m: Metrics, name: str):
    buckets = [(l, v) for n, l, v in m.samples if n == name + "_bucket"]
    assert buckets, f"{name}: no _bucket samples"
    assert all("le" in l for l, _ in buckets), f"{name}: a bucket without le"
    inf = [v for l, v in buckets if l["le"] == "+Inf"]
    assert inf, f"{name}: no le=\"+Inf\" bucket"
    values = [v for l, v in sorted(buckets, key=lambda b: float(b[0]["le"]))]
    assert values == sorted(values), f"{name}: buckets not cumulative {values}"
    assert m.has(name + "_sum") and m.has(name + "_count"), f"{name}: _sum or _count missing"
    assert m.value(name + "_count") == inf[0], f"{name}: _count != +Inf bucket"


# ---- the runner ------------------------------------------------------------

def log(msg: str):
    print(msg, file=sys.stderr, flush=True)


class Runner:
    """Runs named cases, each a callable; a failure is logged with its
    traceback and the run goes on. summary() prints `N passed, N failed`."""

    def __init__(self, only: list[str] | None = None):
        self.only = only or []
        self.passed: list[str] = []
        self.failed: list[str] = []
        self.skipped: list[str] = []
        self.t0 = time.monotonic()

    def wanted(self, name: str) -> bool:
        return not self.only or any(o in name for o in self.only)

    def case(self, name: str, fn, *args, always: bool = False, **kwargs):
        if not always and not self.wanted(name):
            self.skipped.append(name)
            return None
        t = time.monotonic()
        try:
            result = fn(*args, **kwargs)
        except Exception:
            self.failed.append(name)
            print(f"FAIL {name} ({time.monotonic() - t:.1f} s)\n{traceback.format_exc()}", flush=True)
            return None
        self.passed.append(name)
        note = f": {result}" if isinstance(result, str) else ""
        print(f"ok   {name} ({time.monotonic() - t:.1f} s){note}", flush=True)
        return result if result is not None else True

    def summary(self) -> int:
        print(f"serve tests: {time.monotonic() - self.t0:.0f} s", flush=True)
        if self.failed:
            print("failed: " + ", ".join(self.failed), flush=True)
        line = f"{len(self.passed)} passed, {len(self.failed)} failed"
        if self.skipped:
            line += f", {len(self.skipped)} skipped"
        print(line, flush=True)
        return 1 if self.failed or not self.passed else 0


def approx(a: float, b: float, tol: float = 1e-3) -> bool:
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
