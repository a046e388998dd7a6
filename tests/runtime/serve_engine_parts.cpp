// The engine's parts that need no model: the page pool (allocation,
// reference counts, the prefix cache's LRU) and the text stream (stop
// strings never released, not even in part).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <set>

#include "serve/metrics.h"
#include "serve/pages.h"
#include "nest/text_stream.h"

using linnet::serve::Metrics;
using linnet::serve::PagePool;
using linnet::nest::TextStream;

TEST_CASE("serve pages: page 0 is never handed out, and every page once", "[serve]") {
  PagePool pool(5, 64);
  CHECK(pool.usable() == 4);
  std::set<int32_t> got;
  for (int k = 0; k < 4; ++k) {
    auto p = pool.allocate();
    REQUIRE(p);
    CHECK(*p != 0);
    got.insert(*p);
  }
  CHECK(got.size() == 4);
  CHECK_FALSE(pool.allocate());
  CHECK(pool.held() == 4);
  pool.release(*got.begin());
  CHECK(pool.available() == 1);
  CHECK(pool.allocate() == *got.begin());
  CHECK_THROWS(pool.release(0));
}

TEST_CASE("serve pages: a released hashed page waits in the cache until needed", "[serve]") {
  PagePool pool(3, 4);
  std::vector<int64_t> tokens = {1, 2, 3, 4};
  uint64_t h = PagePool::chain(0, tokens);
  CHECK(h != PagePool::chain(0, std::vector<int64_t>{1, 2, 3, 5}));
  CHECK(h != PagePool::chain(1, tokens));  // the same page after another prefix
  int32_t a = *pool.allocate();
  pool.publish(a, h);
  CHECK(pool.take(h) == a);  // shared: two holders
  pool.release(a);
  pool.release(a);
  CHECK(pool.available() == 2);  // cached, but allocatable
  CHECK(pool.take(h) == a);      // back from the cache
  pool.release(a);
  // Fresh pages come from the free list before the cache is evicted.
  int32_t b = *pool.allocate();
  CHECK(b != a);
  CHECK(pool.take(h) == a);
  pool.release(a);
  int32_t c = *pool.allocate();  // evicts a's hash
  CHECK(c == a);
  pool.release(c);
  CHECK_FALSE(pool.take(h));
  pool.release(b);
}

TEST_CASE("serve pages: the least recently used cached page goes first", "[serve]") {
  PagePool pool(3, 1);
  int32_t a = *pool.allocate(), b = *pool.allocate();
  uint64_t ha = PagePool::chain(0, std::vector<int64_t>{1}), hb = PagePool::chain(0, std::vector<int64_t>{2});
  pool.publish(a, ha);
  pool.publish(b, hb);
  pool.release(a);
  pool.release(b);
  CHECK(pool.allocate() == a);
  CHECK(pool.take(hb) == b);
}

namespace {

// A byte-level tokenizer whose tokens are single letters, "<e>" (special)
// and the two halves of "é" (0xC3 0xA9).
linnet::tokenizer::Tokenizer letters() {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "<e>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
    "post_processor": null,
    "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
              "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
              "vocab": {"<e>": 0, "a": 1, "b": 2, "c": 3, "S": 4, "T": 5, "Ã": 6, "©": 7},
              "merges": []}
  })");
  return linnet::tokenizer::Tokenizer::fromJson(doc.dump());
}

std::string run(TextStream& s, const std::vector<int32_t>& ids, std::vector<std::string>* pieces = nullptr) {
  std::string out;
  for (int32_t id : ids) {
    std::string piece = s.push(id);
    if (pieces) pieces->push_back(piece);
    out += piece;
  }
  return out + s.finish();
}

}  // namespace

TEST_CASE("serve text stream: a stop string is cut, and never shown in part", "[serve]") {
  auto tok = letters();
  TextStream s(tok, {"ST"});
  std::vector<std::string> pieces;
  // a b S T c: "S" waits (it may begin "ST"), then the stop ends the text.
  std::string text = run(s, {1, 2, 4, 5, 3}, &pieces);
  CHECK(text == "ab");
  CHECK(s.stopped());
  CHECK(pieces == std::vector<std::string>{"a", "b", "", "", ""});
}

TEST_CASE("serve text stream: held-back text that does not become a stop is released", "[serve]") {
  auto tok = letters();
  TextStream s(tok, {"ST", "cc"});
  std::vector<std::string> pieces;
  std::string text = run(s, {4, 1, 3, 2}, &pieces);
  CHECK(text == "Sacb");
  CHECK_FALSE(s.stopped());
  CHECK(pieces == std::vector<std::string>{"", "Sa", "", "cb"});
  // At the end, what was held is released.
  TextStream t(tok, {"ST"});
  CHECK(run(t, {1, 4}) == "aS");
}

TEST_CASE("serve text stream: half a UTF-8 character waits", "[serve]") {
  auto tok = letters();
  TextStream s(tok, {});
  CHECK(s.push(6).empty());
  CHECK(s.push(7) == "\xC3\xA9");
  CHECK(TextStream::heldBack("xxS", {"ST"}) == 1);
  CHECK(TextStream::firstStop("abSTc", {"c", "ST"}) == 2);
}

TEST_CASE("serve metrics: Prometheus text with every family declared", "[serve]") {
  Metrics m;
  m.add("linnet:generation_tokens_total", 3);
  m.add("linnet:requests_rejected_total", 1, "reason=\"overloaded\"");
  m.set("linnet:num_requests_running", 2);
  m.observe("linnet:time_to_first_token_seconds", 0.03);
  std::string text = m.prometheus();
  CHECK(text.find("linnet:generation_tokens_total 3\n") != std::string::npos);
  CHECK(text.find("linnet:requests_rejected_total{reason=\"overloaded\"} 1\n") != std::string::npos);
  CHECK(text.find("linnet:num_requests_running 2\n") != std::string::npos);
  CHECK(text.find("linnet:time_to_first_token_seconds_bucket{le=\"0.04\"} 1\n") != std::string::npos);
  CHECK(text.find("linnet:time_to_first_token_seconds_bucket{le=\"0.02\"} 0\n") != std::string::npos);
  CHECK(text.find("linnet:time_to_first_token_seconds_count 1\n") != std::string::npos);
  CHECK_THROWS(m.add("linnet:no_such_total"));
  CHECK(m.value("linnet:generation_tokens_total") == 3);
}
