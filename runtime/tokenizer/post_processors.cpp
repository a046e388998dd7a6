// Post-processors (tokenizers' processors/): ByteLevel (nothing to add),
// Sequence, RobertaProcessing/BertProcessing and TemplateProcessing for one
// sequence, and the prefix/suffix wrapper LlamaTokenizerFast amounts to.
#include "tokenizer/components.h"

#include <algorithm>

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace linnet::tokenizer::detail {

namespace {

class NoOpProcessor : public PostProcessor {
 public:
  void process(std::vector<int32_t>&, bool) const override {}
  bool addsTokens() const override { return false; }
};

class WrapProcessor : public PostProcessor {
 public:
  WrapProcessor(std::vector<int32_t> prefix, std::vector<int32_t> suffix)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  void process(std::vector<int32_t>& ids, bool addSpecialTokens) const override {
    if (!addSpecialTokens) return;
    ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  }
  bool addsTokens() const override { return !prefix_.empty() || !suffix_.empty(); }

 private:
  std::vector<int32_t> prefix_, suffix_;
};

// TemplateProcessing's "single" template: special tokens around (and possibly
// inside, though only $A exists for a single sequence) the sequence.
class TemplateProcessor : public PostProcessor {
 public:
  struct Item {
    bool isSequence;
    std::vector<int32_t> ids;
  };
  explicit TemplateProcessor(std::vector<Item> items) : items_(std::move(items)) {}
  void process(std::vector<int32_t>& ids, bool addSpecialTokens) const override {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 8);
    for (const Item& item : items_) {
      if (item.isSequence) out.insert(out.end(), ids.begin(), ids.end());
      else if (addSpecialTokens) out.insert(out.end(), item.ids.begin(), item.ids.end());
    }
    ids = std::move(out);
  }
  bool addsTokens() const override {
    for (const Item& item : items_)
      if (!item.isSequence && !item.ids.empty()) return true;
    return false;
  }

 private:
  std::vector<Item> items_;
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> items) : items_(std::move(items)) {}
  void process(std::vector<int32_t>& ids, bool addSpecialTokens) const override {
    for (const auto& p : items_) p->process(ids, addSpecialTokens);
  }
  bool addsTokens() const override {
    for (const auto& p : items_)
      if (p->addsTokens()) return true;
    return false;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> items_;
};

std::pair<std::string, int32_t> parseTokenPair(const JsonContext& ctx, const json& v, const std::string& path) {
  ctx.array(v, path);
  if (v.size() != 2) ctx.fail(path, "expected [token, id]");
  const int64_t id = ctx.integer(v[1], path + "/1");
  if (id < 0 || id > INT32_MAX) ctx.fail(path + "/1", "id out of range");
  return {ctx.string(v[0], path + "/0"), static_cast<int32_t>(id)};
}

}  // namespace

std::unique_ptr<PostProcessor> makeWrapProcessor(std::vector<int32_t> prefix, std::vector<int32_t> suffix) {
  return std::make_unique<WrapProcessor>(std::move(prefix), std::move(suffix));
}

std::unique_ptr<PostProcessor> parsePostProcessor(const JsonContext& ctx, const json& v, const std::string& path) {
  const std::string type = ctx.typeOf(v, path);
  if (type == "ByteLevel") return std::make_unique<NoOpProcessor>();
  if (type == "Sequence") {
    const json& list = ctx.array(ctx.member(v, path, "processors"), path + "/processors");
    std::vector<std::unique_ptr<PostProcessor>> items;
    for (size_t i = 0; i < list.size(); ++i)
      items.push_back(parsePostProcessor(ctx, list[i], fmt::format("{}/processors/{}", path, i)));
    return std::make_unique<SequenceProcessor>(std::move(items));
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    auto cls = parseTokenPair(ctx, ctx.member(v, path, "cls"), path + "/cls");
    auto sep = parseTokenPair(ctx, ctx.member(v, path, "sep"), path + "/sep");
    return std::make_unique<WrapProcessor>(std::vector<int32_t>{cls.second}, std::vector<int32_t>{sep.second});
  }
  if (type == "TemplateProcessing") {
    const json& specials = ctx.object(ctx.member(v, path, "special_tokens"), path + "/special_tokens");
    const json& single = ctx.array(ctx.member(v, path, "single"), path + "/single");
    std::vector<TemplateProcessor::Item> items;
    for (size_t i = 0; i < single.size(); ++i) {
      const std::string ip = fmt::format("{}/single/{}", path, i);
      const json& piece = ctx.object(single[i], ip);
      if (const json* seq = ctx.optionalMember(piece, "Sequence")) {
        const std::string id = ctx.string(ctx.member(*seq, ip + "/Sequence", "id"), ip + "/Sequence/id");
        if (id != "A") ctx.fail(ip + "/Sequence/id", fmt::format("sequence {:?} in a single-sequence template", id));
        items.push_back({true, {}});
      } else if (const json* sp = ctx.optionalMember(piece, "SpecialToken")) {
        const std::string id = ctx.string(ctx.member(*sp, ip + "/SpecialToken", "id"), ip + "/SpecialToken/id");
        auto it = specials.find(id);
        if (it == specials.end())
          ctx.fail(ip + "/SpecialToken/id", fmt::format("special token {:?} is missing from special_tokens", id));
        const std::string sp2 = path + "/special_tokens/" + jsonPointerKey(id);
        const json& idsJson = ctx.array(ctx.member(*it, sp2, "ids"), sp2 + "/ids");
        std::vector<int32_t> ids;
        for (size_t k = 0; k < idsJson.size(); ++k) {
          const int64_t x = ctx.integer(idsJson[k], fmt::format("{}/ids/{}", sp2, k));
          if (x < 0 || x > INT32_MAX) ctx.fail(fmt::format("{}/ids/{}", sp2, k), "id out of range");
          ids.push_back(static_cast<int32_t>(x));
        }
        items.push_back({false, std::move(ids)});
      } else {
        ctx.fail(ip, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      }
    }
    return std::make_unique<TemplateProcessor>(std::move(items));
  }
  unsupported(ctx, path + "/type", "post-processor", type,
              "ByteLevel, TemplateProcessing, Sequence, RobertaProcessing, BertProcessing");
}

}  // namespace linnet::tokenizer::detail
