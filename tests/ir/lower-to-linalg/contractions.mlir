// RUN: %linnet-opt --linnet-to-linalg %s | FileCheck %s

// A weight read row by row: a parallel generic over the result, the weight
// row's loop (n) outside the rows of x (m), and an inner f32 accumulation
// over K that may be reassociated (so LLVM vectorizes it).
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d3, d4)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-LABEL: func.func @linear
// CHECK: linalg.generic {indexing_maps = [#[[OUT]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK:   %[[N:.*]] = linalg.index 1 : index
// CHECK:   %[[M:.*]] = linalg.index 2 : index
// CHECK:   scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK:     tensor.extract %{{.*}}[%{{.*}}, %[[M]], %[[K]]] : tensor<2x3x16xbf16>
// CHECK:     tensor.extract %{{.*}}[%[[N]], %[[K]]] : tensor<5x16xbf16>
// CHECK:     arith.mulf {{.*}} fastmath<reassoc,contract> : f32
// CHECK:     arith.addf %[[ACC]], {{.*}} fastmath<reassoc,contract> : f32
// CHECK:   arith.truncf {{.*}} : f32 to bf16
func.func @linear(%x: tensor<2x3x16xbf16>, %w: tensor<5x16xbf16>) -> tensor<2x3x5xbf16> {
  %0 = linnet.matmul %x, %w {transpose_b} : tensor<2x3x16xbf16>, tensor<5x16xbf16> -> tensor<2x3x5xbf16>
  return %0 : tensor<2x3x5xbf16>
}

// b read as [.., K, N] (probabilities times values): a generic whose
// innermost loop runs along N, contiguous in b and in the f32 result, the
// reduction over K outside it; a broadcast batch axis reads index 0.
// CHECK-LABEL: func.func @batched
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x4x2x6xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: outs(%[[ZERO]] : tensor<1x4x2x6xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.addf
func.func @batched(%a: tensor<1x4x2x8xf32>, %b: tensor<1x1x8x6xf32>) -> tensor<1x4x2x6xf32> {
  %0 = linnet.matmul %a, %b : tensor<1x4x2x8xf32>, tensor<1x1x8x6xf32> -> tensor<1x4x2x6xf32>
  return %0 : tensor<1x4x2x6xf32>
}

// Attention scores, `matmul(q, permute(k, [0, 1, 3, 2]))`: k read row by row.
// CHECK-LABEL: func.func @scores
// CHECK: scf.for
// CHECK:   tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : tensor<1x2x3x8xf32>
// CHECK:   tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : tensor<1x2x16x8xf32>
func.func @scores(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x16x8xf32>) -> tensor<1x2x3x16xf32> {
  %0 = linnet.matmul %q, %k {transpose_b} : tensor<1x2x3x8xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x3x16xf32>
  return %0 : tensor<1x2x3x16xf32>
}

// Reductions: one loop per reduced axis; mean divides once; keepdims keeps a
// size-1 axis.
// CHECK-LABEL: func.func @mean_keepdims
// CHECK: linalg.generic
// CHECK:   scf.for {{.*}} -> (f32)
// CHECK:     arith.addf
// CHECK:   arith.divf
func.func @mean_keepdims(%a: tensor<3x8xf32>) -> tensor<3x1xf32> {
  %0 = linnet.reduce mean %a {axes = array<i64: 1>, keepdims} : tensor<3x8xf32> -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}

// index_of_max carries the best value and its index; the first maximum wins.
// CHECK-LABEL: func.func @argmax
// CHECK: scf.for {{.*}} -> (f32, index)
// CHECK:   arith.cmpf ogt
// CHECK: arith.index_cast {{.*}} : index to i32
func.func @argmax(%a: tensor<2x10xf32>) -> tensor<2xi32> {
  %0 = linnet.reduce index_of_max %a {axes = array<i64: 1>} : tensor<2x10xf32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}
