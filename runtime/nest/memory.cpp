#include "nest/memory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>

namespace linnet::nest {

namespace {

uint64_t bytesOf(const ParamInfo& t) {
  // Saturating: a shape of huge generics must not wrap to a small size.
  long double n = static_cast<long double>(linnet::byteSize(t.dtype));
  for (int64_t d : t.shape) n *= static_cast<long double>(std::max<int64_t>(d, 0));
  return n >= 1.8e19L ? UINT64_MAX : static_cast<uint64_t>(n);
}

uint64_t add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// "state 476.84 GiB in 4 tensors (the largest `layers.0.attention.cache_k` f32[1, 2, 1000000000, 16])";
// with `sizedBy`, the generics whose value is that tensor's largest dimension.
std::string part(const char* what, const std::vector<ParamInfo>& ts, const std::map<std::string, int64_t>& dims,
                 std::vector<std::string>* sizedBy) {
  if (ts.empty()) return fmt::format("no {}", what);
  const ParamInfo* big = &ts[0];
  for (const ParamInfo& t : ts)
    if (bytesOf(t) > bytesOf(*big)) big = &t;
  int64_t widest = big->shape.empty() ? 0 : *std::max_element(big->shape.begin(), big->shape.end());
  if (sizedBy)
    for (const auto& [k, v] : dims)
      if (v == widest && widest > 1) sizedBy->push_back(k);
  if (ts.size() == 1) return fmt::format("{} {} in `{}`", what, formatBytes(bytesOf(ts)), big->path);
  return fmt::format("{} {} in {} tensors (the largest `{}` {}[{}])", what, formatBytes(bytesOf(ts)), ts.size(),
                     big->path, linnet::name(big->dtype), fmt::join(big->shape, ", "));
}

std::string describe(const Footprint& f, const std::string& lead) {
  std::vector<std::string> sizedBy;
  uint64_t total = add(bytesOf(f.params), bytesOf(f.states));
  // The larger part first: it is the one to shrink.
  bool stateFirst = bytesOf(f.states) >= bytesOf(f.params);
  const char* big = stateFirst ? "state" : "params";
  std::string first = part(big, stateFirst ? f.states : f.params, f.dims, &sizedBy);
  std::string second = part(stateFirst ? "params" : "state", stateFirst ? f.params : f.states, f.dims, nullptr);
  uint64_t ram = physicalMemory();
  std::vector<std::string> named, sets;
  for (const std::string& k : sizedBy) {
    named.push_back(fmt::format("{} = {}", k, f.dims.at(k)));
    sets.push_back(fmt::format("--set {}=...", k));
  }
  std::string fix = sizedBy.empty() ? "use smaller generics (--set)"
                                    : fmt::format("The {} {} sized by {}: lower {} ({})", big, stateFirst ? "is" : "are", fmt::join(named, ", "),
                                                  sizedBy.size() == 1 ? "it" : "them", fmt::join(sets, ", "));
  return fmt::format("{} {}: {} and {}; {}. {}", lead, formatBytes(total), first, second,
                     ram ? fmt::format("this machine has {} of memory", formatBytes(ram))
                         : std::string("that could not be allocated"),
                     fix);
}

}  // namespace

uint64_t bytesOf(const std::vector<ParamInfo>& tensors) {
  uint64_t n = 0;
  for (const ParamInfo& t : tensors) n = add(n, bytesOf(t));
  return n;
}

uint64_t physicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size) : 0;
}

std::string formatBytes(uint64_t b) {
  if (b == UINT64_MAX) return "more than 16 EiB";
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} bytes", b) : fmt::format("{:.2f} {}", v, units[u]);
}

void checkFootprint(const Footprint& f) {
  uint64_t ram = physicalMemory();
  if (ram && add(bytesOf(f.params), bytesOf(f.states)) > ram)
    throw Error(describe(f, "not loading: the model needs"));
}

Error allocationFailure(const Footprint& f, const std::string& during) {
  return Error(describe(f, fmt::format("out of memory {}: the model needs", during)));
}

}  // namespace linnet::nest
