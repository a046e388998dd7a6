"""Cases of the OpenAI API through the official client: chat and completions,
streamed and not, usage, sampling, stops, logprobs, models."""

from __future__ import annotations

import subprocess

import openai

from harness import approx

CHAT = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
PROMPT = "The capital of France is"


def tokenize(ctx, **body) -> list[int]:
    r = ctx.server.http("POST", "/tokenize", body)
    assert r.status == 200, f"/tokenize {body}: {r.status} {r.body[:300]!r}"
    doc = r.json()
    assert isinstance(doc.get("tokens"), list) and all(isinstance(t, int) for t in doc["tokens"]), doc
    assert doc.get("count") == len(doc["tokens"]), doc
    return doc["tokens"]


def check_usage(usage, prompt_tokens: int | None = None, completion_tokens: int | None = None):
    assert usage is not None, "no usage"
    assert usage.prompt_tokens > 0 and usage.completion_tokens >= 0, usage
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens, usage
    if prompt_tokens is not None:
        assert usage.prompt_tokens == prompt_tokens, f"prompt_tokens {usage.prompt_tokens}, /tokenize {prompt_tokens}"
    if completion_tokens is not None:
        assert usage.completion_tokens == completion_tokens, \
            f"completion_tokens {usage.completion_tokens}, expected {completion_tokens}"


def chat_text(ctx, messages, **kw) -> str:
    r = ctx.client.chat.completions.create(model=ctx.model, messages=messages, **kw)
    return r.choices[0].message.content


def chat_plain(ctx):
    r = ctx.client.chat.completions.create(model=ctx.model, messages=CHAT, max_tokens=16, temperature=0)
    assert r.object == "chat.completion" and r.id and r.model == ctx.model, r
    assert len(r.choices) == 1 and r.choices[0].index == 0, r.choices
    c = r.choices[0]
    assert c.message.role == "assistant" and isinstance(c.message.content, str), c
    assert c.finish_reason in ("stop", "length"), c.finish_reason
    check_usage(r.usage, prompt_tokens=len(tokenize(ctx, messages=CHAT)))
    assert 1 <= r.usage.completion_tokens <= 16, r.usage
    if c.finish_reason == "length":
        assert r.usage.completion_tokens == 16, r.usage
    ctx.state["chat_greedy"] = c.message.content


def chat_stream(ctx):
    """Streamed with include_usage: the role chunk first, the text as the
    whole answer's, usage in the last chunk only (with choices [])."""
    stream = ctx.client.chat.completions.create(model=ctx.model, messages=CHAT, max_tokens=16, temperature=0,
                                                stream=True, stream_options={"include_usage": True})
    chunks = list(stream)  # the client consumes `[DONE]`
    assert len(chunks) >= 2, chunks
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None, last
    body = chunks[:-1]
    assert all(c.usage is None for c in body), [c.usage for c in body]
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks), chunks
    assert body[0].choices[0].delta.role == "assistant", body[0]
    finishes = [c.choices[0].finish_reason for c in body if c.choices and c.choices[0].finish_reason]
    assert len(finishes) == 1 and body[-1].choices[0].finish_reason == finishes[0], finishes
    text = "".join(c.choices[0].delta.content or "" for c in body)
    check_usage(last.usage, prompt_tokens=len(tokenize(ctx, messages=CHAT)))
    if "chat_greedy" in ctx.state:
        assert text == ctx.state["chat_greedy"], f"streamed {text!r}, whole {ctx.state['chat_greedy']!r}"
    # Without include_usage: no usage anywhere.
    chunks = list(ctx.client.chat.completions.create(model=ctx.model, messages=CHAT, max_tokens=4, temperature=0,
                                                     stream=True))
    assert chunks and all(c.usage is None for c in chunks), chunks
    assert all(c.choices for c in chunks), "a chunk with no choices without include_usage"


def completion_plain(ctx):
    r = ctx.client.completions.create(model=ctx.model, prompt=PROMPT, max_tokens=20, temperature=0,
                                      extra_body={"ignore_eos": True})
    assert r.object == "text_completion" and r.model == ctx.model and len(r.choices) == 1, r
    c = r.choices[0]
    assert c.finish_reason == "length", c
    check_usage(r.usage, prompt_tokens=len(tokenize(ctx, prompt=PROMPT)), completion_tokens=20)
    ctx.state["completion_greedy"] = c.text


def greedy_text(ctx) -> str:
    """completion_plain's text (running it if it has not run)."""
    if "completion_greedy" not in ctx.state:
        completion_plain(ctx)
    return ctx.state["completion_greedy"]


