// `linnetc explain`: the shape obligations of a package's definitions, each
// with its simplified form and the facts that prove it (docs/explain.md).
#pragma once

#include <string>
#include <vector>

namespace linnet {
class SourceManager;
namespace sema {
struct Obligation;
}
}  // namespace linnet

namespace linnet::driver {

struct ExplainArgs {
  std::string package;            // a package folder or a .linnet file
  std::vector<std::string> sets;  // --set Name=Value
  std::string stdlib;
  std::string at;  // FILE:LINE[:COL]; empty: every obligation of the package's own files
  bool json = false;  // one JSON object per line
};

// Prints the explanations on stdout (the checker's errors on stderr, as
// `linnetc check` does). 0 when the package checks, 1 when it does not, 2
// for a malformed --at.
int runExplain(const ExplainArgs& args);

// One obligation as `linnetc explain` prints it (the editor's hover shows
// the same text).
std::string explanationText(const sema::Obligation& o, const SourceManager& sources);

}  // namespace linnet::driver
