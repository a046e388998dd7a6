// RUN: %linnet-opt --linnet-to-linalg %s | FileCheck %s

// An op whose result has no elements computes nothing: a tensor.empty of
// its type, whatever the op (`--generic S=0` made a gather at offset 0 of
// an empty dimension, invalid IR, before).
// CHECK-LABEL: func.func @empty_gather
// CHECK-NOT: linnet.
// CHECK-NOT: tensor.extract
// CHECK-NOT: linalg.
// CHECK: %[[E:.*]] = tensor.empty() : tensor<0x4xf32>
// CHECK-NEXT: return %[[E]]
func.func @empty_gather(%t: tensor<0xi64>, %f: tensor<4xf32>) -> tensor<0x4xf32> {
  %i = linnet.iota {axis = 0 : i64} : tensor<0x1xi64>
  %g = linnet.gather %t[%i] : (tensor<0xi64>, tensor<0x1xi64>) -> tensor<0x1xi64>
  %c = linnet.cast %g : tensor<0x1xi64> -> tensor<0x1xf32>
  %m = linnet.binary mul %c, %f : tensor<0x1xf32>, tensor<4xf32> -> tensor<0x4xf32>
  return %m : tensor<0x4xf32>
}

// A result with elements is lowered as always.
// CHECK-LABEL: func.func @not_empty
// CHECK: linalg.generic
func.func @not_empty(%a: tensor<2xf32>) -> tensor<2xf32> {
  %n = linnet.unary neg %a : tensor<2xf32> -> tensor<2xf32>
  return %n : tensor<2xf32>
}
