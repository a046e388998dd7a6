// Training rows against Hugging Face's tokenization of them
// (tests/data/train/examples.json: tests/train/make_examples_fixture.py),
// packing into loss_packed's inputs, and bad rows.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "train/examples.h"
#include "train/packing.h"

namespace {

using nlohmann::ordered_json;
using namespace linnet::train;

ordered_json examplesFixture() {
  std::ifstream in(LINNET_TEST_DATA "/train/examples.json");
  REQUIRE(in);
  return ordered_json::parse(in);
}

linnet::nest::TextModel fixtureText() {
  linnet::nest::TextModel text = linnet::nest::loadText(LINNET_TEST_DATA "/tokenizer/spbpe");
  text.chatTemplate = examplesFixture()["chat_template"].get<std::string>();
  return text;
}

// A JSONL file of `lines` in a fresh folder; its path.
std::string writeRows(const std::string& name, const std::vector<std::string>& lines) {
  auto dir = std::filesystem::temp_directory_path() / "linnet_train_examples";
  std::filesystem::create_directories(dir);
  std::string path = (dir / name).string();
  std::ofstream out(path);
  for (const auto& l : lines) out << l << "\n";
  return path;
}

}  // namespace

TEST_CASE("Each row shape gives transformers' ids and learns what TRL learns") {
  linnet::nest::TextModel text = fixtureText();
  const ordered_json fixture = examplesFixture();  // kept: the loop reads into it
  for (const ordered_json& want : fixture["examples"]) {
    INFO(want["row"].dump());
    Example e = exampleOf(want["row"], text, "fixture");
    CHECK(e.ids == want["ids"].get<std::vector<int32_t>>());
    CHECK(e.learned == want["learned"].get<std::vector<uint8_t>>());
  }
}

TEST_CASE("Packing: positions restart, targets are the next token of the same row, weights mark learned ones") {
  Example a{{5, 6, 7}, {0, 1, 1}, 1}, b{{8, 9}, {0, 1}, 2}, c{{3, 4, 2, 1}, {0, 0, 1, 1}, 3};
  std::vector<PackedBatch> batches = packExamples({a, b, c}, {1, 0, 2}, 5);
  REQUIRE(batches.size() == 2);
  const PackedBatch& first = batches[0];
  CHECK(first.examples == std::vector<size_t>{1, 0});
  CHECK(first.tokens == std::vector<int32_t>{8, 9, 5, 6, 7});
  CHECK(first.positions == std::vector<int32_t>{0, 1, 0, 1, 2});
  CHECK(first.segments == std::vector<int32_t>{0, 0, 1, 1, 1});
  CHECK(first.targets == std::vector<int64_t>{9, 0, 6, 7, 0});
  CHECK(first.weights == std::vector<float>{1, 0, 1, 1, 0});
  CHECK(first.learnedTokens == 3);
  CHECK(first.padding == 0);
  // The second is padded to the batch size (under kPadMultiple): token 0 at
  // position 0, weight 0, in a segment of its own.
  CHECK(batches[1].tokens == std::vector<int32_t>{3, 4, 2, 1, 0});
  CHECK(batches[1].positions == std::vector<int32_t>{0, 1, 2, 3, 0});
  CHECK(batches[1].segments == std::vector<int32_t>{0, 0, 0, 0, 1});
  CHECK(batches[1].weights == std::vector<float>{0, 1, 1, 0, 0});
  CHECK(batches[1].padding == 1);
  CHECK(batches[1].learnedTokens == 2);
  CHECK_THROWS_WITH(packExamples({c}, {0}, 3), Catch::Matchers::Contains("line 3: 4 tokens do not fit in a batch of 3"));
}

TEST_CASE("Batches are padded to a multiple of kPadMultiple positions, at most the batch size") {
  Example row{std::vector<int32_t>(70, 7), std::vector<uint8_t>(70, 1), 1};
  std::vector<PackedBatch> batches = packExamples({row}, {0}, 1000);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].tokens.size() == 2 * kPadMultiple);
  CHECK(batches[0].padding == 2 * kPadMultiple - 70);
  CHECK(batches[0].learnedTokens == 69);
  CHECK(packExamples({row}, {0}, 100)[0].tokens.size() == 100);
  CHECK(packExamples({row}, {0}, 70)[0].padding == 0);
}

TEST_CASE("A file of rows: blank lines skipped, long rows cut with a note naming the line") {
  linnet::nest::TextModel text = fixtureText();
  std::string path = writeRows("rows.jsonl", {R"({"text": "a b"})", "", R"({"text": "the sea is wide and grey"})"});
  std::vector<std::string> notes;
  std::vector<Example> rows = readExamples(path, text, 6, notes);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].line == 3);
  CHECK(rows[1].ids.size() == 6);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Matchers::Contains("rows.jsonl:3: ") && Catch::Matchers::Contains("the first 6 are kept"));
}

TEST_CASE("Bad rows are refused with their file and line") {
  linnet::nest::TextModel text = fixtureText();
  std::vector<std::string> notes;
  auto refused = [&](const std::vector<std::string>& lines, const std::string& message) {
    std::string path = writeRows("bad.jsonl", lines);
    CHECK_THROWS_WITH(readExamples(path, text, 100, notes), Catch::Matchers::Contains(message));
  };
  refused({R"({"text": "ok"})", R"({"text": "broken)"}, "bad.jsonl:2: not JSON");
  refused({R"([1, 2])"}, "bad.jsonl:1: a row must be a JSON object, not array");
  refused({R"({"input": "x"})"}, "bad.jsonl:1: a row needs `messages`, `prompt` and `completion`, or `text`");
  refused({R"({"prompt": "x"})"}, "bad.jsonl:1: a row with `prompt` needs `completion` too");
  refused({R"({"text": 7})"}, "bad.jsonl:1: `text` must be a string, not number");
  refused({R"({"messages": [{"role": "user", "content": "hi"}]})"}, "bad.jsonl:1: nothing to learn in this row");
  refused({"", "  "}, "bad.jsonl: no rows");
  CHECK_THROWS_WITH(readExamples("/nonexistent/rows.jsonl", text, 100, notes),
                    Catch::Matchers::Contains("/nonexistent/rows.jsonl: cannot read the training data"));
}
