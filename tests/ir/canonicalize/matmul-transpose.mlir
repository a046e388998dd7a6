// RUN: %linnet-opt --canonicalize %s | FileCheck %s

// Linear's `matmul(x, permute(w, [1, 0]))`: w read row by row, no transpose.
// CHECK-LABEL: func.func @linear
// CHECK-NOT: linnet.permute
// CHECK: linnet.matmul %arg0, %arg1 {transpose_b} : tensor<2x3x16xf32>, tensor<5x16xf32> -> tensor<2x3x5xf32>
func.func @linear(%x: tensor<2x3x16xf32>, %w: tensor<5x16xf32>) -> tensor<2x3x5xf32> {
  %t = linnet.permute %w {perm = array<i64: 1, 0>} : tensor<5x16xf32> -> tensor<16x5xf32>
  %0 = linnet.matmul %x, %t : tensor<2x3x16xf32>, tensor<16x5xf32> -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// Attention's scores, `matmul(q, permute(k, [0, 1, 3, 2]))`: any rank.
// CHECK-LABEL: func.func @scores
// CHECK-NOT: linnet.permute
// CHECK: linnet.matmul %arg0, %arg1 {transpose_b} : tensor<1x2x3x8xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x3x16xf32>
func.func @scores(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x16x8xf32>) -> tensor<1x2x3x16xf32> {
  %t = linnet.permute %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x16x8xf32> -> tensor<1x2x8x16xf32>
  %0 = linnet.matmul %q, %t : tensor<1x2x3x8xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x3x16xf32>
  return %0 : tensor<1x2x3x16xf32>
}

// A permute that also moves a batch axis is not that read: it stays.
// CHECK-LABEL: func.func @other_permute
// CHECK: %[[T:.*]] = linnet.permute %arg1 {perm = array<i64: 1, 0, 3, 2>}
// CHECK: linnet.matmul %arg0, %[[T]] :
func.func @other_permute(%q: tensor<2x1x3x8xf32>, %k: tensor<1x2x16x8xf32>) -> tensor<2x1x3x16xf32> {
  %t = linnet.permute %k {perm = array<i64: 1, 0, 3, 2>} : tensor<1x2x16x8xf32> -> tensor<2x1x8x16xf32>
  %0 = linnet.matmul %q, %t : tensor<2x1x3x8xf32>, tensor<2x1x8x16xf32> -> tensor<2x1x3x16xf32>
  return %0 : tensor<2x1x3x16xf32>
}

// A permute with another user stays for it; the matmul still reads w.
// CHECK-LABEL: func.func @shared
// CHECK: %[[T:.*]] = linnet.permute %arg1 {perm = array<i64: 1, 0>}
// CHECK: linnet.matmul %arg0, %arg1 {transpose_b}
// CHECK: return %{{.*}}, %[[T]]
func.func @shared(%x: tensor<3x16xf32>, %w: tensor<5x16xf32>) -> (tensor<3x5xf32>, tensor<16x5xf32>) {
  %t = linnet.permute %w {perm = array<i64: 1, 0>} : tensor<5x16xf32> -> tensor<16x5xf32>
  %0 = linnet.matmul %x, %t : tensor<3x16xf32>, tensor<16x5xf32> -> tensor<3x5xf32>
  return %0, %t : tensor<3x5xf32>, tensor<16x5xf32>
}

// A gradient's dX = dY (Wᵀ)ᵀ: w read as it lies ([K, N], no transpose_b),
// no transpose formed whichever pattern runs first.
// CHECK-LABEL: func.func @transposed_back
// CHECK-NOT: linnet.permute
// CHECK: linnet.matmul %arg0, %arg1 : tensor<3x6xf32>, tensor<6x16xf32> -> tensor<3x16xf32>
func.func @transposed_back(%dy: tensor<3x6xf32>, %w: tensor<6x16xf32>) -> tensor<3x16xf32> {
  %t = linnet.permute %w {perm = array<i64: 1, 0>} : tensor<6x16xf32> -> tensor<16x6xf32>
  %tt = linnet.permute %t {perm = array<i64: 1, 0>} : tensor<16x6xf32> -> tensor<6x16xf32>
  %0 = linnet.matmul %dy, %tt : tensor<3x6xf32>, tensor<6x16xf32> -> tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}

// Permutes in a row are one permute, or none where they undo each other.
// CHECK-LABEL: func.func @permutes
// CHECK: %[[P:.*]] = linnet.permute %arg0 {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NOT: linnet.permute
// CHECK: return %[[P]], %arg0
func.func @permutes(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  %a = linnet.permute %x {perm = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %b = linnet.permute %a {perm = array<i64: 2, 1, 0>} : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  %c = linnet.permute %a {perm = array<i64: 1, 0, 2>} : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  return %b, %c : tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// The transpose of a product is the product the other way round: a weight's
// cotangent (dYᵀ X)ᵀ = Xᵀ dY reads both as they lie (no permute of the
// result), and (a bᵀ)ᵀ = b aᵀ keeps transpose_b.
// CHECK-LABEL: func.func @transposed_products
// CHECK: %[[XT:.*]] = linnet.permute %arg1 {perm = array<i64: 1, 0>} : tensor<12x16xf32> -> tensor<16x12xf32>
// CHECK: %[[DW:.*]] = linnet.matmul %[[XT]], %arg0 : tensor<16x12xf32>, tensor<12x40xf32> -> tensor<16x40xf32>
// CHECK: %[[BA:.*]] = linnet.matmul %arg2, %arg3 {transpose_b} : tensor<5x16xf32>, tensor<3x16xf32> -> tensor<5x3xf32>
// CHECK: return %[[DW]], %[[BA]]
func.func @transposed_products(%dy: tensor<12x40xf32>, %x: tensor<12x16xf32>, %b: tensor<5x16xf32>,
                               %a: tensor<3x16xf32>) -> (tensor<16x40xf32>, tensor<5x3xf32>) {
  %dyt = linnet.permute %dy {perm = array<i64: 1, 0>} : tensor<12x40xf32> -> tensor<40x12xf32>
  %dwt = linnet.matmul %dyt, %x : tensor<40x12xf32>, tensor<12x16xf32> -> tensor<40x16xf32>
  %dw = linnet.permute %dwt {perm = array<i64: 1, 0>} : tensor<40x16xf32> -> tensor<16x40xf32>
  %ab = linnet.matmul %a, %b {transpose_b} : tensor<3x16xf32>, tensor<5x16xf32> -> tensor<3x5xf32>
  %ba = linnet.permute %ab {perm = array<i64: 1, 0>} : tensor<3x5xf32> -> tensor<5x3xf32>
  return %dw, %ba : tensor<16x40xf32>, tensor<5x3xf32>
}

// A stack against a matrix stays as it is: the other way round would be a
// broadcast product.
// CHECK-LABEL: func.func @stack_product
// CHECK: %[[P:.*]] = linnet.matmul %arg0, %arg1 {transpose_b}
// CHECK: linnet.permute %[[P]] {perm = array<i64: 0, 2, 1>}
func.func @stack_product(%x: tensor<2x3x16xf32>, %w: tensor<5x16xf32>) -> tensor<2x5x3xf32> {
  %t = linnet.permute %w {perm = array<i64: 1, 0>} : tensor<5x16xf32> -> tensor<16x5xf32>
  %y = linnet.matmul %x, %t : tensor<2x3x16xf32>, tensor<16x5xf32> -> tensor<2x3x5xf32>
  %z = linnet.permute %y {perm = array<i64: 0, 2, 1>} : tensor<2x3x5xf32> -> tensor<2x5x3xf32>
  return %z : tensor<2x5x3xf32>
}
