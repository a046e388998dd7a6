// The passes of the shared (target-independent) path.
#pragma once

#include <memory>

#include "mlir/Pass/Pass.h"
#include "transforms/pipeline.h"

namespace linnet::transforms {

// linnet-hoist-constants: argument-independent tensors computed once, in
// @linnet_init, into globals (hoist_constants.cpp).
std::unique_ptr<mlir::Pass> createHoistConstantsPass();
void registerHoistConstantsPass();

// linnet-expand-attention: each linnet.attention as its defining ops over
// the prefix of keys its mask can reach, chosen at run time among a few
// static lengths (expand_attention.cpp).
std::unique_ptr<mlir::Pass> createExpandAttentionPass(const SharedOptions& options = {});
void registerExpandAttentionPass();

// linnet-pack-params: the params an entry's arguments mark `linnet.storage`
// read in that format: packed_matmul, packed_gather, unpack (pack_params.cpp).
std::unique_ptr<mlir::Pass> createPackParamsPass(const SharedOptions& options = {});
void registerPackParamsPass();

// linnet-gemm-products: f32 products with a matrix b that pack-params left
// as linnet.matmul, as packed_matmul "f32" (gemm_products.cpp).
std::unique_ptr<mlir::Pass> createGemmProductsPass();
void registerGemmProductsPass();

// linnet-unshare-splats: a splat tensor (zeros) that several users may
// write in place, one copy per such user, so bufferization fills each
// instead of filling one and copying it (unshare_splats.cpp).
std::unique_ptr<mlir::Pass> createUnshareSplatsPass();
void registerUnshareSplatsPass();

// linnet-fuse-elementwise: an elementwise linalg.generic computed inside
// its one consumer where that consumer reads it element for element
// (fuse_elementwise.cpp); the CPU target runs it before bufferization.
std::unique_ptr<mlir::Pass> createFuseElementwisePass();
void registerFuseElementwisePass();

// linnet-to-linalg: the `linnet` dialect to linalg/tensor/arith/math/scf,
// a dialect conversion: an op or kind it cannot lower is an error
// (lower_to_linalg.cpp and the lower_*.cpp patterns).
std::unique_ptr<mlir::Pass> createLowerToLinalgPass(const SharedOptions& options = {});

// Makes every pass above available to textual pipelines (linnet-opt).
void registerPasses();

}  // namespace linnet::transforms
