// An op that no pattern lowers fails the pass with an error at the op's
// location, instead of staying in the IR: here kinds that the verifiers
// accept but that have no lowering for the element type.
// RUN: not %linnet-opt --linnet-to-linalg --split-input-file %s 2>&1 | FileCheck %s

// CHECK: unlowered.mlir:[[@LINE+3]]:8: error: failed to legalize operation 'linnet.binary'
// CHECK: note: see current operation: {{.*}}<{kind = "**"}>
func.func @unknown_binary(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linnet.binary "**" %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// No integer `pow`.
// CHECK: unlowered.mlir:[[@LINE+3]]:8: error: failed to legalize operation 'linnet.binary'
// CHECK: note: see current operation: {{.*}}<{kind = "pow"}>
func.func @integer_pow(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = linnet.binary "pow" %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// No integer `exp` (it used to become `abs`).
// CHECK: unlowered.mlir:[[@LINE+3]]:8: error: failed to legalize operation 'linnet.unary'
// CHECK: note: see current operation: {{.*}}<{kind = "exp"}>
func.func @integer_exp(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = linnet.unary "exp" %a : tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK: unlowered.mlir:[[@LINE+3]]:8: error: failed to legalize operation 'linnet.reduce'
// CHECK: note: see current operation: {{.*}}kind = "median"
func.func @unknown_reduce(%a: tensor<3x8xf32>) -> tensor<3xf32> {
  %0 = linnet.reduce "median" %a {axes = array<i64: 1>} : tensor<3x8xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// No integer `mean` (it used to be a sum).
// CHECK: unlowered.mlir:[[@LINE+3]]:8: error: failed to legalize operation 'linnet.reduce'
// CHECK: note: see current operation: {{.*}}kind = "mean"
func.func @integer_mean(%a: tensor<3x8xi32>) -> tensor<3xi32> {
  %0 = linnet.reduce "mean" %a {axes = array<i64: 1>} : tensor<3x8xi32> -> tensor<3xi32>
  return %0 : tensor<3xi32>
}
