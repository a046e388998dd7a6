// The cuda target's write into a state (fuse_elementwise.cpp,
// ComputeWrittenSlice): a slice of an elementwise result written into a
// function's tensor argument becomes a generic over the destination's own
// slice that computes the result's body at the slice's elements, read at
// the source slice's offset (a write clipped at the cache's start reads its
// rows from `from` on). A destination read elsewhere is left alone: its
// write could not be in place.
// REQUIRES: cuda-target
// RUN: %linnet-opt --linnet-cuda-fuse-elementwise %s | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func private @write(
// CHECK-SAME: %[[CACHE:[^:]*]]: tensor<4x8xf32>, %[[X:[^:]*]]: tensor<2x8xf32>, %[[FROM:[^:]*]]: index, %[[N:[^:]*]]: index, %[[AT:[^:]*]]: index
// CHECK: %[[INTO:.*]] = tensor.extract_slice %[[CACHE]][%[[AT]], 0] [%[[N]], 8] [1, 1]
// CHECK: %[[W:.*]] = linalg.generic {{.*}} outs(%[[INTO]] : tensor<?x8xf32>) attrs = {linnet.writes_slice}
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK-NEXT: %[[ROW:.*]] = arith.addi %[[FROM]], %[[I]] : index
// CHECK-NEXT: %[[J:.*]] = linalg.index 1 : index
// CHECK-NEXT: %[[V:.*]] = tensor.extract %[[X]][%[[ROW]], %[[J]]] : tensor<2x8xf32>
// CHECK-NEXT: %[[D:.*]] = arith.addf %[[V]], %[[V]] : f32
// CHECK: linalg.yield %[[D]] : f32
// CHECK: tensor.insert_slice %[[W]] into %[[CACHE]][%[[AT]], 0] [%[[N]], 8] [1, 1]
func.func private @write(%cache: tensor<4x8xf32>, %x: tensor<2x8xf32>, %from: index, %n: index, %at: index)
    -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<2x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.addf %in, %in : f32
    linalg.yield %d : f32
  } -> tensor<2x8xf32>
  %s = tensor.extract_slice %g[%from, 0] [%n, 8] [1, 1] : tensor<2x8xf32> to tensor<?x8xf32>
  %w = tensor.insert_slice %s into %cache[%at, 0] [%n, 8] [1, 1] : tensor<?x8xf32> into tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}

// CHECK-LABEL: func.func private @read_elsewhere(
// CHECK-NOT: linnet.writes_slice
// CHECK: return
func.func private @read_elsewhere(%cache: tensor<4x8xf32>, %x: tensor<2x8xf32>, %n: index, %at: index)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<2x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.addf %in, %in : f32
    linalg.yield %d : f32
  } -> tensor<2x8xf32>
  %s = tensor.extract_slice %g[0, 0] [%n, 8] [1, 1] : tensor<2x8xf32> to tensor<?x8xf32>
  %w = tensor.insert_slice %s into %cache[%at, 0] [%n, 8] [1, 1] : tensor<?x8xf32> into tensor<4x8xf32>
  return %w, %cache : tensor<4x8xf32>, tensor<4x8xf32>
}
