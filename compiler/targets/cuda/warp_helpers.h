// Small builders the cuda target's warp kernels share (warp_kernels.cpp,
// row_reductions.cpp).
#pragma once

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace linnet::cuda {

mlir::Value cIndex(mlir::OpBuilder& b, mlir::Location l, int64_t v);

// v (a float or a vector of floats) as f32.
mlir::Value toF32(mlir::OpBuilder& b, mlir::Location l, mlir::Value v);

// One step of a warp reduction `kind` on two f32 values; null for kinds it
// has no emulation of.
mlir::Value combine(mlir::OpBuilder& b, mlir::Location l, mlir::gpu::AllReduceOperation kind, mlir::Value x,
                    mlir::Value y);

// Row-major index `linear` as indices into `shape` (each a rem and a div
// by that axis's length, the last axis first).
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder& b, mlir::Location l, mlir::Value linear,
                                           llvm::ArrayRef<int64_t> shape);

// A parallel loop nest over [0, extents) (the launch's grid, last axis
// fastest), b's insertion point moved into its body; its kernel's family
// (map_to_gpu.h's kKernelFamily) is `family`.
mlir::scf::ParallelOp parallelLoop(mlir::OpBuilder& b, mlir::Location l, llvm::ArrayRef<int64_t> extents,
                                   llvm::StringRef family);

}  // namespace linnet::cuda
