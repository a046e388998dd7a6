"""`linnet serve` driven by the official `openai` Python client.

By hand, from the repository root (a release build with the CPU backend):

    PY=$(bash scripts/test-venv.sh)
    M=$(bash scripts/fetch-smollm2.sh)
    $PY tests/serve/serve_test.py --linnet build/bin/linnet --weights $M --backend cpu --suite full

The sanitizer build (no compiled backend; a tiny random-weights model on the
reference backend, tokenized with the SmolLM2 GGUF):

    $PY tests/serve/serve_test.py --linnet build-asan/bin/linnet --suite sanitizer --backend reference \\
        --random-weights --tokenizer $M --set Layers=2 --set H=64 --set Heads=4 --set KvHeads=2 --set Inner=128

`-k TEXT` (repeatable) runs only the cases whose names contain TEXT (the main
server always starts, the others when wanted). The last line is `N passed, N failed`; the
exit status is 0 when every case ran passed.

Suite `full` starts four servers: the main one (`--rows 4 --context 1024
--max-queue 32 --queue-timeout 600`) for the API, metrics, batching, prefix cache, cancellation
and malformed cases; one with `--api-key` (and the prefix cache's miss); one
with `--rows 4 --max-queue 2` for back-pressure (the main server's shape,
so its compiled code is reused); one whose pool is short
(`--rows 4 --context 192 --set MaxSeq=448`) for preemption. Suite `sanitizer` starts one
(`--rows 2 --context 128`) for the basic API, metrics, cancellation and the
malformed cases.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases_api  # noqa: E402
import cases_http  # noqa: E402
import cases_load  # noqa: E402
from harness import Runner, Server, log  # noqa: E402

TINY = ["Layers=2", "H=64", "Heads=4", "KvHeads=2", "Inner=128"]


@dataclass
class Ctx:
    opts: argparse.Namespace
    server: Server
    rows: int
    context: int
    expected_model: str
    model: str = ""
    client: object = None
    state: dict = field(default_factory=dict)

    def load_args(self) -> list[str]:
        """What loads the model: weights, tokenizer, generics."""
        o = self.opts
        args = ["--random-weights"] if o.random_weights else ["--weights", o.weights]
        if o.tokenizer:
            args += ["--tokenizer", o.tokenizer]
        for kv in o.set:
            args += ["--set", kv]
        return args


def server_args(ctx_opts, rows, context, *extra):
    o = ctx_opts
    args = ["--backend", o.backend, "--rows", str(rows), "--context", str(context), *extra]
    if o.threads:
        args += ["--threads", str(o.threads)]
    return args


def with_server(runner: Runner, opts, name, rows, context, extra, body, expected_model, shared_state):
    """Starts a server (a case), runs body(ctx), stops it (a case: exit 0, no
    sanitizer report)."""
    ctx = Ctx(opts, None, rows, context, expected_model, state=shared_state)
    ctx.server = Server(opts.linnet, opts.package, ctx.load_args() + server_args(opts, rows, context, *extra), name)
    if not runner.case(f"{name}: start, /health 503 then 200", ctx.server.start, opts.start_timeout, always=True):
        log(f"[{name}] did not start; its cases are not run")
        ctx.server.kill()
        return
    try:
        ctx.client = ctx.server.client(api_key=opts.api_key_for.get(name, "none"))
        # Requests name the model /v1/models lists; api.models checks it is nest.toml's name.
        listed = ctx.server.http("GET", "/v1/models", headers={"Authorization": f"Bearer {ctx.client.api_key}"})
        ids = [m["id"] for m in listed.json()["data"]] if listed.status == 200 else []
        ctx.model = ids[0] if ids else expected_model
        body(runner, ctx)
    finally:
        if ctx.server.alive() or ctx.server.proc is not None:
            runner.case(f"{name}: SIGTERM, exit 0, no sanitizer report", ctx.server.stop, always=True)
        ctx.server.kill()


def run_cases(runner, ctx, prefix, cases):
    for fn in cases:
        runner.case(f"{prefix}.{fn.__name__}", fn, ctx)


def full_suite(runner, opts, model):
    state = {}

    def main(r, ctx):
        run_cases(r, ctx, "api", cases_api.ALL)
        run_cases(r, ctx, "load", [cases_load.metrics, cases_load.prefix_cache, cases_load.concurrency,
                                   cases_load.cancellation])
        run_cases(r, ctx, "http", cases_http.ALL)
        r.case("load.shutdown_streams", cases_load.shutdown_streams, ctx)  # last: it stops the server

    def keyed(r, ctx):
        r.case("auth.api_key", cases_load.api_key, ctx, "sekret")
        r.case("load.prefix_cache_miss", cases_load.prefix_cache_miss, ctx, ctx.client)

    def crowded(r, ctx):
        r.case("load.backpressure", cases_load.backpressure, ctx)

    def tight(r, ctx):
        r.case("load.preemption", cases_load.preemption, ctx)

    # The concurrency case sends 16 requests at once over 4 rows: a queue to
    # hold them, and the time to drain it on a slow CPU (2 cores without
    # AVX-512 took over 60 s for 32, the default wait for a row; the case
    # checks answers and batching, not latency).
    with_server(runner, opts, "main", 4, 1024, ["--max-queue", "32", "--queue-timeout", "600"], main, model, state)
    if runner.wanted("auth") or runner.wanted("prefix_cache"):
        opts.api_key_for["keyed"] = "sekret"
        with_server(runner, opts, "keyed", 4, 1024, ["--api-key", "sekret"], keyed, model, state)
    if runner.wanted("backpressure"):
        with_server(runner, opts, "crowded", 4, 1024, ["--max-queue", "2"], crowded, model, state)
    if runner.wanted("preemption"):
        # 6 usable pages of 64 positions for 4 requests of 3 pages each.
        with_server(runner, opts, "tight", 4, 192, ["--set", "MaxSeq=448"], tight, model, state)


def sanitizer_suite(runner, opts, model):
    def main(r, ctx):
        run_cases(r, ctx, "api", cases_api.SANITIZER)
        run_cases(r, ctx, "load", [cases_load.metrics, cases_load.cancellation])
        run_cases(r, ctx, "http", cases_http.ALL)

    # Small prompt buckets: the reference backend under ASan warms each shape slowly.
    with_server(runner, opts, "main", 2, 128, ["--prefill-chunk", "32"], main, model, {})


def main(argv=None) -> int:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--linnet", default=os.path.join(root, "build/bin/linnet"))
    p.add_argument("--package", default=os.path.join(root, "nest/smollm2-135m-instruct"))
    p.add_argument("--weights", help="the checkpoint (default: the SmolLM2 GGUF in .cache/models)")
    p.add_argument("--random-weights", action="store_true", help="seeded random parameters instead of --weights")
    p.add_argument("--tokenizer", help="a tokenizer.json or a .gguf (default: the --weights file)")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--threads", type=int, default=0, help="the server's --threads (default: its own)")
    p.add_argument("--set", action="append", default=[], metavar="K=V", help="a generic of nest.toml (repeatable)")
    p.add_argument("--suite", choices=["full", "sanitizer"], default="full")
    p.add_argument("--start-timeout", type=float, default=600, help="seconds for a server to become ready")
    p.add_argument("-k", action="append", default=[], metavar="TEXT", help="only the cases whose names contain TEXT")
    opts = p.parse_args(argv)
    gguf = os.path.join(root, ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    if not opts.random_weights and not opts.weights:
        opts.weights = gguf
    if opts.random_weights and not opts.tokenizer:
        opts.tokenizer = gguf
    if opts.suite == "sanitizer" and opts.random_weights and not opts.set:
        opts.set = list(TINY)
    for path in [opts.linnet, opts.package] + ([opts.weights] if opts.weights else []):
        if not os.path.exists(path):
            print(f"serve_test: {path} does not exist", file=sys.stderr)
            return 2
    opts.api_key_for = {}
    with open(os.path.join(opts.package, "nest.toml"), "rb") as f:
        model = tomllib.load(f)["model"]["name"]
    runner = Runner(opts.k)
    (full_suite if opts.suite == "full" else sanitizer_suite)(runner, opts, model)
    return runner.summary()


if __name__ == "__main__":
    sys.exit(main())
