// The server's counters, gauges and histograms, and their Prometheus text
// (format 0.0.4). Names follow vLLM's (`vllm:` becomes `linnet:`), so its
// dashboards read them; docs/serve.md lists them. Thread-safe: the engine
// and the HTTP threads both record.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace linnet::serve {

class Metrics {
 public:
  Metrics();
  void add(const std::string& counter, double by = 1, const std::string& labels = "");
  void set(const std::string& gauge, double value);
  void observe(const std::string& histogram, double seconds);
  double value(const std::string& name, const std::string& labels = "") const;
  std::string prometheus() const;

 private:
  struct Histogram {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  struct Family {
    std::string type, help;
    std::map<std::string, double> values;  // by label text ("" or `reason="overloaded"`)
  };
  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
  std::map<std::string, std::pair<std::string, Histogram>> histograms_;  // help, data
};

}  // namespace linnet::serve
