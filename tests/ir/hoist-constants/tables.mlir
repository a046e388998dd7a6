// RUN: %linnet-opt --linnet-hoist-constants %s | FileCheck %s

// A table computed from iota and constants alone (as rope tables are) is
// computed once, in @linnet_init, into a global that the function reads;
// what depends on an argument stays. Small or trivial constants stay inline.
// CHECK-LABEL: func.func @step(
// CHECK-NOT:   linnet.unary cos
// CHECK:       %[[G:.*]] = memref.get_global @__linnet_constant_0 : memref<64x16xf32>
// CHECK:       %[[T:.*]] = bufferization.to_tensor %[[G]] restrict
// CHECK:       linnet.binary mul %[[T]], %arg0
// CHECK:       linnet.binary add %{{.*}}, %arg1 : tensor<4xf32>
// CHECK:       memref.global "private" @__linnet_constant_0 : memref<64x16xf32>
// CHECK-NOT:   memref.global
// CHECK-LABEL: func.func @linnet_init()
// CHECK:       linnet.iota
// CHECK:       %[[C:.*]] = linnet.unary cos
// CHECK:       %[[G2:.*]] = memref.get_global @__linnet_constant_0
// CHECK:       bufferization.materialize_in_destination %[[C]] in restrict writable %[[G2]]
func.func @step(%arg0: tensor<64x16xf32>, %small: tensor<4xf32>) -> (tensor<64x16xf32>, tensor<4xf32>) {
  %i = linnet.iota {axis = 0 : i64} : tensor<64x16xf32>
  %c = linnet.constant dense<0.5> : tensor<f32>
  %a = linnet.binary mul %i, %c : tensor<64x16xf32>, tensor<f32> -> tensor<64x16xf32>
  %t = linnet.unary cos %a : tensor<64x16xf32> -> tensor<64x16xf32>
  %r = linnet.binary mul %t, %arg0 : tensor<64x16xf32>, tensor<64x16xf32> -> tensor<64x16xf32>
  %j = linnet.iota {axis = 0 : i64} : tensor<4xf32>
  %s = linnet.binary add %j, %small : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %r, %s : tensor<64x16xf32>, tensor<4xf32>
}
