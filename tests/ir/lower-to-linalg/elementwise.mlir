// RUN: %linnet-opt --linnet-to-linalg %s | FileCheck %s

// Broadcasting is in the indexing maps: a size-1 axis reads index 0, a
// missing leading axis is dropped; nothing is materialized.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[COL]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK:   arith.addf
func.func @add_broadcast(%a: tensor<4x1xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = linnet.binary add %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// bf16 computes in f32 and rounds once.
// CHECK-LABEL: func.func @mul_bf16
// CHECK: ^bb0(%[[X:.*]]: bf16, %[[Y:.*]]: bf16, %{{.*}}: bf16):
// CHECK:   %[[FX:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK:   %[[FY:.*]] = arith.extf %[[Y]] : bf16 to f32
// CHECK:   %[[P:.*]] = arith.mulf %[[FX]], %[[FY]] : f32
// CHECK:   arith.truncf %[[P]] : f32 to bf16
func.func @mul_bf16(%a: tensor<8xbf16>, %b: tensor<8xbf16>) -> tensor<8xbf16> {
  %0 = linnet.binary mul %a, %b : tensor<8xbf16>, tensor<8xbf16> -> tensor<8xbf16>
  return %0 : tensor<8xbf16>
}

// Integer division is total: x / 0 = 0, MIN / -1 wraps, no UB reaches LLVM.
// CHECK-LABEL: func.func @div_i32
// CHECK: arith.cmpi eq
// CHECK: arith.select
// CHECK: arith.divsi
// CHECK: arith.select
func.func @div_i32(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = linnet.binary div %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// CHECK-LABEL: func.func @sigmoid
// CHECK: math.exp
// CHECK: arith.divf
func.func @sigmoid(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linnet.unary sigmoid %a : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Float to int: non-finite and out-of-range values give 0.
// CHECK-LABEL: func.func @to_int
// CHECK: math.absf
// CHECK: arith.cmpf olt
// CHECK: arith.fptosi {{.*}} : f32 to i64
// CHECK: arith.trunci {{.*}} : i64 to i32
func.func @to_int(%a: tensor<4xf32>) -> tensor<4xi32> {
  %0 = linnet.cast %a : tensor<4xf32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// `>>` is logical (zeros shift in); a count outside 0 .. bits - 1 gives 0.
// CHECK-LABEL: func.func @shr_i32
// CHECK: ^bb0(%[[X:.*]]: i32, %[[Y:.*]]: i32, %{{.*}}: i32):
// CHECK-DAG: %[[NEG:.*]] = arith.cmpi slt, %[[Y]]
// CHECK-DAG: %[[BIG:.*]] = arith.cmpi sge, %[[Y]]
// CHECK:     %[[BAD:.*]] = arith.ori
// CHECK:     %[[SAFE:.*]] = arith.select %[[BAD]], %{{.*}}, %[[Y]]
// CHECK-NOT: arith.shrsi
// CHECK:     %[[R:.*]] = arith.shrui %[[X]], %[[SAFE]] : i32
// CHECK:     arith.select %[[BAD]], %{{.*}}, %[[R]]
func.func @shr_i32(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = linnet.binary shr %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// An integer to bf16 or f16 rounds once: it is rounded to 8 (bf16) or 11
// (f16) significant bits in integers, which f32 and the dtype hold exactly
// (sitofp to f32 then truncf would round twice).
// CHECK-LABEL: func.func @i32_to_bf16
// CHECK-NOT: arith.sitofp
// CHECK: %[[A:.*]] = math.absi
// CHECK: math.ctlz %[[A]] : i32
// CHECK: arith.constant 24 : i32
// CHECK: arith.select %{{.*}}, %[[A]], %{{.*}} : i32
// CHECK: %[[F:.*]] = arith.uitofp %{{.*}} : i32 to f32
// CHECK: %[[N:.*]] = arith.negf %[[F]]
// CHECK: %[[S:.*]] = arith.select %{{.*}}, %[[N]], %[[F]] : f32
// CHECK: arith.truncf %[[S]] : f32 to bf16
func.func @i32_to_bf16(%a: tensor<4xi32>) -> tensor<4xbf16> {
  %0 = linnet.cast %a : tensor<4xi32> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// CHECK-LABEL: func.func @i64_to_f16
// CHECK-NOT: arith.sitofp
// CHECK: math.ctlz %{{.*}} : i64
// CHECK: arith.constant 53 : i64
// CHECK: arith.uitofp %{{.*}} : i64 to f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @i64_to_f16(%a: tensor<4xi64>) -> tensor<4xf16> {
  %0 = linnet.cast %a : tensor<4xi64> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// To f32, sitofp alone rounds once, from i64 too.
// CHECK-LABEL: func.func @i64_to_f32
// CHECK: ^bb0(%[[X:.*]]: i64, %{{.*}}: f32):
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[X]] : i64 to f32
// CHECK-NEXT: linalg.yield %[[F]] : f32
func.func @i64_to_f32(%a: tensor<4xi64>) -> tensor<4xf32> {
  %0 = linnet.cast %a : tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
