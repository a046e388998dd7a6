#!/usr/bin/env python3
"""Long flat operator chains: `return x + x + ... + x` with N terms must be
checked, printed by `--emit ast` and, in a package's entry,
elaborated and lowered by `--emit mlir` (output discarded) without overflowing the stack, and a flat
chain is not nesting: it must not be rejected as "nests too deeply".
Generated here rather than committed (700,000 terms is 3 MB).

Usage: long_chain.py LINNETC [TERMS]"""
import os
import subprocess
import sys
import tempfile


def program(terms, op):
    return ("module long_chain\n\n"
            "pub fn f<N: Dim>(x: Tensor[N; f32]) -> Tensor[N; f32] {\n"
            f"    return x{f' {op} x' * (terms - 1)}\n"
            "}\n")


def dim_program(terms):
    """The chain in a dimension: `Tensor[N + N + ... + N; f32]`."""
    dims = "N" + " + N" * (terms - 1)
    return ("module long_chain\n\n"
            f"pub fn f<N: Dim>(x: Tensor[{dims}; f32]) -> Tensor[{dims}; f32] {{\n"
            "    return x\n"
            "}\n")


def package(root, terms, op):
    """A package whose root block's entry returns the chain: elaborated and
    lowered to MLIR by `linnetc build --emit mlir`."""
    dims = "N" + " + N" * (terms - 1)
    os.makedirs(os.path.join(root, "src"))
    with open(os.path.join(root, "linnet.toml"), "w") as f:
        f.write('[package]\nname = "chain"\nversion = "0.1.0"\nlanguage = "0.1"\n')
    with open(os.path.join(root, "nest.toml"), "w") as f:
        f.write('[source]\npath = "src/lib.linnet"\nroot = "Chain"\n[generics]\nN = 4\n')
    with open(os.path.join(root, "src", "lib.linnet"), "w") as f:
        f.write("module chain\n\n"
                "pub block Chain<N: Dim> {\n"
                + (f"    pub entry f(x: Tensor[{dims}; f32]) -> Tensor[{dims}; f32] {{\n"
                   "        return x\n" if op == "dim +" else
                   "    pub entry f(x: Tensor[N; f32]) -> Tensor[N; f32] {\n"
                   f"        return x{f' {op} x' * (terms - 1)}\n") +
                "    }\n"
                "}\n")


def main():
    linnetc = sys.argv[1]
    terms = int(sys.argv[2]) if len(sys.argv) > 2 else 700000
    # The sanitizer build (no MLIR) has `check` only.
    has_build = "build" in subprocess.run([linnetc, "--help"], capture_output=True,
                                          text=True).stdout.split("Subcommands:")[-1]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="linnet-long-chain-") as tmp:
        for op in ["+", "*", "dim +"]:
            path = os.path.join(tmp, "long_chain.linnet")
            with open(path, "w") as f:
                f.write(dim_program(terms) if op == "dim +" else program(terms, op))
            pkg = os.path.join(tmp, f"pkg{len(op)}{ord(op[0])}")
            runs = [["check", path]]
            if has_build:
                runs.append(["build", path, "--emit", "ast"])
                package(pkg, terms, op)
                runs.append(["build", pkg, "--emit", "mlir"])
            for args in runs:
                proc = subprocess.run([linnetc] + args, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True, timeout=600)
                what = f"`{op}` x {terms}: linnetc {' '.join(a for a in args if a not in (path, pkg))}"
                if proc.returncode != 0 or proc.stderr:
                    print(f"FAIL {what}: exit {proc.returncode}\n{proc.stderr[:2000]}")
                    failed += 1
                else:
                    print(f"ok   {what}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
