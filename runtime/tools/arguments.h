// The `linnet` tool's value parsers, on their own so the argument fuzzer
// (tests/fuzz/arguments_fuzzer.cpp) runs exactly the code the tool runs.
// Every refusal throws Usage, whose message names the flag and the value.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace linnet::tools {

// A command-line mistake: printed as `linnet: <message>`, exit status 2.
struct Usage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `NAME=VALUE` (NAME not empty, VALUE may be) for `flag`.
std::pair<std::string, std::string> splitAssignment(const std::string& s, const char* flag);

// A base-10 integer (an optional sign, digits; leading blanks as strtoll
// takes them); one that does not fit in 64 bits is refused, not saturated.
int64_t parseInt(const std::string& s, const std::string& what);

// A comma-separated list of integers, `1,2,3`. With skipEmpty, empty pieces
// (`1,,2`, a trailing comma) are passed over; otherwise they are refused.
std::vector<int64_t> parseIntList(const std::string& list, const std::string& what, bool skipEmpty);

// A `--set K=V` value: an integer (range-checked as parseInt) or, when V is
// not one, a name such as `bf16`.
std::variant<int64_t, std::string> parseGenericValue(const std::string& value, const std::string& what);

// Where text commands read the tokenizer: --tokenizer when given, else the
// --weights file when it is a .gguf (its metadata has one), else the
// tokenizer.json of a --weights folder (tokenizer_config.json beside it
// gives the chat template); Usage otherwise.
std::string tokenizerSource(const std::string& tokenizer, const std::string& weights);

// --weights and --random-weights together: Usage, naming the way to take
// a folder's tokenizer (and its sampling) with random parameters.
void refuseWeightsWithRandom(const std::string& weights, bool randomWeights, const std::string& command);

// A finite number in [least, most] (or above `least` with aboveLeast);
// nan, inf and junk are refused with `expected`.
double parseNumber(const std::string& s, const std::string& what, double least, double most, bool aboveLeast);

// An `--input NAME=VALUE` literal: true/false, an integer, or a float.
struct Literal {
  enum Kind { Bool, Int, Float } kind = Int;
  int64_t integer = 0;  // Bool (0 or 1) and Int
  double number = 0;    // Float
};
Literal parseLiteral(const std::string& value);

}  // namespace linnet::tools
