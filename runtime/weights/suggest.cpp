#include "weights/suggest.h"

#include <algorithm>

namespace linnet::weights {

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closestName(std::string_view name, const std::vector<std::string_view>& candidates) {
  std::size_t limit = std::max<std::size_t>(1, name.size() / 2);
  std::size_t best = limit + 1;
  std::string_view bestName;
  for (std::string_view c : candidates) {
    std::size_t lenDiff = c.size() > name.size() ? c.size() - name.size() : name.size() - c.size();
    if (lenDiff >= best) continue;
    std::size_t d = editDistance(name, c);
    if (d < best) {
      best = d;
      bestName = c;
    }
  }
  return best <= limit ? std::string(bestName) : std::string();
}

}  // namespace linnet::weights
