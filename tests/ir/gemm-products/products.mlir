// linnet-gemm-products: an f32 product with a matrix b, or of two stacks of
// matrices with the same stack axes (attention's), becomes packed_matmul
// "f32" with b read as it lies: [.., N, K] under transpose_b, else
// [.., K, N] marked w_kn (no transpose formed). A product that broadcasts a
// stack, a non-f32 product and a product with keep_columns stay linnet.matmul.
// RUN: %linnet-opt %s --linnet-gemm-products | FileCheck %s

// CHECK-LABEL: func.func @products(
func.func @products(%x: tensor<4x8xf32>, %g: tensor<4x6xf32>, %w: tensor<6x8xf32>, %q: tensor<2x4x8xf32>,
                    %k: tensor<2x8x5xf32>, %h: tensor<4x8xbf16>, %hw: tensor<8x3xbf16>, %keep: tensor<1x6xi1>,
                    %kt: tensor<2x5x8xf32>, %one: tensor<1x8x5xf32>)
    -> (tensor<4x6xf32>, tensor<4x8xf32>, tensor<2x4x5xf32>, tensor<4x3xbf16>, tensor<4x6xf32>, tensor<2x4x5xf32>,
        tensor<2x4x5xf32>) {
  // CHECK: linnet.packed_matmul "f32" %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  %a = linnet.matmul %x, %w {transpose_b} : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  // CHECK-NOT: linnet.permute
  // CHECK: linnet.packed_matmul "f32" %{{.*}}, %{{.*}} {w_kn} : tensor<4x6xf32>, tensor<6x8xf32> -> tensor<4x8xf32>
  %b = linnet.matmul %g, %w : tensor<4x6xf32>, tensor<6x8xf32> -> tensor<4x8xf32>
  // CHECK-NOT: linnet.permute
  // CHECK: linnet.packed_matmul "f32" %{{.*}}, %{{.*}} {w_kn} : tensor<2x4x8xf32>, tensor<2x8x5xf32> -> tensor<2x4x5xf32>
  %c = linnet.matmul %q, %k : tensor<2x4x8xf32>, tensor<2x8x5xf32> -> tensor<2x4x5xf32>
  // CHECK: linnet.packed_matmul "f32" %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<2x5x8xf32> -> tensor<2x4x5xf32>
  %f = linnet.matmul %q, %kt {transpose_b} : tensor<2x4x8xf32>, tensor<2x5x8xf32> -> tensor<2x4x5xf32>
  // CHECK: linnet.matmul %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<1x8x5xf32> -> tensor<2x4x5xf32>
  %g2 = linnet.matmul %q, %one : tensor<2x4x8xf32>, tensor<1x8x5xf32> -> tensor<2x4x5xf32>
  // CHECK: linnet.matmul %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x3xbf16> -> tensor<4x3xbf16>
  %d = linnet.matmul %h, %hw : tensor<4x8xbf16>, tensor<8x3xbf16> -> tensor<4x3xbf16>
  // CHECK: linnet.matmul %{{.*}}, %{{.*}} keep_columns
  %e = linnet.matmul %x, %w keep_columns %keep : tensor<1x6xi1> {transpose_b} : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  return %a, %b, %c, %d, %e, %f, %g2 : tensor<4x6xf32>, tensor<4x8xf32>, tensor<2x4x5xf32>, tensor<4x3xbf16>,
      tensor<4x6xf32>, tensor<2x4x5xf32>, tensor<2x4x5xf32>
}
