// Where an entry's device time goes, by kernel and by kernel family
// (LINNET_CUDA_PROFILE=FILE). Each launch, copy, fill and library product
// an entry queues is bracketed by two events on the stream; when the entry
// has finished, the events' times are added to its operation's totals, and
// FILE is rewritten with them as JSON when the device goes:
//
//   {"entries": {"decode": 33}, "operations": [{"entry", "name", "family",
//    "calls", "ms"}], "families": [{"entry", "family", "calls", "ms"}]}
//
// The family of a kernel is the manifest's (the template the CUDA target
// made it from: "gemv", "attention", "row_reduction", "elementwise"); a
// library product is "cublaslt", a copy "copy", a fill "fill". Graphs are off
// while profiling (a replayed graph has no events in it), and the events
// cost time of their own: a profile splits time, it does not time calls.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/cuda/driver_api.h"

namespace linnet::device::cuda {

class Profiler {
 public:
  Profiler(std::shared_ptr<const DriverApi> api, std::string path);
  ~Profiler();  // writes the file; events destroyed
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Around one call of `entry`.
  void beginEntry(const std::string& entry);
  // After the entry's work has finished: its events' times are added up.
  void endEntry();
  // Around one operation queued on `stream`.
  void before(CUstream stream);
  void after(CUstream stream, const std::string& name, const std::string& family);

  // The file's JSON text, as written when the profiler goes.
  std::string json() const;

 private:
  CUevent event();
  struct Pending {
    CUevent start, end;
    std::size_t operation;
  };
  struct Total {
    long calls = 0;
    double ms = 0;
  };
  std::shared_ptr<const DriverApi> api_;
  std::string path_;
  std::string entry_;
  std::vector<CUevent> spare_;
  std::vector<CUevent> all_;
  CUevent open_ = nullptr;  // the last before()'s event
  std::vector<Pending> pending_;
  // (entry, name, family) in the order first seen, and their totals.
  std::vector<std::tuple<std::string, std::string, std::string>> operations_;
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> index_;
  std::vector<Total> totals_;
  std::map<std::string, long> entryCalls_;
};

}  // namespace linnet::device::cuda
