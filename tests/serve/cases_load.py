"""Cases of the server under load and across requests: metrics, continuous
batching against requests sent alone, the prefix cache, cancellation,
back-pressure, the API key."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import openai

from cases_api import CHAT, check_usage, tokenize
from harness import check_histogram, http_request

# docs/serve.md's table.
METRICS = {
    "linnet:num_requests_running": "gauge",
    "linnet:num_requests_waiting": "gauge",
    "linnet:kv_cache_usage_perc": "gauge",
    "linnet:prefix_cache_queries_total": "counter",
    "linnet:prefix_cache_hits_total": "counter",
    "linnet:num_preemptions_total": "counter",
    "linnet:prompt_tokens_total": "counter",
    "linnet:generation_tokens_total": "counter",
    "linnet:requests_rejected_total": "counter",
    "linnet:requests_cancelled_total": "counter",
    "linnet:requests_finished_total": "counter",
    "linnet:compiled_shapes": "gauge",
    "linnet:engine_steps_total": "counter",
    "linnet:engine_step_seconds_total": "counter",
    "linnet:engine_padding_tokens_total": "counter",
    "linnet:time_to_first_token_seconds": "histogram",
    "linnet:inter_token_latency_seconds": "histogram",
    "linnet:e2e_request_latency_seconds": "histogram",
    "linnet:request_queue_time_seconds": "histogram",
}
LABELED = {"linnet:requests_rejected_total": "reason", "linnet:requests_finished_total": "finish_reason",
           "linnet:engine_steps_total": "entry", "linnet:engine_step_seconds_total": "entry"}


def settle(ctx, timeout=60.0):
    """Waits until no request runs or waits (an earlier case's may linger)
    and returns the metrics then."""
    deadline = time.monotonic() + timeout
    while True:
        m = ctx.server.metrics()
        if m.value("linnet:num_requests_running") == 0 and m.value("linnet:num_requests_waiting") == 0:
            return m
        assert time.monotonic() < deadline, f"requests still running {timeout} s after the previous case"
        time.sleep(0.1)


def eventually(ctx, pred, timeout=2.0):
    """The metrics once pred(metrics) holds, polled for up to `timeout`
    seconds (the server may update them just after answering); returns them
    and how long that took."""
    t0 = time.monotonic()
    while True:
        m = ctx.server.metrics()
        if pred(m) or time.monotonic() - t0 > timeout:
            return m, time.monotonic() - t0
        time.sleep(0.02)


def idle_pages(ctx):
    """No pages held once nothing runs."""
    m, _ = eventually(ctx, lambda m: m.value("linnet:kv_cache_usage_perc") == 0)
    assert m.value("linnet:kv_cache_usage_perc") == 0, \
        f"kv_cache_usage_perc {m.value('linnet:kv_cache_usage_perc')} with no request running"
    return m


def metrics(ctx):
    m = settle(ctx)
    for name, kind in METRICS.items():
        assert m.types.get(name) == kind, f"# TYPE {name}: {m.types.get(name)!r}, want {kind}"
        if kind == "histogram":
            check_histogram(m, name)
        elif name in LABELED:
            assert all(LABELED[name] in l for n, l, _ in m.samples if n == name), f"{name} without its label"
        else:
            assert m.has(name), f"no sample of {name}"
    assert m.value("linnet:compiled_shapes") >= 1, "no compiled shapes"
    assert 0 <= m.value("linnet:kv_cache_usage_perc") <= 1, m.value("linnet:kv_cache_usage_perc")
    assert m.value("linnet:num_requests_running") == 0, "requests running while idle"

    r = ctx.client.completions.create(model=ctx.model, prompt="Metrics count this", max_tokens=5, temperature=0,
                                      extra_body={"ignore_eos": True})
    check_usage(r.usage, completion_tokens=5)
    done = "linnet:requests_finished_total"
    after, lag = eventually(ctx, lambda a: a.value(done, finish_reason="length") > m.value(done, finish_reason="length")
                            and a.value("linnet:e2e_request_latency_seconds_count")
                            > m.value("linnet:e2e_request_latency_seconds_count"))
    grew = lambda name, **l: after.value(name, **l) - m.value(name, **l)  # noqa: E731
    assert grew("linnet:generation_tokens_total") == 5, f"generation tokens grew {grew('linnet:generation_tokens_total')}"
    assert grew("linnet:requests_finished_total", finish_reason="length") == 1, "finished{length} did not grow by 1"
    assert grew("linnet:e2e_request_latency_seconds_count") == 1, "e2e latency count did not grow by 1"
    assert grew("linnet:time_to_first_token_seconds_count") == 1, "ttft count did not grow by 1"
    assert grew("linnet:engine_steps_total") >= 1, "no engine step"
    assert grew("linnet:prefix_cache_queries_total") >= 1, "no prompt token looked up"
    assert 1 <= grew("linnet:prompt_tokens_total") <= r.usage.prompt_tokens, "prompt tokens computed"
    assert after.value("linnet:requests_rejected_total", reason="invalid") >= 0
    if lag > 0.001:
        return f"the finished counters lagged the answer by {lag * 1000:.0f} ms"


PROMPTS = ["Tell me about the moon.", "What is a prime number?", "Write a haiku about rain.",
           "How do bees make honey?", "Name three colors.", "Why is the sky blue?",
           "What is 12 times 7?", "Describe a cat in one sentence."]


async def _stream_chat(client, model, content, max_tokens, **kw):
    stream = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}],
                                                  max_tokens=max_tokens, temperature=0, stream=True, **kw)
    parts, finish = [], None
    async for chunk in stream:
        if chunk.choices:
            parts.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    return "".join(parts), finish


class Failure:
    """An exception a request raised, with when (seconds after it started)."""

    def __init__(self, e: BaseException, after: float):
        self.e, self.after = e, after

    def __repr__(self):
        cause = f" from {self.e.__cause__!r}" if self.e.__cause__ else ""
        return f"{self.e!r}{cause} after {self.after:.2f} s"


async def _timed(coro):
    t = time.monotonic()
    try:
        return await coro
    except Exception as e:  # noqa: BLE001 - the case reports it
        return Failure(e, time.monotonic() - t)


class Poller:
    """Polls /metrics (or /health) from a thread while a case runs."""

    def __init__(self, server, what="metrics", every=0.2):
        self.server, self.what, self.every = server, what, every
        self.seen, self._stop = [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                if self.what == "metrics":
                    m = self.server.metrics()
                    self.seen.append((m.value("linnet:num_requests_running"), m.value("linnet:num_requests_waiting")))
                else:
                    self.seen.append(http_request(self.server.host, self.server.port, "GET", "/health",
                                                  timeout=5).status)
            except Exception as e:  # noqa: BLE001 - recorded, judged by the case
                self.seen.append(repr(e))
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def concurrency(ctx, per_prompt=2, max_tokens=16):
    """16 streamed greedy chats over the rows: each as when sent alone."""

    async def run():
        client = ctx.server.async_client()
        alone = {}
        for p in PROMPTS:
            alone[p] = await _stream_chat(client, ctx.model, p, max_tokens)
        with Poller(ctx.server) as poll:
            jobs = [p for _ in range(per_prompt) for p in PROMPTS]
            results = await asyncio.gather(*(_timed(_stream_chat(client, ctx.model, p, max_tokens)) for p in jobs))
        await client.close()
        return alone, jobs, results, poll.seen

    alone, jobs, results, seen = asyncio.run(run())
    failed = [(i, r) for i, r in enumerate(results) if isinstance(r, Failure)]
    assert not failed, f"{len(failed)} of {len(jobs)} requests failed; first: {failed[0]}"
    bad = [(p, alone[p], got) for p, got in zip(jobs, results) if got != alone[p]]
    assert not bad, f"{len(bad)} of {len(jobs)} differ from the request alone; first: {bad[0]}"
    running = [s[0] for s in seen if isinstance(s, tuple)]
    assert running, f"no metrics while running: {seen[:5]}"
    assert max(running) <= ctx.rows, f"{max(running)} requests running over {ctx.rows} rows"
    assert max(running) >= 2, f"never more than {max(running)} running at once: no batching seen"


SYSTEM = ("You are the librarian of a small town library. The library opens at nine in the morning and closes "
          "at six in the evening, except on Sundays, when it is closed. Members may borrow up to five books at "
          "a time for three weeks, and may renew them twice unless another member has reserved them. ") * 4


def _prefix_question(ctx, client, question):
    return client.chat.completions.create(
        model=ctx.model, max_tokens=16, temperature=0,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}])


QUESTION_A, QUESTION_B = "When does the library open?", "How many books can I borrow?"


def prefix_cache(ctx):
    n = len(tokenize(ctx, messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION_B}]))
    assert n >= 200, f"the system prompt is only {n} tokens"
    before = settle(ctx)
    _prefix_question(ctx, ctx.client, QUESTION_A)
    mid = ctx.server.metrics()
    b = _prefix_question(ctx, ctx.client, QUESTION_B)
    after = ctx.server.metrics()
    hits = after.value("linnet:prefix_cache_hits_total") - mid.value("linnet:prefix_cache_hits_total")
    assert hits > 0, "no prefix cache hit for the shared system prompt"
    assert after.value("linnet:prefix_cache_queries_total") > before.value("linnet:prefix_cache_queries_total")
    details = b.usage.prompt_tokens_details
    assert details is not None and details.cached_tokens is not None, f"no cached_tokens in {b.usage}"
    assert 0 < details.cached_tokens < b.usage.prompt_tokens, b.usage
    assert details.cached_tokens == hits, f"cached_tokens {details.cached_tokens}, metrics hits {hits}"
    ctx.state["prefix_b"] = b.choices[0].message.content


def prefix_cache_miss(ctx, client):
    """On a fresh server: B (a miss) gives what it gave after A (a hit)."""
    if "prefix_b" not in ctx.state:
        raise AssertionError("prefix_cache did not run")
    b = _prefix_question(ctx, client, QUESTION_B)
    d = b.usage.prompt_tokens_details
    assert d is None or not d.cached_tokens, f"cached tokens on a fresh server: {b.usage}"
    text = b.choices[0].message.content
    assert text == ctx.state["prefix_b"], f"miss {text!r}, hit {ctx.state['prefix_b']!r}"


def cancellation(ctx):
    """A streamed request whose client goes away after two chunks stops."""
    prompt = "Count from one to a thousand: one, two, three,"
    budget = ctx.context - len(tokenize(ctx, prompt=prompt))
    before = settle(ctx)
    stream = ctx.client.completions.create(model=ctx.model, prompt=prompt, max_tokens=min(2000, budget),
                                           temperature=0, stream=True, extra_body={"ignore_eos": True})
    it = iter(stream)
    next(it), next(it)
    stream.close()
    t0 = time.monotonic()
    while True:
        m = ctx.server.metrics()
        if m.value("linnet:num_requests_running") == 0:
            break
        assert time.monotonic() - t0 < 2, "still running 2 s after the client went away"
        time.sleep(0.05)
    cancelled = m.value("linnet:requests_cancelled_total") - before.value("linnet:requests_cancelled_total")
    assert cancelled == 1, f"requests_cancelled_total grew by {cancelled}"
    produced = m.value("linnet:generation_tokens_total") - before.value("linnet:generation_tokens_total")
    assert produced < budget, f"{produced} tokens generated for a cancelled request of {budget}"
    idle_pages(ctx)
    return f"stopped after {produced:.0f} of {budget} tokens"


def backpressure(ctx, total=12, max_tokens=32):
    """--rows 4 --max-queue 2: some of 12 at once are 503s with Retry-After,
    the rest complete; /health answers 200 throughout."""

    async def one(client, i):
        try:
            stream = await client.completions.create(
                model=ctx.model, prompt=f"Request {i}: tell a story.", max_tokens=max_tokens, temperature=0,
                stream=True, stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
            usage = None
            async for chunk in stream:
                usage = chunk.usage or usage
            return ("done", usage)
        except openai.APIStatusError as e:
            return ("error", e)

    async def run():
        client = ctx.server.async_client()
        results = await asyncio.gather(*(one(client, i) for i in range(total)))
        await client.close()
        return results

    with Poller(ctx.server, what="health") as health:
        results = asyncio.run(run())
    done = [u for kind, u in results if kind == "done"]
    errors = [e for kind, e in results if kind == "error"]
    for e in errors:
        assert e.status_code == 503, f"status {e.status_code}: {e}"
        assert e.response.headers.get("retry-after") == "1", f"Retry-After {e.response.headers.get('retry-after')!r}"
        assert e.code == "server_overloaded", f"code {e.code!r}"
    assert errors, f"no request of {total} was refused over {ctx.rows} rows and a queue of 2"
    assert len(done) >= 4, f"only {len(done)} completed"
    for u in done:
        check_usage(u, completion_tokens=max_tokens)
    assert health.seen and all(s == 200 for s in health.seen), f"/health during the burst: {health.seen}"
    # More choices than rows and queue (4 + 2) can ever hold: a 400 naming n, not a 503 to retry.
    try:
        ctx.client.completions.create(model=ctx.model, prompt="Hi", max_tokens=1, n=7)
        raise AssertionError("n = 7 over 4 rows and a queue of 2 was accepted")
    except openai.BadRequestError as e:
        assert "holds at most 6 requests at once" in str(e) and e.body.get("param") == "n", e
    m = settle(ctx)
    assert m.value("linnet:requests_rejected_total", reason="overloaded") == len(errors), \
        f"rejected{{overloaded}} {m.value('linnet:requests_rejected_total', reason='overloaded')}, {len(errors)} seen"
    idle_pages(ctx)
    return f"{len(errors)} refused, {len(done)} completed"


def preemption(ctx, max_tokens=60):
    """A pool smaller than the rows' needs: the newest requests are
    preempted and recomputed, and each output is as when sent alone."""
    prompts = [f"Story {i}: once upon a time" for i in range(ctx.rows)]

    async def one(client, prompt):
        r = await client.completions.create(model=ctx.model, prompt=prompt, max_tokens=max_tokens, temperature=0,
                                            extra_body={"ignore_eos": True})
        return r.choices[0].text, r.usage.completion_tokens

    async def run():
        client = ctx.server.async_client()
        alone = [await one(client, p) for p in prompts]
        before = settle(ctx)
        together = await asyncio.gather(*(one(client, p) for p in prompts))
        await client.close()
        return alone, together, before

    alone, together, before = asyncio.run(run())
    m = settle(ctx)
    preempted = m.value("linnet:num_preemptions_total") - before.value("linnet:num_preemptions_total")
    assert preempted > 0, "no preemption: the pool was not short"
    bad = [(p, a, t) for p, a, t in zip(prompts, alone, together) if a != t]
    assert not bad, f"{len(bad)} of {len(prompts)} differ after preemption; first: {bad[0]}"
    assert all(n == max_tokens for _, n in together), together
    idle_pages(ctx)
    return f"{preempted:.0f} preemptions"


def api_key(ctx, key):
    """--api-key: every route but /health needs it."""
    wrong = ctx.server.client(api_key="wrong")
    for call in (lambda c: c.models.list(),
                 lambda c: c.chat.completions.create(model=ctx.model, messages=CHAT, max_tokens=2)):
        try:
            call(wrong)
        except openai.AuthenticationError as e:
            assert e.status_code == 401
        else:
            raise AssertionError("served with a wrong key")
    for method, path, body in (("GET", "/v1/models", None), ("POST", "/v1/chat/completions", {"model": ctx.model}),
                               ("GET", "/metrics", None), ("POST", "/tokenize", {"prompt": "x"})):
        r = ctx.server.http(method, path, body)
        assert r.status == 401, f"{method} {path} without a key: {r.status}"
        r.error()
    r = ctx.server.http("GET", "/health")
    assert r.status == 200, f"/health without a key: {r.status}"
    good = ctx.server.client(api_key=key)
    assert [m.id for m in good.models.list().data] == [ctx.model]
    r = good.chat.completions.create(model=ctx.model, messages=CHAT, max_tokens=4, temperature=0)
    assert r.choices[0].message.role == "assistant"
    m = ctx.server.metrics(headers={"Authorization": f"Bearer {key}"})
    assert m.value("linnet:requests_rejected_total", reason="unauthorized") >= 6, \
        [s for s in m.samples if s[0] == "linnet:requests_rejected_total"]


def shutdown_streams(ctx, total=8, grace=5.0):
    """SIGTERM during 8 streams (rows busy, the rest queued): each ends with a
    finish reason and [DONE] within `grace` seconds, and the server exits 0.
    The server's last case: it stops it."""
    results = [None] * total

    def one(i):
        body = {"model": ctx.model, "prompt": f"Request {i}: tell a long story.", "max_tokens": ctx.context - 64,
                "temperature": 0, "stream": True, "ignore_eos": True}
        r = ctx.server.http("POST", "/v1/completions", body, timeout=120)
        results[i] = (r, time.monotonic())

    threads = [threading.Thread(target=one, args=(i,)) for i in range(total)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # every row generating, the rest waiting
        m = ctx.server.metrics()
        if m.value("linnet:num_requests_running") >= ctx.rows and \
                m.value("linnet:generation_tokens_total") > 0:
            break
        time.sleep(0.1)
    signalled = time.monotonic()
    ctx.server.stop(timeout=30)
    for t in threads:
        t.join(30)
    for i, res in enumerate(results):
        assert res is not None, f"stream {i} did not end"
        r, ended = res
        assert r.status == 200, f"stream {i}: status {r.status} {r.body[:300]!r}"
        text = r.body.decode()
        assert text.endswith("data: [DONE]\n\n"), f"stream {i} does not end with [DONE]: {text[-300:]!r}"
        chunks = [json.loads(line[6:]) for line in text.splitlines()
                  if line.startswith("data: {")]
        reasons = [c["choices"][0]["finish_reason"] for c in chunks if c.get("choices")]
        assert reasons and reasons[-1] in ("abort", "length"), f"stream {i}: last finish_reason {reasons[-1:]}"
        assert ended - signalled <= grace, f"stream {i} ended {ended - signalled:.1f} s after SIGTERM"
    return f"{total} streams ended with a finish reason and [DONE] within {grace} s of SIGTERM"
