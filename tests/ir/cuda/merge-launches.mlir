// The cuda target's merge of independent elementwise launches
// (merge_launches.h): a run of them becomes one launch over their blocks
// end to end, each block running the body its index falls in with the
// block index it had there; launches that share a written buffer, or that
// something other than host arithmetic, views and allocations stands
// between, stay apart.
// REQUIRES: cuda-target
// RUN: %linnet-opt --linnet-cuda-merge-launches %s | FileCheck %s

// Two entry arguments written by two launches, a third launch reading a
// fresh buffer, a view between them: one launch of 2 + 1 + 1 blocks of 256
// threads. The second and third were 64 and 128 threads wide: their
// blocks' other threads do nothing.
// CHECK-LABEL: func.func @entry(
// CHECK-SAME: %[[A:[^:]*]]: memref<300xf32>, %[[B:[^:]*]]: memref<64xf32>, %[[OUT:[^:]*]]: memref<64xf32>
// CHECK: %[[T:.*]] = gpu.alloc
// CHECK: %[[V:.*]] = memref.subview %[[B]]
// CHECK-NOT: gpu.launch
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4{{(_[0-9]+)?}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{(_[0-9]+)?}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %[[BX]], %c2{{.*}} : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK: arith.muli %[[BX]], %c256
// CHECK: memref.store %{{.*}}, %[[A]]
// CHECK: } else {
// CHECK: %[[SECOND:.*]] = arith.cmpi ult, %[[BX]], %c3{{.*}} : index
// CHECK-NEXT: scf.if %[[SECOND]] {
// CHECK: %[[OWN:.*]] = arith.subi %[[BX]], %c2{{.*}} : index
// CHECK: %[[NARROW:.*]] = arith.cmpi ult, %[[TX]], %c64{{.*}} : index
// CHECK-NEXT: scf.if %[[NARROW]] {
// CHECK: memref.load %[[V]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: } else {
// CHECK: arith.subi %[[BX]], %c3{{.*}} : index
// CHECK: arith.cmpi ult, %[[TX]], %c128{{.*}} : index
// CHECK: memref.store %{{.*}}, %[[T]]
// CHECK: } {linnet.kernel_family = "elementwise"}
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @entry(%a: memref<300xf32>, %b: memref<64xf32>, %out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %c300 = arith.constant 300 : index
  %one = arith.constant 1.0 : f32
  %t = gpu.alloc () : memref<128xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c256 : index
    %i = arith.addi %base, %tx : index
    %in = arith.cmpi ult, %i, %c300 : index
    scf.if %in {
      memref.store %one, %a[%i] : memref<300xf32>
    }
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  %v = memref.subview %b[0] [64] [1] : memref<64xf32> to memref<64xf32, strided<[1]>>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %x = memref.load %v[%tx] : memref<64xf32, strided<[1]>>
    memref.store %x, %out[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %one, %t[%tx] : memref<128xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  return
}

// The second launch reads the buffer the first writes: two launches.
// CHECK-LABEL: func.func @reads_what_was_written(
// CHECK-COUNT-2: gpu.launch blocks
func.func @reads_what_was_written(%out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %t = gpu.alloc () : memref<64xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %one, %t[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %x = memref.load %t[%tx] : memref<64xf32>
    memref.store %x, %out[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  return
}

// A private function's two arguments: one written, one read. Called with
// the same buffer for both, they may alias: two launches.
// CHECK-LABEL: func.func private @maybe_same(
// CHECK-COUNT-2: gpu.launch blocks
func.func private @maybe_same(%x: memref<64xf32>, %y: memref<64xf32>, %out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %one, %x[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %v = memref.load %y[%tx] : memref<64xf32>
    memref.store %v, %out[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  return
}
func.func @calls_maybe_same(%m: memref<2x64xf32>, %o: memref<64xf32>, %p: memref<64xf32>) {
  %s0 = memref.subview %m[0, 0] [1, 64] [1, 1] : memref<2x64xf32> to memref<64xf32, strided<[1]>>
  %s1 = memref.subview %m[1, 0] [1, 64] [1, 1] : memref<2x64xf32> to memref<64xf32, strided<[1], offset: 64>>
  %c0 = memref.cast %s0 : memref<64xf32, strided<[1]>> to memref<64xf32>
  %c1 = memref.reinterpret_cast %s1 to offset: [0], sizes: [64], strides: [1] : memref<64xf32, strided<[1], offset: 64>> to memref<64xf32>
  call @maybe_same(%o, %p, %o) : (memref<64xf32>, memref<64xf32>, memref<64xf32>) -> ()
  call @maybe_same(%c0, %c1, %o) : (memref<64xf32>, memref<64xf32>, memref<64xf32>) -> ()
  return
}

// The same, called only with distinct entry arguments: one launch.
// CHECK-LABEL: func.func private @distinct(
// CHECK-COUNT-1: gpu.launch blocks
// CHECK-NOT: gpu.launch blocks
// CHECK: return
func.func private @distinct(%x: memref<64xf32>, %y: memref<64xf32>, %out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %one, %x[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %v = memref.load %y[%tx] : memref<64xf32>
    memref.store %v, %out[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  return
}
func.func @calls_distinct(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>) {
  call @distinct(%a, %b, %c) : (memref<64xf32>, memref<64xf32>, memref<64xf32>) -> ()
  return
}

func.func private @opaque(memref<64xf32>)

// A call between two independent launches, and a launch of another family
// after them: nothing moves past either.
// CHECK-LABEL: func.func @kept_apart(
// CHECK: gpu.launch blocks
// CHECK: call @opaque
// CHECK: gpu.launch blocks
// CHECK: gpu.launch blocks
// CHECK: return
func.func @kept_apart(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>, %d: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %one, %a[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  call @opaque(%b) : (memref<64xf32>) -> ()
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %one, %c[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %one, %d[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "gemv"}
  return
}

// A buffer a loop carries is whatever it was given or made: the buffer
// allocated after the loop is not it (one launch), the one given to it
// before may be (two launches).
// CHECK-LABEL: func.func @after_a_loop(
// CHECK: scf.for
// CHECK: gpu.launch blocks
// CHECK-NOT: gpu.launch blocks
// CHECK: scf.for
// CHECK-COUNT-2: gpu.launch blocks
// CHECK: return
func.func @after_a_loop(%out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %given = gpu.alloc () : memref<64xf32>
  %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%b = %given) -> (memref<64xf32>) {
    %next = func.call @step(%b) : (memref<64xf32>) -> memref<64xf32>
    scf.yield %next : memref<64xf32>
  }
  %fresh = gpu.alloc () : memref<64xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %one, %fresh[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %x = memref.load %last[%tx] : memref<64xf32>
    memref.store %x, %out[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  %later = scf.for %i = %c0 to %c4 step %c1 iter_args(%b = %given) -> (memref<64xf32>) {
    %next = func.call @step(%b) : (memref<64xf32>) -> memref<64xf32>
    scf.yield %next : memref<64xf32>
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %one, %given[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %x = memref.load %later[%tx] : memref<64xf32>
    memref.store %x, %out[%tx] : memref<64xf32>
    gpu.terminator
  } {linnet.kernel_family = "elementwise"}
  return
}
func.func private @step(memref<64xf32>) -> memref<64xf32>
