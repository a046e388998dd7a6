// Internal to linnet-to-linalg: the builders its conversion patterns share
// (defined in lower_to_linalg.cpp) and the three groups of patterns the
// pass assembles, one file each: elementwise ops, contractions, data movement.
#pragma once

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "transforms/pipeline.h"

namespace linnet::transforms::lowering {

mlir::RankedTensorType typeOf(mlir::Value v);
mlir::Value emptyTensor(mlir::OpBuilder& b, mlir::Location loc, mlir::RankedTensorType t);
mlir::Value cIndex(mlir::OpBuilder& b, mlir::Location loc, int64_t v);

// The map from the result's loop dims to an operand broadcast into it.
mlir::AffineMap broadcastMap(mlir::OpBuilder& b, llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out);

// A parallel linalg.generic producing `type` from `inputs` broadcast into
// it; `body` gets one scalar per input.
using ElementBody = llvm::function_ref<mlir::Value(mlir::OpBuilder&, mlir::Location, mlir::ValueRange)>;
mlir::Value elementwise(mlir::OpBuilder& b, mlir::Location loc, mlir::RankedTensorType type,
                        mlir::ValueRange inputs, ElementBody body);

// A parallel linalg.generic over `type` whose body computes each element
// from the loop indices (`linalg.index`), reading other tensors with
// tensor.extract. `order[i]` is the result axis loop i runs over.
using IndexedBody = llvm::function_ref<mlir::Value(mlir::OpBuilder&, mlir::Location, llvm::ArrayRef<mlir::Value>)>;
mlir::Value indexed(mlir::OpBuilder& b, mlir::Location loc, mlir::RankedTensorType type,
                    llvm::ArrayRef<unsigned> order, IndexedBody body);
llvm::SmallVector<unsigned> identityOrder(unsigned rank);

// bf16 and f16 compute in f32 and round once per op (docs/language.md).
bool isLowFloat(mlir::Type t);
mlir::Value toF32(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v);
mlir::Value fromF32(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v, mlir::Type t);
// Lets LLVM vectorize an f32 accumulation.
mlir::arith::FastMathFlagsAttr reassoc(mlir::OpBuilder& b);

// unary, binary, select, cast, broadcast, constant, iota (lower_elementwise.cpp).
void populateElementwisePatterns(mlir::RewritePatternSet& patterns);
// matmul, reduce (lower_contractions.cpp).
void populateContractionPatterns(mlir::RewritePatternSet& patterns);
// reshape, permute, concat, slice, gather (lower_data_movement.cpp).
void populateDataMovementPatterns(mlir::RewritePatternSet& patterns);

}  // namespace linnet::transforms::lowering
