// Helpers shared by the tokenizer tests (declared where used, in
// namespace tokenizer_test): test data paths, .xz reading, fixture tokenizers.
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace tokenizer_test {

using linnet::tokenizer::Tokenizer;
using nlohmann::json;

std::string dataPath(const std::string& relative) { return std::string(LINNET_TEST_DATA) + "/tokenizer/" + relative; }

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Decompresses an .xz file with the xz command line tool.
std::string readXz(const std::string& path) {
  std::ifstream probe(path);
  if (!probe) throw std::runtime_error("cannot open " + path);
  const std::string cmd = "xz -dc '" + path + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) throw std::runtime_error(cmd + " failed");
  return out;
}

std::string readData(const std::string& relative) {
  const std::string path = dataPath(relative);
  if (relative.size() > 3 && relative.compare(relative.size() - 3, 3, ".xz") == 0) return readXz(path);
  return readFile(path);
}

std::vector<std::string> jsonLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The test strings of the fixtures.
const std::vector<std::string>& fixtureStrings() {
  static const std::vector<std::string> strings = [] {
    std::vector<std::string> s;
    for (const std::string& line : jsonLines(readData("fixtures/strings.jsonl.xz")))
      s.push_back(json::parse(line).get<std::string>());
    return s;
  }();
  return strings;
}

// tokenizer.json text with a fixture's JSON-pointer patches applied.
std::string patchedTokenizerJson(const std::string& tokenizerFile, const json& patch) {
  std::string text = readData(tokenizerFile);
  if (patch.empty()) return text;
  json doc = json::parse(text);
  for (const json& p : patch) doc[json::json_pointer(p.at("path").get<std::string>())] = p.at("value");
  return doc.dump();
}

// Tokenizers are cached by (file, config, patch): the Llama 3 one takes a
// moment to decompress and parse.
const Tokenizer& cachedTokenizer(const std::string& tokenizerFile, const std::string& configFile, const json& patch) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  const std::string key = tokenizerFile + "|" + configFile + "|" + patch.dump();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  const std::string text = patchedTokenizerJson(tokenizerFile, patch);
  const std::string config = configFile.empty() ? std::string() : readData(configFile);
  auto tok = std::make_unique<Tokenizer>(Tokenizer::fromJson(text, config, tokenizerFile));
  return *cache.emplace(key, std::move(tok)).first->second;
}

const Tokenizer& llama3() {
  return cachedTokenizer("llama3/tokenizer.json.xz", "llama3/tokenizer_config.json", json::array());
}

const Tokenizer& spbpe() { return cachedTokenizer("spbpe/tokenizer.json", "spbpe/tokenizer_config.json", json::array()); }

const Tokenizer& bytebpe() { return cachedTokenizer("bytebpe/tokenizer.json", "", json::array()); }

}  // namespace tokenizer_test
