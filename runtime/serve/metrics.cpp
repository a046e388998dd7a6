#include "serve/metrics.h"

#include <fmt/format.h>

#include <stdexcept>

namespace linnet::serve {

namespace {

struct Declared {
  const char* name;
  const char* type;
  const char* help;
};

// Every metric, declared once.
const Declared kDeclared[] = {
    {"linnet:num_requests_running", "gauge", "Requests holding a row of the batch."},
    {"linnet:num_requests_waiting", "gauge", "Requests waiting for a row."},
    {"linnet:kv_cache_usage_perc", "gauge", "Fraction of the usable KV pages held by requests."},
    {"linnet:compiled_shapes", "gauge", "Entry shapes compiled (or found in the cache) at warm-up."},
    {"linnet:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache."},
    {"linnet:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache."},
    {"linnet:num_preemptions_total", "counter", "Requests preempted (to be recomputed) when pages ran out."},
    {"linnet:prompt_tokens_total", "counter", "Prompt tokens computed."},
    {"linnet:generation_tokens_total", "counter", "Tokens generated."},
    {"linnet:requests_rejected_total", "counter", "Requests refused, by reason."},
    {"linnet:requests_cancelled_total", "counter", "Requests whose client went away."},
    {"linnet:requests_finished_total", "counter", "Requests finished, by finish reason."},
    {"linnet:engine_steps_total", "counter", "Model calls the engine made, by entry."},
    {"linnet:engine_step_seconds_total", "counter", "Time in model calls, by entry."},
    {"linnet:engine_padding_tokens_total", "counter", "Prompt positions padded to a bucket (computed, unused)."},
};

const Declared kHistograms[] = {
    {"linnet:time_to_first_token_seconds", "histogram", "From arrival to the first generated token."},
    {"linnet:inter_token_latency_seconds", "histogram", "Between consecutive tokens of a request."},
    {"linnet:e2e_request_latency_seconds", "histogram", "From arrival to the end of a request."},
    {"linnet:request_queue_time_seconds", "histogram", "From arrival to admission into the batch."},
};

const std::vector<double> kBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                     0.75,  1.0,   2.5,  5.0,  7.5,  10,   20,   40,  80,   160};

std::string number(double v) { return fmt::format("{}", v); }

}  // namespace

Metrics::Metrics() {
  for (const auto& d : kDeclared) {
    Family& f = families_[d.name];
    f.type = d.type;
    f.help = d.help;
    std::string n = d.name;
    if (n != "linnet:requests_rejected_total" && n != "linnet:requests_finished_total" &&
        n != "linnet:engine_steps_total" && n != "linnet:engine_step_seconds_total")
      f.values[""] = 0;
  }
  for (const auto& d : kHistograms) {
    auto& [help, h] = histograms_[d.name];
    help = d.help;
    h.bounds = kBounds;
    h.counts.assign(kBounds.size() + 1, 0);
  }
}

void Metrics::add(const std::string& counter, double by, const std::string& labels) {
  std::lock_guard lock(mutex_);
  auto it = families_.find(counter);
  if (it == families_.end() || it->second.type != "counter") throw std::logic_error("metrics: no counter " + counter);
  it->second.values[labels] += by;
}

void Metrics::set(const std::string& gauge, double value) {
  std::lock_guard lock(mutex_);
  auto it = families_.find(gauge);
  if (it == families_.end() || it->second.type != "gauge") throw std::logic_error("metrics: no gauge " + gauge);
  it->second.values[""] = value;
}

void Metrics::observe(const std::string& histogram, double seconds) {
  std::lock_guard lock(mutex_);
  auto it = histograms_.find(histogram);
  if (it == histograms_.end()) throw std::logic_error("metrics: no histogram " + histogram);
  Histogram& h = it->second.second;
  size_t k = 0;
  while (k < h.bounds.size() && seconds > h.bounds[k]) ++k;
  ++h.counts[k];
  h.sum += seconds;
  ++h.count;
}

double Metrics::value(const std::string& name, const std::string& labels) const {
  std::lock_guard lock(mutex_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    auto v = it->second.values.find(labels);
    return v == it->second.values.end() ? 0 : v->second;
  }
  auto h = histograms_.find(name);
  return h == histograms_.end() ? 0 : static_cast<double>(h->second.second.count);
}

std::string Metrics::prometheus() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f.help, name, f.type);
    for (const auto& [labels, v] : f.values)
      out += labels.empty() ? fmt::format("{} {}\n", name, number(v))
                            : fmt::format("{}{{{}}} {}\n", name, labels, number(v));
  }
  for (const auto& [name, entry] : histograms_) {
    const auto& [help, h] = entry;
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    uint64_t cumulative = 0;
    for (size_t k = 0; k < h.bounds.size(); ++k) {
      cumulative += h.counts[k];
      out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, number(h.bounds[k]), cumulative);
    }
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, h.count, name, number(h.sum),
                       name, h.count);
  }
  return out;
}

}  // namespace linnet::serve
