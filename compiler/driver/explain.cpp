#include "driver/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/diagnostics.h"
#include "sema/checker.h"
#include "sema/explain.h"
#include "sema/program.h"

namespace linnet::driver {

namespace fs = std::filesystem;
using sema::CitedFact;
using sema::Obligation;

namespace {

struct Place {
  std::string file;
  uint32_t line = 0;
  uint32_t col = 0;  // 0: the whole line
};

std::optional<uint32_t> number(const std::string& s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return static_cast<uint32_t>(std::stoul(s));
}

// FILE:LINE or FILE:LINE:COL, split from the right (a path may hold ':').
std::optional<Place> parsePlace(const std::string& at) {
  auto last = at.rfind(':');
  if (last == std::string::npos) return std::nullopt;
  auto tail = number(at.substr(last + 1));
  if (!tail || *tail == 0) return std::nullopt;
  Place p;
  std::string head = at.substr(0, last);
  auto prev = head.rfind(':');
  if (prev != std::string::npos) {
    if (auto line = number(head.substr(prev + 1))) {
      if (*line == 0) return std::nullopt;
      p.file = head.substr(0, prev);
      p.line = *line;
      p.col = *tail;
    }
  }
  if (p.line == 0) {
    p.file = head;
    p.line = *tail;
  }
  if (p.file.empty()) return std::nullopt;
  return p;
}

// `src/attention.linnet` names nest/llama-3.1-8b-instruct/src/attention.linnet.
bool sameFile(const std::string& loaded, const std::string& given) {
  if (loaded == given) return true;
  std::error_code ec1, ec2;
  auto a = fs::weakly_canonical(loaded, ec1), b = fs::weakly_canonical(given, ec2);
  if (!ec1 && !ec2 && a == b) return true;
  std::string l = fs::path(loaded).lexically_normal().generic_string();
  std::string g = fs::path(given).lexically_normal().generic_string();
  return l.size() > g.size() && l.compare(l.size() - g.size(), g.size(), g) == 0 && l[l.size() - g.size() - 1] == '/';
}

class Printer {
 public:
  explicit Printer(const SourceManager& sources) : sources_(sources) {}

  std::string path(SourceRange r) const { return r.valid() ? sources_.file(r.file).path() : ""; }
  LineCol begin(SourceRange r) const { return r.valid() ? sources_.file(r.file).lineCol(r.begin) : LineCol{}; }
  LineCol end(SourceRange r) const {
    return r.valid() ? sources_.file(r.file).lineCol(r.end > r.begin ? r.end - 1 : r.begin) : LineCol{};
  }

  std::string origin(const sema::FactOrigin& o) const {
    std::string what = o.what.empty() ? "origin not recorded" : o.what;
    if (!o.at.valid()) return what;
    return fmt::format("{}, {}:{}", what, path(o.at), begin(o.at).line);
  }

  // One that holds with no fact takes one line.
  static bool oneLine(const Obligation& o) { return o.proven && o.because.empty(); }

