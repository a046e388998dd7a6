// What a derived gradient keeps of the forward pass (autodiff/forward.h).
#pragma once

#include <string_view>

namespace linnet::autodiff {

enum class Policy {
  Scan,      // layer loops kept whole, each layer recomputed from its saved input (the default)
  Saved,     // layer loops kept whole, each layer's values the reverse reads stacked, none recomputed
  Unrolled,  // every layer copied, every value saved
};

// The policy's name as `linnetc --tape` takes it: recompute, saved, unrolled.
inline const char* policyName(Policy p) {
  return p == Policy::Scan ? "recompute" : p == Policy::Saved ? "saved" : "unrolled";
}

// The policy of that name; the default (Scan) for any other.
inline Policy policyNamed(std::string_view name) {
  for (Policy p : {Policy::Saved, Policy::Unrolled})
    if (name == policyName(p)) return p;
  return Policy::Scan;
}

}  // namespace linnet::autodiff
