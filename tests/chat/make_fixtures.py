#!/usr/bin/env python3
"""Renders every chat template in tests/data/chat with transformers' own
apply_chat_template(tokenize=False) and records the exact output strings (or
the exception) in tests/data/chat/fixtures.json.

The C++ tests (tests/runtime/chat_fixtures.cpp) render the same cases with
linnet::chat and compare byte for byte.

    pip install transformers jinja2 tokenizers
    python3 tests/chat/make_fixtures.py            # rewrite the fixture file
    python3 tests/chat/make_fixtures.py --check    # fail if it would change

strftime_now() reads a fixed clock (FIXED_NOW) so the output is reproducible;
the C++ test injects the same time.
"""

import argparse
import copy
import datetime as _datetime
import json
import os
import sys

import jinja2
import transformers
import transformers.utils.chat_template_utils as chat_template_utils
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "data", "chat"))
OUT = os.path.join(DATA, "fixtures.json")

FIXED_NOW = (2025, 3, 9, 14, 5, 7)  # a Sunday


class _FixedDatetime(_datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(*FIXED_NOW)


# transformers' strftime_now() calls datetime.now() from this module.
chat_template_utils.datetime = _FixedDatetime


def make_tokenizer(special_tokens):
    vocab = {"<unk>": 0}
    for tok in special_tokens.values():
        vocab.setdefault(tok, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, **special_tokens)


# ---------------------------------------------------------------------------
# Conversations

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location — in °C or °F",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and country, e.g. Zürich, CH"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "The unit"},
            },
            "required": ["location"],
        },
    },
}

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for"},
                "max_results": {"type": "integer", "description": "How many results", "default": 5},
                "filters": {"type": "array", "items": {"type": "string"}, "description": "Filters"},
                "options": {
                    "type": "object",
                    "additionalProperties": {"type": "number"},
                    "description": "Tuning knobs",
                },
                "when": {"type": ["string", "null"], "description": "A date"},
            },
            "required": ["query"],
        },
        "return": {"type": "array", "description": "The hits"},
    },
}

# Hermes 3's json_to_python_type macro recurses forever on a union type such as
# ["string", "null"] (it iterates the characters of "null"), so its main cases
# use a tool without one.
SEARCH_TOOL_NO_UNION = copy.deepcopy(SEARCH_TOOL)
del SEARCH_TOOL_NO_UNION["function"]["parameters"]["properties"]["when"]

UNICODE = "Grüß Gott! 你好，世界 🌍🚀 — مرحبا — café\u0301 — zero\u200bwidth — line\u2028sep — tab\there"
WHITESPACE = "  \n\t leading and trailing whitespace \t\n  \r\n"

GENERIC = {
    "single_user": [{"role": "user", "content": "Hello, how are you?"}],
    "system_user": [
        {"role": "system", "content": "You are a pirate chatbot who always responds in pirate speak!"},
        {"role": "user", "content": "Who are you?"},
    ],
    "multi_turn": [
        {"role": "system", "content": "You are concise."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 3 + 3?"},
        {"role": "assistant", "content": "6"},
        {"role": "user", "content": "Thanks!"},
    ],
    "alternating_no_system": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke."},
    ],
    "ends_with_assistant": [
        {"role": "user", "content": "Write a haiku."},
        {"role": "assistant", "content": "Autumn moonlight—\na worm digs silently\ninto the chestnut."},
    ],
    "unicode": [
        {"role": "system", "content": "Réponds en français. 日本語も OK."},
        {"role": "user", "content": UNICODE},
        {"role": "assistant", "content": "Ça va 👍 " + UNICODE[::-1]},
        {"role": "user", "content": "\u3000全角スペース\u3000と\u00a0NBSP\u00a0"},
    ],
    "whitespace": [
        {"role": "system", "content": "\n\nsystem with blank lines\n\n"},
        {"role": "user", "content": WHITESPACE},
        {"role": "assistant", "content": "   "},
        {"role": "user", "content": "\r\nwindows\r\nline endings\r\n"},
    ],
    "empty_content": [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "still here"},
    ],
    "template_syntax_in_content": [
        {"role": "user", "content": "Literal {{ braces }} and {% tags %} and {# comments #} stay text: {{'x'}}"},
    ],
    "quotes_and_escapes": [
        {"role": "user", "content": "She said \"hi\" and it's fine \\ backslash \\n not a newline </s> <|eot_id|>"},
    ],
    "none_valued_keys": [
        {"role": "user", "content": "Hi", "name": None, "tool_calls": None},
    ],
    "long_content": [
        {"role": "user", "content": " ".join(f"word{i}" for i in range(400))},
    ],
    "system_only": [{"role": "system", "content": "Only a system prompt."}],
    "reasoning_field": [
        {"role": "user", "content": "Think first."},
        {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nDone.", "reasoning_content": "hmm"},
        {"role": "user", "content": "Again."},
    ],
    # Error cases for templates that check the role order.
    "bad_role_order": [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},
    ],
    "assistant_first": [
        {"role": "assistant", "content": "I speak first"},
        {"role": "user", "content": "ok"},
    ],
    "unknown_role": [
        {"role": "user", "content": "Hi"},
        {"role": "narrator", "content": "Meanwhile..."},
    ],
    "content_parts": [
        {"role": "user", "content": [{"type": "text", "text": "Describe "}, {"type": "text", "text": "this."}]},
    ],
}

