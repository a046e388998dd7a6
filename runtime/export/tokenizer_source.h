// The tokenizer a GGUF export carries (llama.cpp's tokenizer.ggml.* keys and
// tokenizer.chat_template), from
//  * a Hugging Face tokenizer.json (or a folder holding one), with the
//    tokenizer_config.json beside it (special tokens, add_bos_token, chat
//    templates; a chat_template.jinja beside it when the config has none),
//    read as convert_hf_to_gguf.py reads a byte-level BPE tokenizer: model
//    "gpt2", the vocabulary by id (ids it leaves out become "[PADn]" tokens
//    of type UNUSED), added special tokens (and "<|...|>" ones) CONTROL,
//    other added tokens USER_DEFINED, the merges as "a b", and
//    tokenizer.ggml.pre named after the pre-tokenizer it has (those
//    runtime/gguf/tokenizer.h turns back into a tokenizer.json: gpt-2,
//    llama-bpe, qwen2, smollm);
//  * or a GGUF file's own metadata (gguf::readTokenizer), written back as it
//    was.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "gguf/tokenizer.h"
#include "export/gguf_writer.h"

namespace linnet::exporter {

struct ExportTokenizer {
  gguf::TokenizerData data;
  // Named chat templates besides the default one (tokenizer.chat_template.NAME).
  std::map<std::string, std::string> namedTemplates;
};

// Throws gguf::Error naming the file for what llama.cpp could not read the
// same way: another tokenizer model, a pre-tokenizer with no llama.cpp name,
// special tokens missing from the vocabulary.
ExportTokenizer tokenizerFromJson(const std::filesystem::path& path);
// From a .gguf file, a tokenizer.json or a folder holding one.
ExportTokenizer loadExportTokenizer(const std::string& path);

// Pads the vocabulary to `vocab` tokens ("[PADn]", UNUSED) as
// convert_hf_to_gguf.py does; returns how many were added. More tokens than
// `vocab`: gguf::Error.
std::size_t padVocabulary(ExportTokenizer& t, std::size_t vocab);

// The tokenizer.* metadata.
void addTokenizerMetadata(GgufWriter& w, const ExportTokenizer& t);

}  // namespace linnet::exporter