def completion_stream(ctx):
    stream = ctx.client.completions.create(model=ctx.model, prompt=PROMPT, max_tokens=20, temperature=0,
                                           stream=True, stream_options={"include_usage": True},
                                           extra_body={"ignore_eos": True})
    chunks = list(stream)
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None, last
    assert all(c.usage is None and len(c.choices) == 1 for c in chunks[:-1]), chunks[:-1]
    assert chunks[-2].choices[0].finish_reason == "length", chunks[-2]
    text = "".join(c.choices[0].text for c in chunks[:-1])
    check_usage(last.usage, prompt_tokens=len(tokenize(ctx, prompt=PROMPT)), completion_tokens=20)
    if "completion_greedy" in ctx.state:
        assert text == ctx.state["completion_greedy"], f"streamed {text!r}, whole {ctx.state['completion_greedy']!r}"


def greedy_matches_generate(ctx):
    """/v1/completions greedy = `linnet generate --prompt` (which never stops at EOS)."""
    served = greedy_text(ctx)
    cmd = [ctx.opts.linnet, "generate", ctx.opts.package, "--backend", ctx.opts.backend,
           "--prompt", PROMPT, "--max-new", "20", *ctx.load_args()]
    out = subprocess.run(cmd, capture_output=True, timeout=600)
    assert out.returncode == 0, f"{' '.join(cmd)}: exit {out.returncode}\n{out.stderr.decode()[-2000:]}"
    text = out.stdout.decode("utf-8", "replace")
    assert text.endswith("\n"), text
    assert served == text[:-1], f"serve {served!r}\ngenerate {text[:-1]!r}"
    return repr(served)


def token_id_prompt(ctx):
    ids = tokenize(ctx, prompt=PROMPT)
    r = ctx.client.completions.create(model=ctx.model, prompt=ids, max_tokens=20, temperature=0,
                                      extra_body={"ignore_eos": True})
    check_usage(r.usage, prompt_tokens=len(ids), completion_tokens=20)
    want = greedy_text(ctx)
    assert r.choices[0].text == want, f"ids {r.choices[0].text!r}, text {want!r}"
    # /detokenize gives the prompt back.
    d = ctx.server.http("POST", "/detokenize", {"tokens": ids})
    assert d.status == 200, d
    assert PROMPT in d.json()["prompt"], d.json()
    # An id outside the vocabulary is an error, not an empty text.
    d = ctx.server.http("POST", "/detokenize", {"tokens": [ids[0], 10 ** 9]})
    assert d.status == 400 and "outside the vocabulary" in d.json()["error"]["message"], d


def seeded(ctx):
    def run(seed):
        r = ctx.client.completions.create(model=ctx.model, prompt="Once upon a time", max_tokens=16,
                                          temperature=0.9, seed=seed, extra_body={"ignore_eos": True})
        return r.choices[0].text

    a, b = run(7), run(7)
    assert a == b, f"seed 7 twice: {a!r} != {b!r}"
    others = [run(s) for s in (8, 9, 10)]
    assert any(o != a for o in others), f"seeds 7..10 all gave {a!r}"