TOOL_CONVERSATION = [
    {"role": "system", "content": "You can call tools."},
    {"role": "user", "content": "What's the weather in Zürich?"},
    {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call12345",
                "type": "function",
                "function": {"name": "get_current_weather", "arguments": {"location": "Zürich, CH", "unit": "celsius"}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call12345", "name": "get_current_weather", "content": "22 °C, sunny"},
    {"role": "assistant", "content": "It is 22 °C and sunny in Zürich."},
    {"role": "user", "content": "Thanks"},
]

TOOL_RESULT_DICT = [
    {"role": "user", "content": "Look it up."},
    {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "abcdefghi",
                "type": "function",
                "function": {"name": "search", "arguments": {"query": "linnet bird", "max_results": 3}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "abcdefghi", "content": {"hits": ["a", "b"], "count": 2, "ok": True}},
]

TWO_TOOL_CALLS = [
    {"role": "user", "content": "Weather in Oslo and Rome?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call00001", "type": "function", "function": {"name": "get_current_weather", "arguments": {"location": "Oslo"}}},
            {"id": "call00002", "type": "function", "function": {"name": "get_current_weather", "arguments": {"location": "Rome"}}},
        ],
    },
    {"role": "tool", "tool_call_id": "call00001", "content": "-3 °C"},
    {"role": "tool", "tool_call_id": "call00002", "content": "18 °C"},
]

# ---------------------------------------------------------------------------
# Templates and the cases each one gets

LLAMA3_SPECIAL = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
CHATML_SPECIAL = {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}
MISTRAL_SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}


def generic_cases(names=None):
    names = names or list(GENERIC)
    cases = []
    for name in names:
        for agp in (False, True):
            cases.append({"name": name, "messages": GENERIC[name], "add_generation_prompt": agp})
    return cases


def tool_cases(convs, tools, extra_kwargs=None):
    cases = []
    for name, conv in convs.items():
        for agp in (False, True):
            case = {"name": name, "messages": conv, "add_generation_prompt": agp, "tools": tools}
            if extra_kwargs:
                case["kwargs"] = extra_kwargs
            cases.append(case)
    return cases


TEMPLATES = []


def add(source, special, cases, note=""):
    TEMPLATES.append({"source": source, "special_tokens": special, "cases": cases, "note": note})


llama31_cases = generic_cases()
llama31_cases += tool_cases({"tools_weather": TOOL_CONVERSATION}, [WEATHER_TOOL, SEARCH_TOOL])
llama31_cases += tool_cases({"tools_in_system": TOOL_CONVERSATION}, [WEATHER_TOOL], {"tools_in_user_message": False})
llama31_cases += tool_cases({"tool_result_dict": TOOL_RESULT_DICT}, [SEARCH_TOOL])
llama31_cases += tool_cases({"two_tool_calls": TWO_TOOL_CALLS}, [WEATHER_TOOL])
llama31_cases += tool_cases({"tools_without_user": [{"role": "system", "content": "sys"}]}, [WEATHER_TOOL])
llama31_cases += [
    {"name": "date_string", "messages": GENERIC["system_user"], "add_generation_prompt": True,
     "kwargs": {"date_string": "01 Jan 2025"}},
    {"name": "builtin_tools", "messages": TOOL_CONVERSATION[:2] + [
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "brave_search", "arguments": {"query": "Zürich weather"}}}]},
        {"role": "ipython", "content": "sunny"},
    ], "add_generation_prompt": True, "kwargs": {"builtin_tools": ["brave_search", "code_interpreter", "wolfram_alpha"]}},
]
add("templates/llama-3.1-8b-instruct.jinja", LLAMA3_SPECIAL, llama31_cases)

