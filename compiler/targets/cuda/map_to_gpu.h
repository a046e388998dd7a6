// The CUDA target's split of bufferized, loop-level code into host code and
// kernels (after convert-linalg-to-parallel-loops):
//
//   1. host work on device memory that is not a parallel loop (a 0-d op's
//      store, a serial loop nest) is wrapped in a one-iteration parallel loop;
//   2. each outermost parallel loop becomes a `gpu.launch` over a 1-D grid:
//      its iterations numbered in row-major order, kThreadsPerBlock threads a
//      block, a guard for the last block's spare threads;
//   3. values a kernel needs that the host computed from device memory (a
//      position read from a 0-d input, the views and indices built from it)
//      are recomputed inside the kernel instead, so the host never reads
//      device memory and every launch's parameters are the same from call
//      to call (what a CUDA graph needs);
//   4. host allocations become `gpu.alloc`/`gpu.dealloc` (the runtime's
//      per-call arena).
//
// Then verifyHostCode checks what is left: host code may hold launches,
// allocations, views, calls, loops over host values and index arithmetic,
// and nothing that reads or writes device memory.
#pragma once

#include <cstdint>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace linnet::cuda {

inline constexpr int64_t kThreadsPerBlock = 256;

// The template a kernel was made from ("gemv", "attention",
// "row_reduction"), set on its parallel loop by the pass that made it and
// carried to its launch; the manifest lists it with the kernel, for
// profiles (runtime/device/cuda/profiler.h). Loops without it are
// "elementwise".
inline constexpr char kKernelFamily[] = "linnet.kernel_family";

// memref.copy (which lowers to a host function) as linalg.copy, so that it
// becomes a parallel loop like every other op; a copy of a buffer into
// itself goes. Before loops are made.
void copiesToLinalg(mlir::ModuleOp module);

// Loads of constant scalar globals (a literal operand bufferized to a 0-d
// global) as the constant itself: host globals are not device memory.
void foldConstantLoads(mlir::ModuleOp module);

// Steps 1-4 above.
void mapToGpu(mlir::ModuleOp module);

// The buffer a view was taken of (through views and casts): a block
// argument or an allocation.
mlir::Value bufferRoot(mlir::Value v);

// A release of the device buffer `memref` at b's insertion point, in the
// async form gpu-to-llvm lowers (a token, the gpu.dealloc, a wait): the
// launch shim's mgpuMemFree on the one stream. Step 4 and the buffer
// lifetimes (buffer_lifetimes.h) make them this way.
void releaseOnDevice(mlir::OpBuilder& b, mlir::Location loc, mlir::Value memref);

// Copies the constants each kernel uses into it (canonicalization hoists
// them out of launches): a kernel that divides by a known number then uses
// shifts and multiplies, not a division at run time. Before outlining.
void sinkConstants(mlir::ModuleOp module);

// Throws transforms::PipelineError naming each host operation that would
// touch device memory, with its source location.
void verifyHostCode(mlir::ModuleOp module);

}  // namespace linnet::cuda
