// RUN: %linnet-opt --linnet-fuse-elementwise %s | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i, 0)>
#t = affine_map<(i, j) -> (j, i)>

// A chain of elementwise ops, one read transposed: one generic, the same
// operations in the same order.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: arith.subf
// CHECK-NEXT: math.exp
// CHECK-NEXT: arith.mulf
// CHECK-NOT: linalg.generic
func.func @chain(%s: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
       ins(%s, %m : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
       ins(%d : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #t, #id], iterator_types = ["parallel", "parallel"]}
       ins(%x, %v : tensor<4x8xf32>, tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Not fused: a row's value read by broadcast (it would be computed once
// per element), a value with a second user, a generic with an inner loop.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: linalg.generic
func.func @kept(%s: tensor<4x8xf32>, %r: tensor<4x1xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%r : tensor<4x1xf32>) outs(%e1 : tensor<4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4x1xf32>
  %b = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
       ins(%s, %ex : tensor<4x8xf32>, tensor<4x1xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %x: f32, %o: f32):
    %v = arith.subf %a, %x : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
           ins(%b, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %x: f32, %o: f32):
    %v = arith.mulf %a, %x : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e1 : tensor<4x1xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %acc = scf.for %j = %c0 to %c8 step %c1 iter_args(%t = %zero) -> (f32) {
      %x = tensor.extract %s[%i, %j] : tensor<4x8xf32>
      %n = arith.addf %t, %x : f32
      scf.yield %n : f32
    }
    linalg.yield %acc : f32
  } -> tensor<4x1xf32>
  %half = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%sum : tensor<4x1xf32>) outs(%e1 : tensor<4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %a : f32
    linalg.yield %v : f32
  } -> tensor<4x1xf32>
  return %b, %twice, %half : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>
}
