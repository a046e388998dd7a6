// The CPU target: `linnet` IR to a shared object for x86-64.
//
//   linnet-hoist-constants -> linnet-to-linalg -> canonicalize/cse -> one-shot bufferization (across
//   function boundaries) -> buffer deallocation -> loops -> LLVM dialect ->
//   LLVM IR -> clang -O3 -march=native -shared
//
// Stages can be printed (`linnetc --emit=...`) for tests and for curiosity.
#pragma once

#include <string>
#include <vector>

#include "ir/mlirgen.h"
#include "mlir/IR/BuiltinOps.h"

namespace linnet::cpu {

struct PipelineError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Registers every dialect, extension and translation the pipeline uses.
void registerEverything(mlir::MLIRContext& context);

enum class Stage { Linalg, Bufferized, LLVMDialect };
// Lowers `module` in place up to and including `stage`.
void lower(mlir::ModuleOp module, Stage stage);

// The module (in the LLVM dialect) as LLVM IR text.
std::string translateToLLVMIR(mlir::ModuleOp module);

// A C shim giving each entry one symbol `void linnet_call_E(void** args)`
// (args[i] points to the i-th memref descriptor): the runtime calls every
// entry through the same signature whatever its arity.
std::string entryShim(const std::vector<ir::EntryInstance>& entries, size_t params, size_t states);

// Compiles LLVM IR plus the shim into `soPath` with clang. Throws with
// clang's output on failure.
void compileSharedObject(const std::string& llvmIR, const std::string& shim, const std::string& soPath);

}  // namespace linnet::cpu
