// RUN: %linnet-opt --linnet-expand-attention %s | FileCheck %s

// 200 keys: the ops run on 64, 128 or all 200 of them, chosen from the
// mask: one past the last key any query sees, or all keys when a query
// sees none. Each row's end (one past its last key seen, 0 for none) is a
// max over its keys; a row with none asks for all 200; the length is the
// largest.
// CHECK-LABEL: func.func @decode_like
// CHECK: linnet.iota {axis = 0 : i64} : tensor<200xi64>
// CHECK: %[[ENDS:.*]] = linnet.cast {{.*}} : tensor<200xi64> -> tensor<200xf32>
// CHECK: %[[SEEN:.*]] = linnet.select %arg4, %[[ENDS]], %{{.*}} : tensor<2x200xi1>, tensor<200xf32>, tensor<f32> -> tensor<2x200xf32>
// CHECK: %[[ROW:.*]] = linnet.reduce max %[[SEEN]] {axes = array<i64: 1>} : tensor<2x200xf32> -> tensor<2xf32>
// CHECK: %[[NONE:.*]] = linnet.binary eq %[[ROW]], %{{.*}} -> tensor<2xi1>
// CHECK: %[[ROWNEED:.*]] = linnet.select %[[NONE]], %{{.*}}, %[[ROW]] : tensor<2xi1>, tensor<f32>, tensor<2xf32> -> tensor<2xf32>
// CHECK: %[[ALL:.*]] = linnet.reduce max %[[ROWNEED]] {axes = array<i64: 0>} : tensor<2xf32> -> tensor<f32>
// CHECK: %[[N:.*]] = tensor.extract %[[ALL]][] : tensor<f32>
// CHECK: %[[NEED:.*]] = arith.fptosi %[[N]] : f32 to i64
// CHECK: arith.cmpi sgt, %[[NEED]], %{{.*}} : i64
// CHECK: arith.cmpi sgt, %[[NEED]], %{{.*}} : i64
// CHECK: scf.index_switch
// CHECK: case 0 {
// CHECK:   linnet.slice %{{.*}} {{.*}}hi = array<i64: 1, 2, 64, 8>{{.*}} -> tensor<1x2x64x8xbf16>
// CHECK:   linnet.matmul {{.*}} -> tensor<1x2x2x64xbf16>
// CHECK:   linnet.select {{.*}} -> tensor<1x2x1x2x64xf32>
// CHECK:   linnet.unary exp
// CHECK:   linnet.matmul {{.*}} : tensor<1x2x2x64xbf16>, tensor<1x2x64x4xbf16> -> tensor<1x2x2x4xbf16>
// CHECK: case 1 {
// CHECK:   hi = array<i64: 1, 2, 128, 8>
// CHECK: default {
// CHECK-NOT: linnet.slice
// CHECK:   linnet.matmul {{.*}} : tensor<1x2x2x200xbf16>, tensor<1x2x200x4xbf16> -> tensor<1x2x2x4xbf16>
// CHECK-NOT: linnet.attention
func.func @decode_like(%q: tensor<1x2x1x2x8xbf16>, %k: tensor<1x2x200x8xbf16>, %v: tensor<1x2x200x4xbf16>,
                       %scale: tensor<f32>, %mask: tensor<2x200xi1>) -> tensor<1x2x1x2x4xbf16> {
  %0 = linnet.attention %q, %k, %v, %scale, %mask : (tensor<1x2x1x2x8xbf16>, tensor<1x2x200x8xbf16>, tensor<1x2x200x4xbf16>, tensor<f32>, tensor<2x200xi1>) -> tensor<1x2x1x2x4xbf16>
  return %0 : tensor<1x2x1x2x4xbf16>
}

// 16 keys, fewer than the shortest prefix: the ops over all of them, no switch.
// CHECK-LABEL: func.func @short
// CHECK-NOT: scf.index_switch
// CHECK: linnet.matmul {{.*}} -> tensor<1x1x3x16xf32>
func.func @short(%q: tensor<1x1x3x1x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>,
                 %scale: tensor<f32>, %mask: tensor<16xi1>) -> tensor<1x1x3x1x8xf32> {
  %0 = linnet.attention %q, %k, %v, %scale, %mask : (tensor<1x1x3x1x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<f32>, tensor<16xi1>) -> tensor<1x1x3x1x8xf32>
  return %0 : tensor<1x1x3x1x8xf32>
}
