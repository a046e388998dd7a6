// The packed ops check that the weight holds whole rows of K in its format.
// RUN: %linnet-opt %s --split-input-file --verify-diagnostics

func.func @rows_of_the_wrong_size(%x: tensor<1x32xf32>, %w: tensor<4x18xi8>) -> tensor<1x4xf32> {
  // expected-error @+1 {{a q4_1 weight of K = 32 must be i8 with 20 bytes per row}}
  %y = linnet.packed_matmul "q4_1" %x, %w : tensor<1x32xf32>, tensor<4x18xi8> -> tensor<1x4xf32>
  return %y : tensor<1x4xf32>
}

// -----

func.func @k_not_whole_blocks(%x: tensor<1x40xf32>, %w: tensor<4x34xi8>) -> tensor<1x4xf32> {
  // expected-error @+1 {{K = 40 is not a whole number of q8_0 blocks}}
  %y = linnet.packed_matmul "q8_0" %x, %w : tensor<1x40xf32>, tensor<4x34xi8> -> tensor<1x4xf32>
  return %y : tensor<1x4xf32>
}

// -----

func.func @unknown_format(%w: tensor<4x34xi8>) -> tensor<4x32xf32> {
  // expected-error @+1 {{unknown storage format `q3_x`}}
  %y = linnet.unpack "q3_x" %w : tensor<4x34xi8> -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}
