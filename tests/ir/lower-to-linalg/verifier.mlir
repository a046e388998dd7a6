// The dialect's verifiers reject malformed ops with a message.
// RUN: not %linnet-opt %s --split-input-file 2>&1 | FileCheck %s

// CHECK: error: 'linnet.binary' op operand shapes do not broadcast to the result shape
func.func @bad_broadcast(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  %0 = linnet.binary add %a, %b : tensor<4xf32>, tensor<3xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: error: custom op 'linnet.unary' expected string or keyword containing one of the following enum values for attribute 'kind' [neg, not, exp
func.func @bad_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linnet.unary cube %a : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: error: 'linnet.reshape' op reshape changes the number of elements
func.func @bad_reshape(%a: tensor<4xf32>) -> tensor<5xf32> {
  %0 = linnet.reshape %a : tensor<4xf32> -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// CHECK: error: 'linnet.write_slice' op dimension 2 differs off the written axis
func.func @bad_write_slice(%d: tensor<2x6x4xf32>, %x: tensor<2x1x3xf32>, %p: tensor<i32>) -> tensor<2x6x4xf32> {
  %0 = linnet.write_slice %x into %d at %p {axis = 1 : i64} : (tensor<2x6x4xf32>, tensor<2x1x3xf32>, tensor<i32>) -> tensor<2x6x4xf32>
  return %0 : tensor<2x6x4xf32>
}

// -----

// CHECK: error: 'linnet.write_slice' op start must be a rank-0 integer tensor
func.func @bad_write_start(%d: tensor<2x6x4xf32>, %x: tensor<2x1x4xf32>, %p: tensor<f32>) -> tensor<2x6x4xf32> {
  %0 = linnet.write_slice %x into %d at %p {axis = 1 : i64} : (tensor<2x6x4xf32>, tensor<2x1x4xf32>, tensor<f32>) -> tensor<2x6x4xf32>
  return %0 : tensor<2x6x4xf32>
}

// -----

// CHECK: error: 'linnet.attention' op mask must be i1 and broadcast to the scores
func.func @bad_attention_mask(%q: tensor<1x2x1x8xf32>, %k: tensor<1x16x8xf32>, %v: tensor<1x16x8xf32>, %s: tensor<f32>, %m: tensor<15xi1>) -> tensor<1x2x1x8xf32> {
  %0 = linnet.attention %q, %k, %v, %s, %m : (tensor<1x2x1x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>, tensor<f32>, tensor<15xi1>) -> tensor<1x2x1x8xf32>
  return %0 : tensor<1x2x1x8xf32>
}
