// RUN: %linnet-opt --linnet-expand-attention %s | FileCheck %s

// 200 keys: the ops run on 64, 128 or all 200 of them, chosen from the
// mask: one past the last key any query sees, or all keys when a query
// sees none.
// CHECK-LABEL: func.func @decode_like
// CHECK: %[[SEEN:.*]] = linnet.reduce any %{{.*}} {axes = array<i64: 0>} : tensor<2x200xi1> -> tensor<200xi1>
// CHECK: linnet.iota {axis = 0 : i64} : tensor<200xi64>
// CHECK: linnet.select %[[SEEN]]
// CHECK: %[[REACH:.*]] = linnet.reduce max {{.*}} -> tensor<i64>
// CHECK: %[[ROWS:.*]] = linnet.reduce any %{{.*}} {axes = array<i64: 1>} : tensor<2x200xi1> -> tensor<2xi1>
// CHECK: %[[EVERY:.*]] = linnet.reduce all %[[ROWS]]
// CHECK: %[[R:.*]] = tensor.extract %[[REACH]][] : tensor<i64>
// CHECK: %[[E:.*]] = tensor.extract %[[EVERY]][] : tensor<i1>
// CHECK: %[[NEED:.*]] = arith.select %[[E]], %[[R]], %{{.*}} : i64
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
