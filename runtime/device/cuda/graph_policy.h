// When one entry of a loaded artifact runs as a CUDA graph (the driver
// calls are in cuda_executable.cpp; this is the decision alone, so it is
// tested without a GPU).
//
// The design: a graph replays the kernels, copies and fills of one call with
// the addresses they had when captured: the arguments', the arena's (which
// repeat from call to call) and nothing else, since the host code never reads
// device memory and an entry's shapes are fixed. So a graph is valid for a
// call exactly when every argument has the address it had at capture, and a
// call whose arguments moved is captured again (and replayed). Copying
// arguments into fixed slots would avoid that, but the device's block pool
// already gives a step the previous step's addresses, and params and states
// never move, so recapture is rare; an entry that has been captured
// kMaxRecaptures times in a row without a replay runs without a graph from
// then on. The first call runs plainly, so lookups and the arena's growth are
// done before capturing. A capture that fails for any reason leaves the
// entry without a graph (the caller reports why) and the call runs plainly.
#pragma once

#include <cstdint>
#include <vector>

namespace linnet::device::cuda {

class GraphPolicy {
 public:
  static constexpr int kMaxRecaptures = 4;
  enum class Step { Plain, Capture, Replay };

  // What to do for a call whose arguments are at `addresses`.
  Step next(const std::vector<std::uint64_t>& addresses);
  void ranPlainly() { ++plainCalls_; }
  void captured(std::vector<std::uint64_t> addresses);
  void replayed() { recaptures_ = 0; }
  // The entry runs without a graph from now on.
  void giveUp();
  bool gaveUp() const { return gaveUp_; }
  // next() gave up because arguments keep moving (for the caller's report).
  bool movedTooOften() const { return movedTooOften_; }

 private:
  int plainCalls_ = 0;
  bool haveGraph_ = false;
  std::vector<std::uint64_t> addresses_;  // the captured graph's arguments
  int recaptures_ = 0;                    // captures since the last replay
  bool gaveUp_ = false;
  bool movedTooOften_ = false;
};

}  // namespace linnet::device::cuda
