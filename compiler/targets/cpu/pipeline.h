// The CPU target's lowering: from the shared pipeline's `linalg` stage to a
// shared object for this machine.
//
//   one-shot bufferization (across function boundaries) -> buffer
//   deallocation -> parallel loops, the large outermost ones on OpenMP
//   threads (parallel_loops.h), the rest sequential -> LLVM dialect -> LLVM
//   IR -> clang -O3 -march=native -shared -lomp, with a C shim giving each
//   entry its uniform call symbol (runtime/artifact/abi.h) and
//   `linnet_set_threads(int)` for the runtime's thread count
#pragma once

#include <string>
#include <vector>

#include "artifact/manifest.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace linnet::cpu {

// The LLVM IR translations.
void registerDialects(mlir::DialectRegistry& registry);

enum class Stage { Bufferized, LLVMDialect };
// Lowers `module`, at the `linalg` stage, in place up to and including `stage`.
void lower(mlir::ModuleOp module, Stage stage);

// The second half of lower(): bufferized loops (scf.parallel, scf.for) to
// the LLVM dialect, large outer parallel loops on OpenMP threads.
void lowerLoopsToLLVM(mlir::ModuleOp module);

// C source giving manifest entry i, generated as `functions[i]`, the symbol
// `void <callSymbol>(void** args)` of the ABI, plus the strided copy that
// MLIR's memref.copy lowers to for non-contiguous views.
std::string entryShim(const artifact::Manifest& manifest, const std::vector<std::string>& functions);

// Compiles LLVM IR plus the shim into `soPath` with clang ($LINNET_CLANG, else
// the one found at configure time). Throws with clang's output on failure.
void compileSharedObject(const std::string& llvmIR, const std::string& shim, const std::string& soPath);

}  // namespace linnet::cpu
