// Products the cuda target leaves to a library: those of more rows than a
// decode product (SharedOptions::kMinLibraryRows: prefill's, and batched
// decode's past 8 rows), whose GEMMs cuBLASLt runs near the tensor cores'
// peak where a kernel of ours would not.
//
// At the tensor stage each such linnet.matmul becomes a host call
//   linnet_cuda_gemm_<t>(x, w, c, transpose_w)      t: f32, bf16 or f16
// on three stacks of matrices (product_buffers.h) passed as unranked
// memrefs; the result is c's fresh buffer as a tensor. The call is compiled
// into model.so (library_gemm.c) and hands a LinnetGemm
// (runtime/artifact/cuda_api.h) to the device's cuBLASLt, or, in the CPU
// emulation, to a loop in f32 (emulated_gemm.c).
#pragma once

#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

inline constexpr const char* kLibraryGemm = "linnet_cuda_gemm";

// Every product `options` leave to a library (targetKeepsLibraryProduct),
// as the call above. Before bufferization.
void lowerLibraryProducts(mlir::ModuleOp module, const transforms::SharedOptions& options);

// True for a call of linnet_cuda_gemm_<t>: it reads x and w and writes c on the
// device's stream, and keeps none of them.
bool isLibraryCall(mlir::Operation* op);

// The private declaration of a C function of model.so, `name` of `type`,
// made once per module; and whether `op` calls such a function whose name
// starts with `prefix` (the gemm's, host_reads.h's).
mlir::func::FuncOp declareHostFunction(mlir::ModuleOp module, const std::string& name, mlir::FunctionType type);
bool callsHostFunction(mlir::Operation* op, llvm::StringRef prefix);

}  // namespace linnet::cuda