llama32_cases = generic_cases()
llama32_cases += tool_cases({"tools_weather": TOOL_CONVERSATION}, [WEATHER_TOOL])
llama32_cases += tool_cases({"tools_in_system": TOOL_CONVERSATION}, [SEARCH_TOOL], {"tools_in_user_message": False})
llama32_cases += [
    {"name": "date_string", "messages": GENERIC["single_user"], "add_generation_prompt": True,
     "kwargs": {"date_string": "05 Nov 2024"}},
]
add("templates/llama-3.2-3b-instruct.jinja", LLAMA3_SPECIAL, llama32_cases, "uses strftime_now")

add("llama3/tokenizer_config.json", None, generic_cases(
    ["single_user", "system_user", "multi_turn", "unicode", "whitespace", "empty_content", "content_parts"]),
    "Llama 3's own tokenizer_config.json (template and special tokens loaded from it)")

add("named_templates_tokenizer_config.json", None,
    generic_cases(["single_user", "multi_turn"]) + tool_cases({"tool_use_selected": GENERIC["single_user"]},
                                                              [WEATHER_TOOL, SEARCH_TOOL]),
    "list-of-named-templates form; tool_use is picked when tools are passed")

qwen_cases = generic_cases()
qwen_cases += tool_cases({"tools_weather": TOOL_CONVERSATION, "two_tool_calls": TWO_TOOL_CALLS,
                          "tool_result_dict": TOOL_RESULT_DICT}, [WEATHER_TOOL, SEARCH_TOOL])
add("templates/qwen2.5-7b-instruct.jinja", CHATML_SPECIAL, qwen_cases)

nemo_cases = generic_cases()
nemo_cases += tool_cases({"tools_weather": [m for m in TOOL_CONVERSATION if m["role"] != "system"],
                          "tool_result_dict": TOOL_RESULT_DICT, "two_tool_calls": TWO_TOOL_CALLS},
                         [WEATHER_TOOL, SEARCH_TOOL])
add("templates/mistral-nemo-instruct-2407.jinja", MISTRAL_SPECIAL, nemo_cases)

add("templates/mistral-v1.jinja", MISTRAL_SPECIAL, generic_cases(), "axolotl's Mistral v1 template")
add("templates/chatml.jinja", CHATML_SPECIAL, generic_cases(), "axolotl's ChatML template")

# The zoo's cards that carry their model's template (nest/*/chat_template.jinja).
add("../../../nest/tinyllama-1.1b-chat/chat_template.jinja", MISTRAL_SPECIAL, generic_cases(),
    "the tinyllama-1.1b-chat card's template")
add("../../../nest/smollm2-1.7b-instruct/chat_template.jinja",
    {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}, generic_cases(),
    "the smollm2-1.7b-instruct card's template")
add("../../../nest/mistral-7b-instruct-v0.3/chat_template.jinja", MISTRAL_SPECIAL, generic_cases(),
    "the mistral-7b-instruct-v0.3 card's template")
add("templates/phi-3.5-mini-instruct.jinja", {"bos_token": "<s>", "eos_token": "<|endoftext|>"}, generic_cases())