  void text(const Obligation& o, std::string& out) const {
    LineCol lc = begin(o.at);
    if (oneLine(o)) {
      out += fmt::format("{}:{}:{}: {}: `{}`{} holds for all nonnegative dimensions{}\n", path(o.at), lc.line, lc.col,
                         o.requirement, o.obligation,
                         o.simplified == o.obligation ? "" : fmt::format(" (simplified: `{}`)", o.simplified),
                         o.definition.empty() ? "" : fmt::format(", in {}", o.definition));
      return;
    }
    out += fmt::format("{}:{}:{}: {}\n", path(o.at), lc.line, lc.col, o.requirement);
    if (o.concrete) {
      for (const auto& c : o.context) out += fmt::format("  {}\n", c);
    } else if (!o.definition.empty()) {
      out += fmt::format("  in {}\n", o.definition);
    }
    out += fmt::format("  obligation: `{}`\n", o.obligation);
    out += fmt::format("  simplified: `{}`\n", o.simplified);
    auto facts = [&](const std::vector<CitedFact>& fs) {
      for (const auto& f : fs) out += fmt::format("    `{}` ({})\n", f.fact, origin(f.origin));
    };
    if (o.proven) {
      if (o.because.empty()) {
        out += "  proven from no fact: it holds for all nonnegative dimensions\n";
      } else {
        out += "  proven, because:\n";
        facts(o.because);
      }
      return;
    }
    out += fmt::format("  NOT PROVEN: {}\n", o.message.empty() ? fmt::format("cannot prove `{}`", o.obligation)
                                                                : o.message);
    if (o.closest.empty()) {
      if (!o.concrete) out += "  closest facts: none in scope mention its dimensions\n";
    } else {
      out += "  closest facts:\n";
      facts(o.closest);
    }
    if (!o.missing.empty()) out += fmt::format("  missing: {}\n", o.missing);
    if (!o.help.empty()) out += fmt::format("  help: {}\n", o.help);
  }

  nlohmann::json json(const Obligation& o) const {
    auto place = [&](SourceRange r, nlohmann::json& j) {
      LineCol b = begin(r), e = end(r);
      j["file"] = path(r);
      j["line"] = b.line;
      j["col"] = b.col;
      j["end_line"] = e.line;
      j["end_col"] = e.col + 1;  // one past the last character
    };
    auto cited = [&](const std::vector<CitedFact>& fs) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& f : fs) {
        nlohmann::json j{{"fact", f.fact}, {"origin", f.origin.what}};
        if (f.origin.at.valid()) {
          j["file"] = path(f.origin.at);
          j["line"] = begin(f.origin.at).line;
          j["col"] = begin(f.origin.at).col;
        }
        a.push_back(std::move(j));
      }
      return a;
    };
    nlohmann::json j;
    place(o.at, j);
    j["definition"] = o.definition;
    j["requirement"] = o.requirement;
    j["obligation"] = o.obligation;
    j["simplified"] = o.simplified;
    j["proven"] = o.proven;
    j["concrete"] = o.concrete;
    if (o.concrete) j["context"] = o.context;
    if (o.proven) {
      j["because"] = cited(o.because);
    } else {
      j["message"] = o.message;
      j["closest"] = cited(o.closest);
      j["missing"] = o.missing;
      if (!o.help.empty()) j["help"] = o.help;
    }
    return j;
  }

 private:
  const SourceManager& sources_;
};

// The obligations at a place: those whose range begins on the line (else
// the innermost ranges that contain it); with a column, those of the
// innermost range that contains it.
std::vector<const Obligation*> at(const std::vector<const Obligation*>& all, const Printer& p, const Place& place) {
  std::vector<const Obligation*> inFile;
  for (const Obligation* o : all)
    if (o->at.valid() && sameFile(p.path(o->at), place.file)) inFile.push_back(o);
  auto contains = [&](const Obligation* o, uint32_t col) {
    LineCol b = p.begin(o->at), e = p.end(o->at);
    bool afterBegin = place.line > b.line || (place.line == b.line && col >= b.col);
    bool beforeEnd = place.line < e.line || (place.line == e.line && (col == 0 || col <= e.col));
    return afterBegin && beforeEnd;
  };
  std::vector<const Obligation*> out;
  if (place.col == 0) {
    for (const Obligation* o : inFile)
      if (p.begin(o->at).line == place.line) out.push_back(o);
    if (!out.empty()) return out;
  }
  uint32_t col = place.col == 0 ? 1 : place.col;
  const Obligation* inner = nullptr;
  for (const Obligation* o : inFile) {
    if (!(place.col == 0 ? contains(o, 0) : contains(o, col))) continue;
    if (!inner || o->at.end - o->at.begin < inner->at.end - inner->at.begin) inner = o;
  }
  if (!inner) return out;
  for (const Obligation* o : inFile)
    if (o->at.begin == inner->at.begin && o->at.end == inner->at.end) out.push_back(o);
  return out;
}

}  // namespace

