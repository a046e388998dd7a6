// RUN: %linnet-opt --linnet-to-linalg %s | FileCheck %s

// An index that is an iota along a result axis is that loop's index: no
// load; other indices are read elementwise and clamped into range.
// CHECK-LABEL: func.func @gather_rows
// CHECK: linalg.generic
// CHECK: ^bb0(%[[ID:.*]]: i32, %{{.*}}: f32):
// CHECK:   %[[I:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK:   arith.maxsi %[[I]]
// CHECK:   arith.minsi
// CHECK:   %[[H:.*]] = linalg.index 2 : index
// CHECK:   tensor.extract %{{.*}}[%{{.*}}, %[[H]]] : tensor<16x4xf32>
func.func @gather_rows(%table: tensor<16x4xf32>, %ids: tensor<2x3x1xi32>) -> tensor<2x3x4xf32> {
  %iota = linnet.iota {axis = 2 : i64} : tensor<1x1x4xi64>
  %0 = linnet.gather %table[%ids, %iota] : (tensor<16x4xf32>, tensor<2x3x1xi32>, tensor<1x1x4xi64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// x[:, pos, :] with a runtime position: a clamped dynamic offset, rank-reducing.
// CHECK-LABEL: func.func @slice_at
// CHECK: %[[P:.*]] = tensor.extract %{{.*}}[] : tensor<i32>
// CHECK: arith.index_cast %[[P]]
// CHECK: tensor.extract_slice %{{.*}}[0, %{{.*}}, 0] [2, 1, 4] [1, 1, 1] : tensor<2x6x4xf32> to tensor<2x4xf32>
func.func @slice_at(%x: tensor<2x6x4xf32>, %pos: tensor<i32>) -> tensor<2x4xf32> {
  %0 = linnet.slice %x[%pos] {items = array<i64: -1, 0, -1>, lo = array<i64: 0, 0, 0>, hi = array<i64: 2, 0, 4>} : (tensor<2x6x4xf32>, tensor<i32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// Reshape goes through one flat axis: views after bufferization, not copies.
// CHECK-LABEL: func.func @reshape
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [6, 4] : tensor<24xf32> into tensor<6x4xf32>
func.func @reshape(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = linnet.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// CHECK-LABEL: func.func @concat
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x8xf32>
// CHECK: %[[A:.*]] = tensor.insert_slice %{{.*}} into %[[E]][0, 0] [2, 3] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[A]][0, 3] [2, 5] [1, 1]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %0 = linnet.concat %a, %b {axis = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @permute
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3xf32>) outs(%{{.*}} : tensor<3x2xf32>) permutation = [1, 0]
func.func @permute(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = linnet.permute %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// A write at a runtime position: the start clamped to -n .. m (no
// overflow), the part inside dest cut from x and inserted: only those
// positions are copied once bufferized.
// CHECK-LABEL: func.func @write_slice_at
// CHECK: %[[S:.*]] = tensor.extract %{{.*}}[] : tensor<i32>
// CHECK: arith.extsi %[[S]] : i32 to i64
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: %[[PIECE:.*]] = tensor.extract_slice %{{.*}}[0, %{{.*}}, 0] [2, %[[LEN:.*]], 4] [1, 1, 1] : tensor<2x3x4xf32> to tensor<2x?x4xf32>
// CHECK: tensor.insert_slice %[[PIECE]] into %{{.*}}[0, %{{.*}}, 0] [2, %[[LEN]], 4] [1, 1, 1] : tensor<2x?x4xf32> into tensor<2x6x4xf32>
func.func @write_slice_at(%cache: tensor<2x6x4xf32>, %x: tensor<2x3x4xf32>, %pos: tensor<i32>) -> tensor<2x6x4xf32> {
  %0 = linnet.write_slice %x into %cache at %pos {axis = 1 : i64} : (tensor<2x6x4xf32>, tensor<2x3x4xf32>, tensor<i32>) -> tensor<2x6x4xf32>
  return %0 : tensor<2x6x4xf32>
}

// A start per row: one insertion per row, in a loop carrying the destination.
// CHECK-LABEL: func.func @write_slice_rows
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<3x6x4xf32>)
// CHECK:   tensor.extract %{{.*}}[%[[ROW]]] : tensor<3xi32>
// CHECK:   %[[PIECE:.*]] = tensor.extract_slice %{{.*}}[%[[ROW]], %{{.*}}, 0] [1, %[[LEN:.*]], 4] [1, 1, 1] : tensor<3x1x4xf32> to tensor<1x?x4xf32>
// CHECK:   tensor.insert_slice %[[PIECE]] into %[[ACC]][%[[ROW]], %{{.*}}, 0] [1, %[[LEN]], 4] [1, 1, 1] : tensor<1x?x4xf32> into tensor<3x6x4xf32>
func.func @write_slice_rows(%cache: tensor<3x6x4xf32>, %x: tensor<3x1x4xf32>, %pos: tensor<3xi32>) -> tensor<3x6x4xf32> {
  %0 = linnet.write_slice %x into %cache at %pos {axis = 1 : i64} : (tensor<3x6x4xf32>, tensor<3x1x4xf32>, tensor<3xi32>) -> tensor<3x6x4xf32>
  return %0 : tensor<3x6x4xf32>
}

// Points: one insertion per point, of size 1 along axis 0 when it lands
// inside dest and 0 when it does not.
// CHECK-LABEL: func.func @write_points
// CHECK: scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<3x6x4xf32>)
// CHECK:   arith.cmpi sge
// CHECK:   arith.cmpi slt
// CHECK:   %[[LEN:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK:   %[[PIECE:.*]] = tensor.extract_slice %{{.*}}[0, %[[P]], 0] [%[[LEN]], 1, 4] [1, 1, 1] : tensor<1x5x4xf32> to tensor<?x1x4xf32>
// CHECK:   tensor.insert_slice %[[PIECE]] into %[[ACC]][%{{.*}}, %{{.*}}, 0] [%[[LEN]], 1, 4] [1, 1, 1] : tensor<?x1x4xf32> into tensor<3x6x4xf32>
func.func @write_points(%cache: tensor<3x6x4xf32>, %x: tensor<1x5x4xf32>, %rows: tensor<5xi32>, %pos: tensor<5xi32>) -> tensor<3x6x4xf32> {
  %0 = linnet.write_points %x into %cache at %rows, %pos {axis = 1 : i64} : (tensor<3x6x4xf32>, tensor<1x5x4xf32>, tensor<5xi32>, tensor<5xi32>) -> tensor<3x6x4xf32>
  return %0 : tensor<3x6x4xf32>
}
