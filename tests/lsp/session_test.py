#!/usr/bin/env python3
"""Drives `linnetc lsp` through an editor's session on the Llama card:
initialize, open attention.linnet, hover on six places, go to
definition (across modules, into the standard library, from a `use`),
document symbols, edits that introduce a shape error (and one in another
file) and fix them, half-typed text, save, shutdown and exit; checks each
reply and prints the latency of every request.

  python3 tests/lsp/session_test.py build/bin/linnetc [--stdlib DIR]
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import Client, uri  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CARD = os.path.join(ROOT, "nest", "llama-3.1-8b-instruct", "src")
ATTENTION = os.path.join(CARD, "attention.linnet")
LIB = os.path.join(CARD, "lib.linnet")

failures = []


def check(cond, what, detail=""):
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what + ("\n     " + str(detail)[:2000] if detail else ""))
        failures.append(what)


def position(text, needle, nth=0, delta=0):
    """The LSP position of the nth occurrence of needle, plus delta characters (ASCII text)."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += delta
    line = text.count("\n", 0, at)
    return {"line": line, "character": at - (text.rfind("\n", 0, at) + 1)}


def main():
    linnetc = sys.argv[1]
    client = Client(linnetc, *sys.argv[2:])
    reply = client.request("initialize", {"processId": os.getpid(), "rootUri": uri(ROOT), "capabilities": {}})
    caps = reply["result"]["capabilities"]
    check(caps["hoverProvider"] and caps["definitionProvider"] and caps["documentSymbolProvider"]
          and caps["textDocumentSync"]["change"] == 2, "initialize: hover, definition, symbols, incremental sync",
          caps)
    client.notify("initialized", {})

    text = open(ATTENTION).read()
    lib_text = open(LIB).read()
    doc, lib = uri(ATTENTION), uri(LIB)
    start = time.perf_counter()
    client.notify("textDocument/didOpen",
                  {"textDocument": {"uri": doc, "languageId": "linnet", "version": 1, "text": text}})
    diags = client.diagnostics_for(doc)
    open_seconds = time.perf_counter() - start
    check(diags == [], "didOpen: the card checks, no diagnostics", diags)

    def hover(u, pos):
        r = client.request("textDocument/hover", {"textDocument": {"uri": u}, "position": pos})
        return (r.get("result") or {}).get("contents", {}).get("value", ""), r

    # 1. A let binding: its type symbolically and at the card's generics.
    value, r = hover(doc, position(text, "let mixed = grouped_attention(", delta=5))
    check("mixed: Tensor[B, Heads / Shards, S, H / Heads; T]" in value and "`Tensor[1, 32, 8, 128; bf16]`" in value,
          "hover `mixed`: symbolic and concrete type", value)
    # 2. A call: what it calls and what it returns.
    value, r = hover(doc, position(text, "merge_heads<B, S, Heads / Shards, H / Heads, T>(mixed)", delta=3))
    check("fn `merge_heads` of module `llama.attention`" in value and
          "Tensor[B, S, Heads / Shards * (H / Heads); T]" in value and "`Tensor[1, 8, 4096; bf16]`" in value,
          "hover `merge_heads(...)`: the callee and the call's type", value)
    # 3. A reshape: the obligation it raises.
    value, r = hover(doc, position(text, "reshape(cos_at, [1, H / Heads])", delta=2))
    check("reshape from `Tensor[H / Heads; T]` to `[1, H / Heads]` must keep the element count" in value,
          "hover `reshape(...)`: its element-count obligation", value)
    # 4. A call whose callee's where clause needs a fact of this block's.
    value, r = hover(doc, position(text, "split_heads<B, S, Heads / Shards, H / Heads, T>(q_proj", delta=2))
    check("required by the where clause of `rope` (`D % 2 == 0`)" in value and "proven, because:" in value and
          "`(H / Heads) % 2 == 0` (where clause of block `GroupedQueryAttention`" in value,
          "hover `split_heads(...)` inside `rope(...)`: the proof and its fact", value)
    # 5. In a file that is not open: the package's other module.
    value, r = hover(lib, position(lib_text, "let attended = x + attention.forward", delta=6))
    check("attended: Tensor[B, S, H; T]" in value and "`Tensor[1, 8, 4096; bf16]`" in value,
          "hover `attended` in lib.linnet (not open)", value)

    # 6. A generic in a type: its declaration and its number at the card's generics.
    value, r = hover(doc, position(text, "pub fn forward<B: Dim, S: Dim>(x: Tensor[B, S, H; T])", delta=47))
    check("**generic `H: Dim`**" in value and "`4096`" in value, "hover `H` in a type: the generic and its value",
          value)

    def definition(u, pos):
        return client.request("textDocument/definition", {"textDocument": {"uri": u}, "position": pos}).get("result")

    loc = definition(doc, position(text, "let mixed = grouped_attention(", delta=14))
    check(loc and loc["uri"].endswith("/stdlib/std/nn/attention.linnet"), "definition: into the standard library",
          loc)
    loc = definition(lib, position(lib_text, "sub attention: GroupedQueryAttention<", delta=17))
    check(loc and loc["uri"] == doc and loc["range"]["start"] == position(text, "GroupedQueryAttention<\n"),
          "definition: across modules (a sub's block)", loc)
    loc = definition(doc, position(text, "use std.nn.linear::{Linear}", delta=21))
    check(loc and loc["uri"].endswith("/stdlib/std/nn/linear.linnet"), "definition: a name a `use` brings in", loc)
    loc = definition(doc, position(text, "pub fn forward<B: Dim, S: Dim>(x: Tensor[B, S, H; T])", delta=47))
    check(loc and loc["uri"] == doc and loc["range"]["start"] == position(text, "H: Dim,\n"),
          "definition: a generic, at its declaration", loc)
    loc = definition(doc, position(text, "cache_k = write_at(cache_k, k, pos)", delta=20))
    check(loc and loc["uri"] == doc and loc["range"]["start"] == position(text, "cache_k: Tensor[Batch"),
          "definition: a state member", loc)

    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": doc}})["result"]
    gqa = [s for s in symbols if s["name"] == "GroupedQueryAttention"]
    children = {c["name"] for c in gqa[0]["children"]} if gqa else set()
    check(gqa and {"q_proj", "cache_k", "forward", "decode", "prefill"} <= children and
          any(s["name"] == "split_heads" for s in symbols), "documentSymbol: blocks, members, fns", symbols)

    version = [1]

    def edit(u, pos_from, pos_to, new_text):
        version[0] += 1
        client.forget_notifications()
        start = time.perf_counter()
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": u, "version": version[0]},
            "contentChanges": [{"range": {"start": pos_from, "end": pos_to}, "text": new_text}]})
        got = client.diagnostics_for(u)
        client.latencies.append(("didChange -> diagnostics", time.perf_counter() - start))
        return got

    # A shape error: the reshape's element count no longer matches.
    p = position(text, "reshape(cos_at, [1, H / Heads])", delta=17)
    after = {"line": p["line"], "character": p["character"] + 1}
    diags = edit(doc, p, after, "2")
    check(len(diags) >= 1 and "reshape" in diags[0]["message"] and diags[0]["range"]["start"]["line"] == p["line"],
          "didChange: a reshape to `[2, H / Heads]` is a shape error at its line", diags)
    diags = edit(doc, p, after, "1")
    check(diags == [], "didChange: putting `1` back clears it", diags)

    # An edit here that breaks another file: `forward` made private.
    p = position(text, "    pub fn forward<B: Dim, S: Dim>(x: Tensor[B, S, H; T])", delta=4)
    after = {"line": p["line"], "character": p["character"] + 4}
    version[0] += 1
    client.forget_notifications()
    client.notify("textDocument/didChange", {"textDocument": {"uri": doc, "version": version[0]},
                                             "contentChanges": [{"range": {"start": p, "end": after}, "text": ""}]})
    lib_diags = client.diagnostics_for(lib)
    check(any("private" in d["message"] for d in lib_diags), "didChange: the error lands in lib.linnet", lib_diags)
    diags = edit(doc, p, p, "pub ")
    lib_diags = client.diagnostics_for(lib)  # published with doc's, by the same check
    check(diags == [] and lib_diags == [], "didChange: `pub` back clears both files", (diags, lib_diags))

    # Half-typed text: a syntax error, and the server still answers.
    p = position(text, "        let v = split_heads<B, S, KvHeads")
    diags = edit(doc, p, p, "        let broken = reshape(q, [B,\n")
    value, r = hover(doc, position(text, "let mixed = grouped_attention(", delta=5))
    check(len(diags) >= 1 and "result" in r, "half-typed text: a diagnostic, and hover still answers", diags)
    diags = edit(doc, p, {"line": p["line"] + 1, "character": 0}, "")
    check(diags == [], "removing it clears it", diags)

    client.forget_notifications()
    client.notify("textDocument/didSave", {"textDocument": {"uri": doc}})
    check(client.diagnostics_for(doc) == [], "didSave: checked again, clean")

    check(client.request("shutdown", None).get("result", "missing") is None, "shutdown")
    client.notify("exit", None)
    code, _, err = client.close()
    check(code == 0, "exit after shutdown: exit code 0", code)
    check("internal error" not in err, "no internal error logged", err)

    print(f"\ndidOpen -> diagnostics: {open_seconds * 1e3:.1f} ms (loads and checks the card)")
    by_method = {}
    for method, seconds in client.latencies:
        by_method.setdefault(method, []).append(seconds * 1e3)
    for method, ms in by_method.items():
        print(f"{method}: {len(ms)} x, median {statistics.median(ms):.2f} ms, max {max(ms):.2f} ms")
    if failures:
        print(f"\n{len(failures)} failed")
        return 1
    print("\nall passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
