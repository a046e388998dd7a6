// An op that no pattern lowers fails the pass with an error at the op's
// location, instead of staying in the IR: here kinds that the verifiers
// accept but that have no lowering for the element type. (A kind the
// dialect does not know does not parse: verifier.mlir.)
// RUN: not %linnet-opt --linnet-to-linalg --split-input-file %s 2>&1 | FileCheck %s

// No integer `pow`.
// CHECK: unlowered.mlir:[[@LINE+3]]:8: error: failed to legalize operation 'linnet.binary'
// CHECK: note: see current operation: {{.*}}<{kind = 20 : i32}>
func.func @integer_pow(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = linnet.binary pow %a, %a : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// No integer `exp` (it used to become `abs`).
// CHECK: unlowered.mlir:[[@LINE+3]]:8: error: failed to legalize operation 'linnet.unary'
// CHECK: note: see current operation: {{.*}}<{kind = 2 : i32}>
func.func @integer_exp(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = linnet.unary exp %a : tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// No integer `mean` (it used to be a sum).
// CHECK: unlowered.mlir:[[@LINE+3]]:8: error: failed to legalize operation 'linnet.reduce'
// CHECK: note: see current operation: {{.*}}kind = 1 : i32
func.func @integer_mean(%a: tensor<3x8xi32>) -> tensor<3xi32> {
  %0 = linnet.reduce mean %a {axes = array<i64: 1>} : tensor<3x8xi32> -> tensor<3xi32>
  return %0 : tensor<3xi32>
}
