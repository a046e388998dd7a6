// RUN: %linnet-opt --linnet-unshare-splats %s | FileCheck %s

// One zero splat (as CSE leaves it) initializes two loop-carried sums and
// is read by an add: each sum gets a splat of its own, the reader keeps the
// original, and a splat with one user is left alone.
// CHECK-LABEL: func.func @sums(
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT:   linalg.generic
// CHECK:       scf.for
func.func @sums(%x: tensor<4x8xf32>, %n: index) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant dense<0.0> : tensor<f32>
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> ()>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
       ins(%zero : tensor<f32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z, %b = %z) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %a2 = arith.addf %a, %x : tensor<4x8xf32>
    %b2 = arith.subf %b, %x : tensor<4x8xf32>
    scf.yield %a2, %b2 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  %read = arith.addf %z, %x : tensor<4x8xf32>
  return %r#0, %r#1, %read : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// The splat as linnet-fuse-elementwise leaves it, its 0-d constant folded
// into the body: the same.
// CHECK-LABEL: func.func @folded(
// CHECK-COUNT-2: linalg.generic
// CHECK:       scf.for
func.func @folded(%x: tensor<4x8xf32>, %n: index) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
       outs(%e : tensor<4x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  } -> tensor<4x8xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z, %b = %z) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %a2 = arith.addf %a, %x : tensor<4x8xf32>
    %b2 = arith.subf %b, %x : tensor<4x8xf32>
    scf.yield %a2, %b2 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xf32>
}
