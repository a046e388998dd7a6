// `linnet bench rows|paged`: a served decode step, `Rows` requests at once,
// through `decode_rows` (each request a row of the caches, Batch = Rows) or
// `decode_paged` (each request its own pages of one pool, Batch = 1). Run
// both at the same rows and positions to compare them (bench/decode/paged.sh):
// a paged step should cost its rows' pages, not the pool.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/units.h"
#include "tools/bench.h"

namespace linnet::bench {

namespace {

using Clock = std::chrono::steady_clock;
using nest::DType;
using nest::Error;
using nest::Tensor;

int64_t generic(const nest::Model& model, const std::string& name) {
  auto it = model.dims().find(name);
  if (it == model.dims().end())
    throw Error(fmt::format("bench: `{}` has no value for its generic `{}` here; pass --set {}=N", model.name(), name,
                            name));
  return it->second;
}

}  // namespace

void runRows(const Options& o, nest::Model& model) {
  bool paged = o.mode == "paged";
  std::string entry = paged ? "decode_paged" : "decode_rows";
  int64_t rows = paged ? o.rows : generic(model, "Batch"), maxSeq = generic(model, "MaxSeq");
  int64_t vocab = generic(model, "Vocab");
  int64_t start = o.promptLen >= 0 ? o.promptLen : 128, steps = o.steps > 0 ? o.steps : 32;
  int64_t warmup = std::max<int64_t>(o.warmup, 0), last = start + warmup + steps;
  if (paged && generic(model, "Batch") != 1)
    throw Error("bench paged: load the pool with --set Batch=1 (its MaxSeq positions are the pool)");
  if (rows < 1) throw Error(fmt::format("bench {}: {} rows; give --rows N (N >= 1)", o.mode, rows));
  // Each row owns a run of pages as large as decode_rows gives a row.
  int64_t pageSize = paged ? generic(model, "PageSize") : 1;
  int64_t perRow = paged ? maxSeq / rows : maxSeq, pages = perRow / pageSize;
  if (last > pages * pageSize)
    throw Error(fmt::format("bench {}: positions up to {} do not fit the {} positions a row has (MaxSeq {}{}); "
                            "raise MaxSeq or lower --prompt-len/--steps",
                            o.mode, last, pages * pageSize, maxSeq, paged ? fmt::format(" / {} rows", rows) : ""));
  Tensor table = Tensor::zeros(DType::I32, {rows, pages});
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t j = 0; j < pages; ++j) table.setInt(b * pages + j, b * pages + j);
  std::map<std::string, int64_t> generics;
  if (paged) generics = {{"Rows", rows}, {"Pages", pages}};
  auto step = [&](int64_t p) {
    Tensor tokens = Tensor::zeros(DType::I32, {rows, 1}), positions = Tensor::zeros(DType::I32, {rows});
    for (int64_t b = 0; b < rows; ++b) {
      tokens.setInt(b, (7 * (b + p) + 1) % std::max<int64_t>(vocab, 1));
      positions.setInt(b, p);
    }
    std::vector<Tensor> args = {tokens, positions};
    if (paged) args.push_back(table);
    model.call(entry, args, generics);
  };
  for (int64_t w = 0; w < warmup; ++w) step(start + w);
  std::vector<double> times;
  auto t0 = Clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    auto ts = Clock::now();
    step(start + warmup + s);
    times.push_back(secondsSince(ts));
  }
  double total = secondsSince(t0), best = *std::min_element(times.begin(), times.end());
  double tokensPerSecond = static_cast<double>(rows * steps) / total;
  if (o.json) {
    fmt::print("{{\"mode\": \"{}\", \"entry\": \"{}\", \"rows\": {}, \"first_position\": {}, \"steps\": {}, "
               "\"threads\": {}, \"tokens_per_s\": {}, \"best_step_s\": {}}}\n",
               o.mode, entry, rows, start + warmup, steps, model.threads(), tokensPerSecond, best);
    return;
  }
  fmt::print("linnet bench {}: {}, {} backend ({} thread{})\n", o.mode, model.name(), model.backend(), model.threads(),
             model.threads() == 1 ? "" : "s");
  fmt::print("  {:<18}  {} rows at positions {}..{}{}\n", "entry", rows, start + warmup, last - 1,
             paged ? fmt::format(", {} pages of {} each in a pool of {}", pages, pageSize, maxSeq) : "");
  fmt::print("  {:<18}  {} steps in {:.3f} s; best step {:.2f} ms\n", entry, steps, total, best * 1e3);
  fmt::print("  {:<18}  {:.1f} ({} rows x {} steps / {:.3f} s)\n", "tokens/s", tokensPerSecond, rows, steps, total);
}

}  // namespace linnet::bench
