// The optimizer's passes over every param, on threads. Work is cut into
// fixed pieces (a param's elements in runs of kPieceElements), so what a
// piece computes, and the order its partial results are combined in, never
// depend on the thread count: a run gives the same bits on 1 thread or 16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace linnet::train {

inline constexpr size_t kPieceElements = size_t{1} << 16;

// Elements [begin, end) of array `array`.
struct Piece {
  size_t array = 0;
  size_t begin = 0, end = 0;
};

// Arrays of `sizes` elements cut into pieces, in order of array then place.
std::vector<Piece> piecesOf(std::span<const size_t> sizes);

// Calls body(k) once for every k in [0, count), on up to `threads` threads
// (the caller's among them; 0: every core). body must not throw.
void parallelFor(size_t count, int threads, const std::function<void(size_t)>& body);

}  // namespace linnet::train
