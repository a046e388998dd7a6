// `linnet bench decode|prefill`: a model's decode and prefill speed, set
// against figures of this machine measured in the same run.
//
//   decode:  Batch * N tokens through the `decode` entry, timed; the bytes
//            one step reads (every parameter once as held, and the keys and
//            values attention reads up to the position); this machine's
//            memory read bandwidth (a STREAM-like sum over a buffer of at least
//            4x the last-level cache); and the fraction of the bandwidth bound
//            reached, (bytes/token * tokens/s) / bandwidth.
//   prefill: the `prefill` entry on a prompt of S tokens; the FLOP/s that
//            implies (2 * 2-D weight values * tokens) against the rate of a
//            cache-blocked f32 GEMM of our own, single-threaded.
//
//   rows, paged: `Rows` requests decoded together through decode_rows or
//            decode_paged (bench_rows.cpp), to set one against the other.
//
// bench/decode/README.md says how to run it and how to read the figures.
#pragma once

#include <cstdint>
#include <string>

#include "nest/nest.h"

namespace linnet::bench {

struct Options {
  std::string mode;  // "decode", "prefill", "rows" or "paged"
  std::string package;
  nest::LoadOptions load;
  int64_t steps = -1;      // timed calls; -1: the mode's default (decode 32, prefill 3)
  int64_t promptLen = -1;  // -1: the mode's default (decode 8, prefill 64)
  int64_t warmup = 1;      // untimed calls first (the compiled backend builds code on first use)
  bool json = false;       // one JSON object instead of the table
  int64_t rows = 4;        // paged: requests decoded together
};

// Runs the benchmark and prints its report on stdout. Failures (a missing
// entry, an entry of another signature, a model that cannot load) throw
// nest::Error with the message `linnet` prints.
void run(const Options& options);
// rows and paged (bench_rows.cpp): decode_rows or decode_paged steps.
void runRows(const Options& options, nest::Model& model);

// This machine, measured now.
struct Bandwidth {
  double bytesPerSecond = 0;  // best of the repetitions
  int threads = 0;
};
// Sums `bytes` of floats with `threads` threads (each its own slice), best of `reps`.
Bandwidth readBandwidth(size_t bytes, int threads, int reps);
// The memory read buffer's size: 1 GiB, or 4x the last-level cache if larger.
size_t bandwidthBufferBytes();
// The last-level cache's size in bytes as /sys reports it, 0 if unknown.
size_t lastLevelCacheBytes();

struct GemmRate {
  double flopsPerSecond = 0;  // best of the repetitions
  std::string kernel;         // which instruction set our kernel ran with: "avx512", "avx2+fma", "sse2"
  int n = 0;
};
// C = A * B for n x n f32 matrices (n a multiple of 128) with our own
// cache-blocked kernel on one thread, best of `reps`; spot-checked against
// plain dot products.
GemmRate gemmRate(int n, int reps);

// How many threads a backend computes with (both run on one thread today).
int backendThreads(const std::string& backend);

}  // namespace linnet::bench
