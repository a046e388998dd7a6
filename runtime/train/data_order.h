// The order `linnet finetune` visits its training rows: a permutation per
// epoch drawn from the run's seed, the same on every machine and standard
// library (std::shuffle's is not), so a resumed run continues where the
// interrupted one was and two runs with one seed see the same batches.
#pragma once

#include <cstdint>
#include <vector>

namespace linnet::train {

// Rows 0..rows-1 in the order of `epoch` (0, 1, ...) under `seed`:
// Fisher-Yates over a SplitMix64 stream keyed by (seed, epoch), each index
// drawn without modulo bias.
std::vector<uint64_t> epochOrder(uint64_t rows, uint64_t seed, uint64_t epoch);

}  // namespace linnet::train
