// linnet-pack-params: an argument marked with a block format arrives as its
// bytes (i8, RowBytes per row: q4_1 20 per 32 elements, q8_0 34); a layer's
// slice and the one call that passes it follow; a transposed product becomes
// packed_matmul, an embedding row lookup packed_gather, any other read an
// unpack. An f32 param keeps its type; only its products change.
// RUN: %linnet-opt %s --linnet-pack-params | FileCheck %s

// CHECK-LABEL: func.func @linnet_e(
// CHECK-SAME:    %[[W:[a-z0-9]+]]: memref<3x4x20xi8> {linnet.storage = "q4_1"}
// CHECK-SAME:    %[[E:[a-z0-9]+]]: memref<10x34xi8> {linnet.storage = "q8_0"}
// CHECK-SAME:    %[[F:[a-z0-9]+]]: memref<4x32xf32> {linnet.storage = "f32"}
func.func @linnet_e(%x: memref<1x32xf32>, %ids: memref<1x1xi32>, %w: memref<3x4x32xf32> {linnet.storage = "q4_1"},
                    %e: memref<10x32xf32> {linnet.storage = "q8_0"}, %f: memref<4x32xf32> {linnet.storage = "f32"})
    -> (tensor<1x4xf32>, tensor<1x1x32xf32>, tensor<10x32xf32>, tensor<1x4xf32>) attributes {llvm.emit_c_interface} {
  %xt = bufferization.to_tensor %x restrict : memref<1x32xf32> to tensor<1x32xf32>
  %it = bufferization.to_tensor %ids restrict : memref<1x1xi32> to tensor<1x1xi32>
  // CHECK: %[[WT:.*]] = bufferization.to_tensor %[[W]] restrict : memref<3x4x20xi8> to tensor<3x4x20xi8>
  %wt = bufferization.to_tensor %w restrict : memref<3x4x32xf32> to tensor<3x4x32xf32>
  %et = bufferization.to_tensor %e restrict : memref<10x32xf32> to tensor<10x32xf32>
  %ft = bufferization.to_tensor %f restrict : memref<4x32xf32> to tensor<4x32xf32>
  %c1 = arith.constant 1 : index
  // CHECK: call @layer(%{{.*}}, %[[WT]], %{{.*}}) : (tensor<1x32xf32>, tensor<3x4x20xi8>, index)
  %y = func.call @layer(%xt, %wt, %c1) : (tensor<1x32xf32>, tensor<3x4x32xf32>, index) -> tensor<1x4xf32>
  // CHECK: %[[ROWS:.*]] = linnet.reshape %{{.*}} : tensor<1x1x1xi32> -> tensor<1x1xi32>
  // CHECK: linnet.packed_gather "q8_0" %{{.*}}[%[[ROWS]]] : (tensor<10x34xi8>, tensor<1x1xi32>) -> tensor<1x1x32xf32>
  %r = linnet.reshape %it : tensor<1x1xi32> -> tensor<1x1x1xi32>
  %iota = linnet.iota {axis = 2 : i64} : tensor<1x1x32xi64>
  %row = linnet.gather %et[%r, %iota] : (tensor<10x32xf32>, tensor<1x1x1xi32>, tensor<1x1x32xi64>) -> tensor<1x1x32xf32>
  // CHECK: %[[U:.*]] = linnet.unpack "q8_0" %{{.*}} : tensor<10x34xi8> -> tensor<10x32xf32>
  // CHECK: linnet.unary exp %[[U]]
  %ex = linnet.unary exp %et : tensor<10x32xf32> -> tensor<10x32xf32>
  // CHECK: linnet.packed_matmul "f32" %{{.*}}, %{{.*}} : tensor<1x32xf32>, tensor<4x32xf32> -> tensor<1x4xf32>
  %z = linnet.matmul %xt, %ft {transpose_b} : tensor<1x32xf32>, tensor<4x32xf32> -> tensor<1x4xf32>
  return %y, %row, %ex, %z : tensor<1x4xf32>, tensor<1x1x32xf32>, tensor<10x32xf32>, tensor<1x4xf32>
}

// CHECK-LABEL: func.func private @layer(
// CHECK-SAME:    %{{.*}}: tensor<1x32xf32>, %[[LW:.*]]: tensor<3x4x20xi8>, %[[L:.*]]: index)
// CHECK: %[[S:.*]] = tensor.extract_slice %[[LW]][%[[L]], 0, 0] [1, 4, 20] [1, 1, 1] : tensor<3x4x20xi8> to tensor<4x20xi8>
// CHECK: linnet.packed_matmul "q4_1" %{{.*}}, %[[S]] : tensor<1x32xf32>, tensor<4x20xi8> -> tensor<1x4xf32>
func.func private @layer(%x: tensor<1x32xf32>, %w: tensor<3x4x32xf32>, %l: index) -> tensor<1x4xf32> {
  %s = tensor.extract_slice %w[%l, 0, 0] [1, 4, 32] [1, 1, 1] : tensor<3x4x32xf32> to tensor<4x32xf32>
  %y = linnet.matmul %x, %s {transpose_b} : tensor<1x32xf32>, tensor<4x32xf32> -> tensor<1x4xf32>
  return %y : tensor<1x4xf32>
}