deepseek_cases = generic_cases()
deepseek_cases += [
    {"name": "deepseek_tools", "messages": [
        {"role": "user", "content": "Call it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}},
            {"type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "content": "r1"},
        {"role": "tool", "content": "r2"},
        {"role": "assistant", "content": "<think>x</think>final"},
    ], "add_generation_prompt": agp} for agp in (False, True)
]
add("templates/deepseek-r1-distill-llama-8b.jinja",
    {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}, deepseek_cases)

hermes_cases = tool_cases({"tools_weather": TOOL_CONVERSATION, "two_tool_calls": TWO_TOOL_CALLS,
                           "single_user": GENERIC["single_user"], "multi_turn": GENERIC["multi_turn"]},
                          [WEATHER_TOOL, SEARCH_TOOL_NO_UNION])
hermes_cases += tool_cases({"union_type_recursion": GENERIC["single_user"]}, [SEARCH_TOOL])
add("templates/hermes-3-llama-3.1-8b-tool_use.jinja", {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"},
    hermes_cases, "uses a recursive macro")

smol_cases = generic_cases()
smol_cases += [
    dict(c, name=c["name"] + "_no_think", kwargs={"enable_thinking": False})
    for c in generic_cases(["single_user", "multi_turn", "unicode"])
]
smol_cases += [
    {"name": "think_flag_in_system", "messages": [
        {"role": "system", "content": "Be brief. /no_think"}, {"role": "user", "content": "Hi"}],
     "add_generation_prompt": True},
    {"name": "tool_message", "messages": [
        {"role": "user", "content": "x"}, {"role": "tool", "content": "tool says hi"}],
     "add_generation_prompt": True},
]
add("templates/smollm3-3b.jinja", {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}, smol_cases)

add("templates/zephyr-style.jinja", {"bos_token": "<s>", "eos_token": "</s>"}, generic_cases())
chatml_default = generic_cases()
chatml_default += [{"name": "custom_default_system", "messages": GENERIC["single_user"], "add_generation_prompt": True,
                    "kwargs": {"default_system_prompt": "You are SmolLM, a small model."}}]
add("templates/chatml-default-system.jinja", CHATML_SPECIAL, chatml_default)

# The zoo's own: Gemma 3's template as the gemma-3-270m card holds it (the
# system message folded into the first user turn; roles must alternate).
add("../../../nest/gemma-3-270m/chat_template.jinja", {"bos_token": "<bos>", "eos_token": "<eos>"}, generic_cases(),
    "Gemma 3's (google/gemma-3-270m-it), from the gemma-3-270m card")


# ---------------------------------------------------------------------------

def load_source(source):
    path = os.path.join(DATA, source)
    if source.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
        tmpl = cfg["chat_template"]
        if isinstance(tmpl, list):
            tmpl = {t["name"]: t["template"] for t in tmpl}
        special = {}
        for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
            value = cfg.get(key)
            if isinstance(value, dict):
                value = value.get("content")
            if value is not None:
                special[key] = value
        return tmpl, special
    with open(path, encoding="utf-8", newline="") as f:
        return f.read(), None


def render_case(tokenizer, template_or_none, case):
    kwargs = dict(case.get("kwargs", {}))
    try:
        out = tokenizer.apply_chat_template(
            copy.deepcopy(case["messages"]),
            tools=copy.deepcopy(case.get("tools")),
            documents=copy.deepcopy(case.get("documents")),
            chat_template=template_or_none,
            add_generation_prompt=case["add_generation_prompt"],
            tokenize=False,
            **kwargs,
        )
        return {"expected": out}
    except Exception as e:  # noqa: BLE001 - we record whatever transformers raises
        return {"error": {"type": type(e).__name__, "message": str(e)}}


def build():
    fixtures = []
    for spec in TEMPLATES:
        source = spec["source"]
        tmpl, config_special = load_source(source)
        special = spec["special_tokens"] or config_special
        tokenizer = make_tokenizer(special)
        from_config = isinstance(tmpl, dict) or source.endswith(".json")
        if from_config:
            tokenizer.chat_template = tmpl  # rendered as the tokenizer's own template
        cases = []
        for case in spec["cases"]:
            result = render_case(tokenizer, None if from_config else tmpl, case)
            entry = {
                "name": case["name"],
                "messages": case["messages"],
                "add_generation_prompt": case["add_generation_prompt"],
            }
            if case.get("tools") is not None:
                entry["tools"] = case["tools"]
            if case.get("documents") is not None:
                entry["documents"] = case["documents"]
            if case.get("kwargs"):
                entry["kwargs"] = case["kwargs"]
            entry.update(result)
            cases.append(entry)
        fixtures.append({
            "source": source,
            "from_tokenizer_config": from_config,
            "special_tokens": special,
            "note": spec["note"],
            "cases": cases,
        })
    return {
        "generator": "tests/chat/make_fixtures.py",
        "transformers_version": transformers.__version__,
        "jinja2_version": jinja2.__version__,
        "fixed_now": "%04d-%02d-%02dT%02d:%02d:%02d" % FIXED_NOW,
        "templates": fixtures,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    args = ap.parse_args()
    data = build()
    text = json.dumps(data, indent=1, ensure_ascii=True) + "\n"
    n = sum(len(t["cases"]) for t in data["templates"])
    errors = sum(1 for t in data["templates"] for c in t["cases"] if "error" in c)
    if args.check:
        with open(OUT, encoding="utf-8") as f:
            old = json.load(f)
        for key in ("transformers_version", "jinja2_version"):
            old.pop(key, None)
            data.pop(key, None)
        if old != data:
            print("fixtures.json is out of date", file=sys.stderr)
            return 1
        print(f"fixtures.json is up to date ({n} cases)")
        return 0
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {OUT}: {len(data['templates'])} templates, {n} cases ({errors} expected errors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
