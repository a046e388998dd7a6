#include "device/cuda/profiler.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

namespace linnet::device::cuda {

Profiler::Profiler(std::shared_ptr<const DriverApi> api, std::string path)
    : api_(std::move(api)), path_(std::move(path)) {}

Profiler::~Profiler() {
  // Nothing can be reported from a destructor: a file that cannot be
  // written is said on stderr.
  std::ofstream out(path_);
  if (out) out << json() << "\n";
  if (!out) fmt::print(stderr, "linnet: LINNET_CUDA_PROFILE: could not write {}\n", path_);
  for (CUevent e : all_) api_->cuEventDestroy(e);
}

CUevent Profiler::event() {
  if (!spare_.empty()) {
    CUevent e = spare_.back();
    spare_.pop_back();
    return e;
  }
  CUevent e = nullptr;
  api_->check(api_->cuEventCreate(&e, 0), "cuEventCreate");
  all_.push_back(e);
  return e;
}

void Profiler::beginEntry(const std::string& entry) {
  entry_ = entry;
  ++entryCalls_[entry];
  for (const Pending& p : pending_) spare_.insert(spare_.end(), {p.start, p.end});
  pending_.clear();
  if (open_) spare_.push_back(std::exchange(open_, nullptr));
}

void Profiler::before(CUstream stream) {
  if (!open_) open_ = event();
  api_->check(api_->cuEventRecord(open_, stream), "cuEventRecord");
}

void Profiler::after(CUstream stream, const std::string& name, const std::string& family) {
  if (!open_) return;
  CUevent end = event();
  api_->check(api_->cuEventRecord(end, stream), "cuEventRecord");
  auto key = std::make_tuple(entry_, name, family);
  auto [it, added] = index_.emplace(key, operations_.size());
  if (added) {
    operations_.push_back(key);
    totals_.push_back({});
  }
  pending_.push_back({std::exchange(open_, nullptr), end, it->second});
}

void Profiler::endEntry() {
  for (const Pending& p : pending_) {
    api_->check(api_->cuEventSynchronize(p.end), "cuEventSynchronize");
    float ms = 0;
    api_->check(api_->cuEventElapsedTime(&ms, p.start, p.end), "cuEventElapsedTime");
    ++totals_[p.operation].calls;
    totals_[p.operation].ms += ms;
    spare_.insert(spare_.end(), {p.start, p.end});
  }
  pending_.clear();
}

std::string Profiler::json() const {
  nlohmann::ordered_json j;
  j["entries"] = nlohmann::ordered_json::object();
  for (const auto& [entry, calls] : entryCalls_) j["entries"][entry] = calls;
  j["operations"] = nlohmann::ordered_json::array();
  std::map<std::pair<std::string, std::string>, Total> families;
  for (std::size_t k = 0; k < operations_.size(); ++k) {
    const auto& [entry, name, family] = operations_[k];
    j["operations"].push_back(
        {{"entry", entry}, {"name", name}, {"family", family}, {"calls", totals_[k].calls}, {"ms", totals_[k].ms}});
    Total& f = families[{entry, family}];
    f.calls += totals_[k].calls;
    f.ms += totals_[k].ms;
  }
  j["families"] = nlohmann::ordered_json::array();
  for (const auto& [key, total] : families)
    j["families"].push_back({{"entry", key.first}, {"family", key.second}, {"calls", total.calls}, {"ms", total.ms}});
  return j.dump(1);
}

}  // namespace linnet::device::cuda
