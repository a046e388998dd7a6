#include "device/cuda/graph_policy.h"

#include <utility>

namespace linnet::device::cuda {

GraphPolicy::Step GraphPolicy::next(const std::vector<std::uint64_t>& addresses) {
  if (gaveUp_ || plainCalls_ == 0) return Step::Plain;
  if (haveGraph_ && addresses == addresses_) return Step::Replay;
  if (recaptures_ >= kMaxRecaptures) {
    movedTooOften_ = true;
    giveUp();
    return Step::Plain;
  }
  return Step::Capture;
}

void GraphPolicy::captured(std::vector<std::uint64_t> addresses) {
  haveGraph_ = true;
  addresses_ = std::move(addresses);
  ++recaptures_;
}

void GraphPolicy::giveUp() {
  gaveUp_ = true;
  haveGraph_ = false;
  addresses_.clear();
}

}  // namespace linnet::device::cuda
