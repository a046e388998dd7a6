"""Malformed and hostile requests over raw HTTP: each is answered with the
documented status and an OpenAI error body (error.message, error.type), and
the server keeps serving."""

from __future__ import annotations

import json
import re
import socket
import threading
import time

from harness import parse_raw_reply, raw_exchange

CHAT_PATH = "/v1/chat/completions"


def chat_body(ctx, **fields):
    body = {"model": ctx.model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
    body.update(fields)
    return body


def expect_error(reply, status, param=None, code=None, what=""):
    assert reply.status == status, f"{what}: status {reply.status}, want {status}; body {reply.body[:400]!r}"
    e = reply.error()
    if param is not None:
        assert e.get("param") == param, f"{what}: error.param {e.get('param')!r}, want {param!r}; {e}"
    if code is not None:
        assert e.get("code") == code, f"{what}: error.code {e.get('code')!r}, want {code!r}; {e}"
    return e


def still_serving(ctx):
    """A normal request works."""
    r = ctx.server.http("POST", CHAT_PATH, chat_body(ctx, temperature=0))
    assert r.status == 200, f"a normal request after the malformed ones: {r.status} {r.body[:300]!r}"
    assert r.json()["choices"][0]["message"]["role"] == "assistant", r.body[:300]
    assert ctx.server.alive(), "the server exited"


def invalid_json(ctx):
    for body in (b'{"model": ', b"not json", b'{"model": "x",}', b""):
        expect_error(ctx.server.http("POST", CHAT_PATH, body), 400, what=f"body {body!r}")
    expect_error(ctx.server.http("POST", CHAT_PATH, b"[1, 2]"), 400, what="a JSON array")
    expect_error(ctx.server.http("POST", "/v1/completions", b"{"), 400, what="completions {")


def wrong_types(ctx):
    cases = [("temperature", "hot"), ("max_tokens", "many"), ("max_tokens", 2.5), ("stream", "yes"),
             ("n", [2]), ("messages", "hi"), ("stop", 3), ("seed", "x"), ("top_p", "1")]
    for param, value in cases:
        r = ctx.server.http("POST", CHAT_PATH, chat_body(ctx, **{param: value}))
        expect_error(r, 400, param=param, what=f"{param}={value!r}")
    r = ctx.server.http("POST", CHAT_PATH, {"messages": [{"role": "user", "content": "Hi"}]})
    expect_error(r, 400, param="model", what="no model")
    r = ctx.server.http("POST", "/v1/completions", {"model": ctx.model, "prompt": {"text": "x"}})
    expect_error(r, 400, param="prompt", what="prompt an object")


def out_of_range(ctx):
    cases = [("temperature", -1), ("temperature", 2.5), ("top_p", 1.5), ("top_p", 0), ("n", 0), ("n", 17),
             ("max_tokens", 0), ("stop", ["a", "b", "c", "d", "e"]), ("presence_penalty", 3),
             ("top_logprobs", 21)]
    for param, value in cases:
        extra = {"logprobs": True} if param == "top_logprobs" else {}
        r = ctx.server.http("POST", CHAT_PATH, chat_body(ctx, **{param: value}, **extra))
        expect_error(r, 400, param=param, what=f"{param}={value!r}")
    r = ctx.server.http("POST", "/v1/completions", {"model": ctx.model, "prompt": "x", "logprobs": 6})
    expect_error(r, 400, param="logprobs", what="completions logprobs 6")


def unknown_model(ctx):
    r = ctx.server.http("POST", CHAT_PATH, chat_body(ctx, model="no-such-model"))
    expect_error(r, 404, what="unknown model")


def too_long(ctx):
    words = " ".join(["hello"] * (ctx.context + 16))
    r = ctx.server.http("POST", "/v1/completions", {"model": ctx.model, "prompt": words, "max_tokens": 2})
    expect_error(r, 400, code="context_length_exceeded", what="a prompt over the context")
    r = ctx.server.http("POST", CHAT_PATH, chat_body(ctx, messages=[{"role": "user", "content": words}]))
    expect_error(r, 400, code="context_length_exceeded", what="chat over the context")
    r = ctx.server.http("POST", "/v1/completions", {"model": ctx.model, "prompt": [1] * (ctx.context + 1)})
    expect_error(r, 400, code="context_length_exceeded", what="token ids over the context")


def huge_body(ctx):
    """A 9 MiB body: 413 (the server may answer before reading it all)."""
    size = 9 << 20
    head = (f"POST {CHAT_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\n\r\n").encode()
    filler = b'{"model": "' + b"x" * (size - 13) + b'"}'
    chunks = [head] + [filler[i:i + (256 << 10)] for i in range(0, size, 256 << 10)]
    got = raw_exchange(ctx.server.host, ctx.server.port, chunks)
    expect_error(parse_raw_reply(got), 413, what="a 9 MiB body")


def deep_nesting(ctx):
    r = ctx.server.http("POST", CHAT_PATH, b"[" * 100_000)
    expect_error(r, 400, what="100,000 [")
    body = b'{"model": "' + ctx.model.encode() + b'", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    expect_error(ctx.server.http("POST", CHAT_PATH, body), 400, what="100,000 nested arrays in a field")
    expect_error(ctx.server.http("POST", CHAT_PATH, b'{"a":' * 100_000), 400, what="100,000 nested objects")


def invalid_utf8(ctx):
    for bad in (b"\xff\xfe", b"ab\xc3", b"\xed\xa0\x80", b"\xc0\xaf"):
        body = b'{"model": "' + ctx.model.encode() + b'", "messages": [{"role": "user", "content": "' + bad + b'"}]}'
        expect_error(ctx.server.http("POST", CHAT_PATH, body), 400, what=f"bytes {bad!r}")


def wrong_method(ctx):
    expect_error(ctx.server.http("GET", CHAT_PATH), 405, what="GET chat")
    expect_error(ctx.server.http("DELETE", "/v1/completions"), 405, what="DELETE completions")
    expect_error(ctx.server.http("POST", "/v1/models", b"{}"), 405, what="POST models")


def unknown_route(ctx):
    expect_error(ctx.server.http("GET", "/v1/nope"), 404, what="GET /v1/nope")
    expect_error(ctx.server.http("POST", "/v1/embeddings", json.dumps({"model": ctx.model, "input": "x"})), 404,
                 what="POST /v1/embeddings")


def truncated_body(ctx):
    """Content-Length larger than what is sent, then the client goes away."""
    for n in (1000, 10):
        s = socket.create_connection((ctx.server.host, ctx.server.port), timeout=10)
        s.sendall((f"POST {CHAT_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {n * 100}\r\n\r\n").encode() + b'{"model": "x"'[:n])
        time.sleep(0.2)
        s.close()
    # A request line and no more.
    s = socket.create_connection((ctx.server.host, ctx.server.port), timeout=10)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")
    s.close()
    # Garbage instead of HTTP.
    got = raw_exchange(ctx.server.host, ctx.server.port, [b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" * 8,
                                                          b"\r\n\r\n"], read_timeout=10)
    if got.startswith(b"HTTP/"):
        assert parse_raw_reply(got).status in (400, 505), got[:200]
    still_serving(ctx)


def slow_client(ctx):
    """Half the headers, then 6 s of silence: others are served meanwhile."""
    s = socket.create_connection((ctx.server.host, ctx.server.port), timeout=30)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Ty")
    t0 = time.monotonic()
    served = []

    def others():
        while time.monotonic() - t0 < 5:
            r = ctx.server.http("GET", "/health", timeout=5)
            served.append(r.status)
            time.sleep(0.5)

    th = threading.Thread(target=others)
    th.start()
    try:
        still_serving(ctx)
    finally:
        th.join()
        time.sleep(max(0.0, 6 - (time.monotonic() - t0)))
        s.close()
    assert served and all(x == 200 for x in served), f"/health during a slow client: {served}"
    still_serving(ctx)


def health_latency(ctx, what):
    """Seconds /health takes; asserts it is 200 within 1 s."""
    t0 = time.monotonic()
    r = ctx.server.http("GET", "/health", timeout=30)
    took = time.monotonic() - t0
    assert r.status == 200, f"/health {what}: {r.status}"
    assert took < 1.0, f"/health {what} took {took:.2f} s (at most 1 s)"
    return took


def idle_connections(ctx):
    """200 connections that send nothing, and 200 idle after one request:
    neither holds a worker, so /health answers within 1 s."""
    idle = [socket.create_connection((ctx.server.host, ctx.server.port), timeout=30) for _ in range(200)]
    try:
        time.sleep(0.3)
        health_latency(ctx, "beside 200 silent connections")
        kept = []
        for _ in range(200):
            s = socket.create_connection((ctx.server.host, ctx.server.port), timeout=30)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            kept.append(s)
        for s in kept:
            got = b""
            while b"\r\n\r\n" not in got:
                part = s.recv(4096)
                assert part, "a keep-alive /health closed before its answer"
                got += part
            assert got.startswith(b"HTTP/1.1 200"), got[:100]
        idle += kept
        health_latency(ctx, "beside 200 idle keep-alive connections")
    finally:
        for s in idle:
            s.close()
    still_serving(ctx)


def slow_headers(ctx):
    """100 clients each sending a header byte every 0.2 s (slowloris):
    /health stays within 1 s, and each is closed (a 408) once its header
    deadline, 10 s after it connected, has passed."""
    slow = [socket.create_connection((ctx.server.host, ctx.server.port), timeout=30) for _ in range(100)]
    t0 = time.monotonic()
    stop = threading.Event()

    def trickle():
        header = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4000
        for i in range(len(header)):
            for s in slow:
                try:
                    s.sendall(header[i:i + 1])
                except OSError:
                    pass
            if stop.wait(0.2):
                return

    th = threading.Thread(target=trickle)
    th.start()
    try:
        for _ in range(4):
            time.sleep(0.5)
            health_latency(ctx, "beside 100 slow-header clients")
        for s in slow:
            s.settimeout(max(0.1, 15 - (time.monotonic() - t0)))
            got = s.recv(4096)
            assert got == b"" or got.startswith(b"HTTP/1.1 408"), f"a slow-header client got {got[:100]!r}"
        took = time.monotonic() - t0
        assert took > 9, f"slow-header clients closed after {took:.1f} s, before their 10 s"
    finally:
        stop.set()
        th.join()
        for s in slow:
            s.close()
    still_serving(ctx)


def pipelined(ctx):
    """Two requests sent in one write on one connection: both are answered,
    in order (HTTP/1.1 pipelining)."""
    body = json.dumps({"prompt": "Hi"}).encode()
    one = (b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    two = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    s = socket.create_connection((ctx.server.host, ctx.server.port), timeout=30)
    got = b""
    try:
        s.sendall(one + two)
        while True:
            part = s.recv(65536)
            if not part:
                break
            got += part
    finally:
        s.close()
    heads = re.findall(rb"HTTP/1\.1 (\d{3})", got)
    assert heads == [b"200", b"200"], f"two pipelined requests answered {heads}: {got[:600]!r}"
    assert b'"tokens"' in got.split(b"HTTP/1.1 200")[1], got[:600]


def error_shape(ctx):
    """Every error body is an OpenAI error (checked in each case); here: the
    JSON content type and the 405's Allow header, if any."""
    r = ctx.server.http("POST", CHAT_PATH, b"{")
    assert r.headers.get("content-type", "").startswith("application/json"), r.headers
    e = expect_error(r, 400)
    assert e["type"] == "invalid_request_error", e
    for k in ("param", "code"):
        assert k in e, f"error.{k} absent (null expected when empty): {e}"


def rejections_counted(ctx):
    """After the cases above: their 400s counted as invalid requests."""
    m = ctx.server.metrics()
    assert m.value("linnet:requests_rejected_total", reason="invalid") >= 10, \
        [x for x in m.samples if x[0] == "linnet:requests_rejected_total"]


ALL = [invalid_json, wrong_types, out_of_range, unknown_model, too_long, huge_body, deep_nesting, invalid_utf8,
       wrong_method, unknown_route, truncated_body, slow_client, idle_connections, slow_headers, pipelined,
       error_shape, still_serving, rejections_counted]
