// "Did you mean ...?" for messages about misspelt tensor and parameter names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace linnet::weights {

// Levenshtein distance between a and b.
std::size_t editDistance(std::string_view a, std::string_view b);

// The candidate closest to `name` when it is close enough to be a plausible
// misspelling (distance at most half the name's length, and at least
// 1 for nonempty names), else "". Ties go to the earliest candidate.
std::string closestName(std::string_view name, const std::vector<std::string_view>& candidates);

}  // namespace linnet::weights
