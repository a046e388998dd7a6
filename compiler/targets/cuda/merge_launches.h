// Independent elementwise launches side by side as one launch. Decode's
// layer launched q's rope and the two cache writes (k's with its rope, v's
// head split) one after another, each a few blocks that read q|k|v's
// product: three launches, each waiting for the one before though none
// reads what another writes. Here a run of elementwise launches over 1-D
// grids that are independent (none writes a buffer another reads or
// writes) and separated only by host ops that touch no device memory
// (views, index arithmetic, allocations) becomes one launch at the last
// one's place: its grid is theirs end to end, and a block runs the body of
// the launch its index falls in, with the block index it had there.
//
// Buffers are told apart as buffer_aliases.h tells them: what may alias
// keeps its launches apart.
//
// After mapToGpu, before the buffers' releases are placed.
#pragma once

namespace mlir {
class ModuleOp;
}

namespace linnet::cuda {

void mergeIndependentLaunches(mlir::ModuleOp module);

// mergeIndependentLaunches as the pass `linnet-cuda-merge-launches`, for
// linnet-opt's lit tests (tests/ir/cuda).
void registerMergeLaunchesPass();

}  // namespace linnet::cuda
