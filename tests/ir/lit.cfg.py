# lit configuration for the IR tests: MLIRGen (linnetc build --emit mlir),
# each pass (linnet-opt), and the CPU pipeline's stages, checked with
# FileCheck. Run through ctest (`ir`), or by hand:
#   lit -sv tests/ir --param bindir=build/bin --param source=$PWD
# Each test's Output/ folder and lit's .lit_test_times.txt go to exec_root
# (ctest passes the build tree's tests/ir; by hand it defaults to the
# bindir's build tree), never into the source tree. llvm_bin: where
# FileCheck is (ctest passes LINNET_LLVM_ROOT/bin; by hand it defaults to
# /usr/lib/llvm-22/bin, LINNET_LLVM_ROOT's default).
import os

import lit.formats

config.name = "linnet-ir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["inputs"]
config.test_source_root = os.path.dirname(__file__)

bindir = os.path.abspath(lit_config.params.get("bindir", "build/bin"))
config.test_exec_root = os.path.abspath(
    lit_config.params.get("exec_root", os.path.join(os.path.dirname(bindir), "tests", "ir")))
source = os.path.abspath(lit_config.params.get("source", os.path.join(os.path.dirname(__file__), "..", "..")))
llvm_bin = lit_config.params.get("llvm_bin", "/usr/lib/llvm-22/bin")

# tests/ir/cuda runs where linnetc has the cuda target (the toolkit's ptxas
# was found at configure time); elsewhere lit reports it unsupported.
if lit_config.params.get("cuda", "0") == "1":
    config.available_features.add("cuda-target")
config.substitutions.append(("%gqa2", os.path.join(source, "tests", "data", "llama", "gqa2")))
config.substitutions.append(("%linnet-opt", os.path.join(bindir, "linnet-opt")))
config.substitutions.append(("%linnetc", os.path.join(bindir, "linnetc")))
config.substitutions.append(("%card", os.path.join(source, "nest", "llama-3.1-8b-instruct")))
config.substitutions.append(("%inputs", os.path.join(os.path.dirname(__file__), "inputs")))
config.environment["PATH"] = os.pathsep.join([llvm_bin, config.environment.get("PATH", os.environ["PATH"])])
config.environment["LINNET_STDLIB"] = os.path.join(source, "stdlib")