def stops(ctx):
    full = greedy_text(ctx)
    # A stop string from the middle of the greedy text, at its first occurrence.
    for start in range(len(full) // 2, len(full) - 3):
        s = full[start:start + 3]
        if s.strip() and full.find(s) == start:
            break
    else:
        raise AssertionError(f"no stop string to take from {full!r}")
    r = ctx.client.completions.create(model=ctx.model, prompt=PROMPT, max_tokens=20, temperature=0, stop=[s],
                                      extra_body={"ignore_eos": True})
    c = r.choices[0]
    assert c.finish_reason == "stop", (s, c)
    assert s not in c.text, (s, c.text)
    assert c.text == full[:start], f"stop {s!r}: {c.text!r}, want {full[:start]!r}"
    # Streamed: the same text.
    chunks = list(ctx.client.completions.create(model=ctx.model, prompt=PROMPT, max_tokens=20, temperature=0,
                                                stop=s, stream=True, extra_body={"ignore_eos": True}))
    streamed = "".join(ch.choices[0].text for ch in chunks)
    assert streamed == full[:start], f"stop {s!r} streamed: {streamed!r}, want {full[:start]!r}"
    assert chunks[-1].choices[0].finish_reason == "stop", chunks[-1]


def length(ctx):
    r = ctx.client.completions.create(model=ctx.model, prompt=PROMPT, max_tokens=5, temperature=0,
                                      extra_body={"ignore_eos": True})
    assert r.choices[0].finish_reason == "length", r.choices[0]
    check_usage(r.usage, prompt_tokens=len(tokenize(ctx, prompt=PROMPT)), completion_tokens=5)
    r = ctx.client.completions.create(model=ctx.model, prompt=PROMPT, max_tokens=3, temperature=0)
    assert r.usage.completion_tokens <= 3, r.usage
    if r.choices[0].finish_reason == "length":
        assert r.usage.completion_tokens == 3, r.usage


def max_completion_tokens(ctx):
    r = ctx.client.chat.completions.create(model=ctx.model, messages=CHAT, max_completion_tokens=5, temperature=0,
                                           extra_body={"ignore_eos": True})
    assert r.choices[0].finish_reason == "length", r.choices[0]
    check_usage(r.usage, completion_tokens=5)


def n_choices(ctx):
    r = ctx.client.chat.completions.create(model=ctx.model, messages=CHAT, max_tokens=8, temperature=0.8, n=2)
    assert len(r.choices) == 2 and sorted(c.index for c in r.choices) == [0, 1], r.choices
    assert all(isinstance(c.message.content, str) for c in r.choices), r.choices
    assert 2 <= r.usage.completion_tokens <= 16, r.usage
    r = ctx.client.completions.create(model=ctx.model, prompt=PROMPT, max_tokens=4, temperature=0.8, n=2,
                                      extra_body={"ignore_eos": True})
    assert sorted(c.index for c in r.choices) == [0, 1], r.choices
    check_usage(r.usage, completion_tokens=8)
    # Streamed: chunks of both indexes.
    chunks = list(ctx.client.completions.create(model=ctx.model, prompt=PROMPT, max_tokens=4, temperature=0.8,
                                                n=2, stream=True, extra_body={"ignore_eos": True}))
    assert {c.choices[0].index for c in chunks if c.choices} == {0, 1}, chunks


def logprobs(ctx):
    r = ctx.client.chat.completions.create(model=ctx.model, messages=CHAT, max_tokens=6, temperature=0,
                                           logprobs=True, top_logprobs=3)
    c = r.choices[0]
    assert c.logprobs is not None and c.logprobs.content is not None, c
    content = c.logprobs.content
    assert len(content) == r.usage.completion_tokens, (len(content), r.usage)
    for t in content:
        assert isinstance(t.token, str) and t.logprob <= 1e-6, t
        assert len(t.top_logprobs) == 3, t
        tops = [x.logprob for x in t.top_logprobs]
        assert tops == sorted(tops, reverse=True) and all(v <= 1e-6 for v in tops), t
        # Greedy: the sampled token is the best one.
        assert approx(t.logprob, tops[0]), t
    # Logprobs off: none.
    r = ctx.client.chat.completions.create(model=ctx.model, messages=CHAT, max_tokens=2, temperature=0)
    assert r.choices[0].logprobs is None, r.choices[0].logprobs
    # Completions take an integer.
    r = ctx.client.completions.create(model=ctx.model, prompt=PROMPT, max_tokens=3, temperature=0, logprobs=2,
                                      extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs
    assert lp is not None and len(lp.tokens) == 3 and len(lp.token_logprobs) == 3, lp
    assert lp.top_logprobs is None or all(len(d) <= 2 for d in lp.top_logprobs), lp


def models(ctx):
    listed = ctx.client.models.list()
    ids = [m.id for m in listed.data]
    assert ids == [ctx.expected_model], ids
    try:
        ctx.client.chat.completions.create(model="no-such-model", messages=CHAT, max_tokens=2)
    except openai.NotFoundError as e:
        assert e.status_code == 404
    else:
        raise AssertionError("an unknown model was served")
    try:
        ctx.client.completions.create(model="no-such-model", prompt=PROMPT, max_tokens=2)
    except openai.NotFoundError:
        pass
    else:
        raise AssertionError("an unknown model was served")


def unsupported_fields(ctx):
    """Fields the server does not take are 400s that name them."""
    try:
        ctx.client.chat.completions.create(
            model=ctx.model, messages=CHAT, max_tokens=2,
            tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])
    except openai.BadRequestError as e:
        assert "tools" in str(e), str(e)
    else:
        raise AssertionError("tools accepted")
    try:
        ctx.client.chat.completions.create(model=ctx.model, messages=CHAT, max_tokens=2,
                                           extra_body={"frobnicate": 1})
    except openai.BadRequestError as e:
        assert "frobnicate" in str(e), str(e)
    else:
        raise AssertionError("an unknown field accepted")


ALL = [chat_plain, chat_stream, completion_plain, completion_stream, greedy_matches_generate, token_id_prompt,
       seeded, stops, length, max_completion_tokens, n_choices, logprobs, models, unsupported_fields]
SANITIZER = [chat_plain, chat_stream, completion_plain, completion_stream, token_id_prompt, length, models]