std::string explanationText(const sema::Obligation& o, const SourceManager& sources) {
  std::string out;
  Printer(sources).text(o, out);
  return out;
}

int runExplain(const ExplainArgs& args) {
  std::optional<Place> place;
  if (!args.at.empty()) {
    place = parsePlace(args.at);
    if (!place) {
      fmt::print(stderr, "linnetc explain: --at takes FILE:LINE or FILE:LINE:COL, not `{}`\n", args.at);
      return 2;
    }
  }
  SourceManager sources;
  Diagnostics diags(sources);
  sema::Program program(sources, diags, args.stdlib);
  for (const auto& s : args.sets) program.setGeneric(s);
  if (!diags.hasErrors()) program.loadPackage(args.package);
  sema::Explainer explainer;
  if (program.root() && !diags.hasErrors()) {
    sema::Checker checker(program, diags);
    checker.setExplainer(&explainer);
    checker.checkDefinitions();
    if (!diags.hasErrors()) checker.instantiateRoot();
  }
  explainer.attachDiagnostics(diags.all());
  if (diags.hasErrors()) {
    std::string text = diags.render();
    fwrite(text.data(), 1, text.size(), stderr);
    fmt::print(stderr, "{}: {} error{}\n", args.package, diags.errorCount(), diags.errorCount() == 1 ? "" : "s");
  }

  // The package's own files; the standard library's only when --at names one.
  std::set<uint32_t> own;
  for (const auto& m : program.modules())
    if (m->name != "std" && m->name.rfind("std.", 0) != 0) own.insert(m->file);
  Printer printer(sources);
  std::vector<const Obligation*> all;
  for (const Obligation& o : explainer.obligations())
    if (place || !o.proven || own.count(o.at.file)) all.push_back(&o);
  std::stable_sort(all.begin(), all.end(), [&](const Obligation* a, const Obligation* b) {
    std::string pa = printer.path(a->at), pb = printer.path(b->at);
    if (pa != pb) return pa < pb;
    if (a->at.begin != b->at.begin) return a->at.begin < b->at.begin;
    return a->at.end > b->at.end;
  });
  std::vector<const Obligation*> shown = place ? at(all, printer, *place) : all;

  std::string out;
  if (args.json) {
    for (const Obligation* o : shown)
      out += printer.json(*o).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else {
    // Blocks apart by a blank line; one-line entries together.
    for (size_t i = 0; i < shown.size(); ++i) {
      if (i && !(Printer::oneLine(*shown[i]) && Printer::oneLine(*shown[i - 1]))) out += "\n";
      printer.text(*shown[i], out);
    }
    if (place && shown.empty()) {
      bool loaded = false;
      for (const auto& m : program.modules()) loaded |= sameFile(m->path, place->file);
      out += loaded || !program.root()
                 ? fmt::format("{}: no shape obligation here\n", args.at)
                 : fmt::format("{}: `{}` is not a file of this program\n", args.at, place->file);
    }
    if (!place) {
      size_t proven = 0, bare = 0;
      std::set<std::string> definitions;
      for (const Obligation* o : shown) {
        proven += o->proven;
        bare += o->proven && o->because.empty();
        definitions.insert(o->definition);
      }
      out += fmt::format("{}{}: {} shape obligation{} in {} definition{}: {} proven ({} from no fact), {} not\n",
                         shown.empty() ? "" : "\n", args.package, shown.size(), shown.size() == 1 ? "" : "s",
                         definitions.size(), definitions.size() == 1 ? "" : "s", proven, bare,
                         shown.size() - proven);
    }
  }
  fwrite(out.data(), 1, out.size(), stdout);
  return diags.hasErrors() ? 1 : 0;
}

}  // namespace linnet::driver
