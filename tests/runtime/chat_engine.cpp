// Unit tests of the chat-template engine: expressions, filters, loops,
// whitespace control, errors with positions, and resource limits. Expected
// strings are what jinja2 3.1 renders in transformers' environment.
#include <catch2/catch.hpp>

#include <string>

#include "chat/chat_template.h"
#include "chat/value.h"

using linnet::chat::applyChatTemplate;
using linnet::chat::buildChatContext;
using linnet::chat::ChatTemplate;
using linnet::chat::ChatTemplateError;
using linnet::chat::RenderOptions;
using linnet::chat::TemplateLimitError;
using linnet::chat::TemplateRaisedError;
using linnet::chat::TemplateRuntimeError;
using linnet::chat::TemplateSyntaxError;
using json = nlohmann::ordered_json;

namespace {

std::string R(const std::string& tpl, const std::string& ctx = "{}", const RenderOptions& o = {}) {
  return ChatTemplate::parse(tpl, "t").render(json::parse(ctx), o);
}

TemplateSyntaxError syntaxError(const std::string& tpl) {
  try {
    ChatTemplate::parse(tpl, "my_template");
  } catch (const TemplateSyntaxError& e) {
    return e;
  }
  FAIL("expected a syntax error for: " << tpl);
  throw;
}

TemplateRuntimeError runtimeError(const std::string& tpl, const std::string& ctx = "{}", const RenderOptions& o = {}) {
  try {
    R(tpl, ctx, o);
  } catch (const TemplateRuntimeError& e) {
    return e;
  }
  FAIL("expected a render error for: " << tpl);
  throw;
}

}  // namespace

TEST_CASE("chat engine: literals and printing", "[chat][engine]") {
  CHECK(R("plain text") == "plain text");
  CHECK(R("{{ 'a' }}{{ \"b\" }}{{ 'c' 'd' }}") == "abcd");
  CHECK(R("{{ 'ab\\ncd\\x41\\u00e9\\'\\t\\\\' }}") == "ab\ncdA\xC3\xA9'\t\\");
  CHECK(R("{{ 1 }} {{ -2 }} {{ 1_000 }} {{ 0x1F }} {{ 0b101 }} {{ 0o17 }}") == "1 -2 1000 31 5 15");
  CHECK(R("{{ 1.5 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 0.1 + 0.2 }} {{ 1/3 }} {{ 2.0 }}") ==
        "1.5 1e+16 1000000000000000.0 0.0001 1e-05 0.30000000000000004 0.3333333333333333 2.0");
  CHECK(R("{{ true }} {{ false }} {{ none }} {{ True }} {{ None }}") == "True False None True None");
  CHECK(R("{{ [1, 'a', none, 1.5, true, {'k': 'v\"'}] }}") == "[1, 'a', None, 1.5, True, {'k': 'v\"'}]");
  CHECK(R("{{ (1, 2) }}{{ (1,) }}{{ () }}") == "(1, 2)(1,)()");
  CHECK(R("{{ [\"it's\"] }}{{ ['a\"b'] }}{{ ['\\n\\t\\x01'] }}") == "[\"it's\"]['a\"b']['\\n\\t\\x01']");
  CHECK(R("{{ undefined_name }}|{{ x }}", R"({"x": {"a": [1, "b"]}})") == "|{'a': [1, 'b']}");
}

TEST_CASE("chat engine: operators", "[chat][engine]") {
  CHECK(R("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }}") == "7 9 1024 0.5 64");
  CHECK(R("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 // -2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7.5 // 2 }} {{ 5.5 % 2 }}") ==
        "3 -4 -4 2 -2 3.0 1.5");
  CHECK(R("{{ 3 / 2 }} {{ 4 / 2 }} {{ true + true }} {{ 1.5 * 2 }}") == "1.5 2.0 2 3.0");
  CHECK(R("{{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ 'a' * -1 }}| {{ [1] * 3 }} {{ [1, 2] + [3] }}") ==
        "ab ababab xxx | [1, 1, 1] [1, 2, 3]");
  CHECK(R("{{ 'a' ~ 1 ~ none ~ 1.0 ~ undefined_name ~ [1] }}") == "a1None1.0[1]");
  CHECK(R("{{ '%s-%d|%05.2f|%-4s|%x' % ('a', 3, 3.14159, 'ab', 255) }}{{ '%(a)s' % {'a': 1} }}") ==
        "a-3|03.14|ab  |ff1");
  CHECK(R("{{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }} {{ 'a' < 'b' }} {{ [1] < [1, 2] }} {{ 1 == 1.0 }} {{ true == 1 }}") ==
        "True False True True True True");
  CHECK(R("{{ {'a': 1} == {'a': 1} }} {{ (1, 2) == [1, 2] }} {{ 1 != 2 }}") == "True False True");
  CHECK(R("{{ 'a' in 'cat' }} {{ 1 not in [2] }} {{ 'k' in {'k': 1} }} {{ not 1 in [1] }} {{ 'x' in u }}") ==
        "True True True False False");
  CHECK(R("{{ true and 'x' }}|{{ false or 'y' }}|{{ 0 or none }}|{{ '' and 1 }}|{{ not not 3 }}") ==
        "x|y|None||True");
  CHECK(R("{{ 'y' if 1 else 'n' }}{{ 'y' if 0 else 'n' }}{{ 'y' if 0 }}{{ 1 if false else 2 if false else 3 }}") ==
        "yn3");
  CHECK(R("{{ -3 | abs }} {{ +2 }} {{ -(1.5) }}") == "3 2 -1.5");
}

TEST_CASE("chat engine: attribute, item access and slicing", "[chat][engine]") {
  const std::string ctx = R"({"m": {"role": "user", "content": "hi", "items": 3}, "xs": [1, 2, 3, 4, 5]})";
  CHECK(R("{{ m.role }}{{ m['content'] }}{{ m['items'] }}{{ m.missing }}|{{ m['missing'] }}|", ctx) ==
        "userhi3||");
  CHECK(R("{{ xs[0] }}{{ xs[-1] }}{{ xs[10] }}|{{ xs.1 }}", ctx) == "15|2");
  CHECK(R("{{ xs[1:] }}{{ xs[:2] }}{{ xs[::2] }}{{ xs[::-1] }}{{ xs[-2:] }}{{ xs[5:] }}{{ xs[:-9] }}", ctx) ==
        "[2, 3, 4, 5][1, 2][1, 3, 5][5, 4, 3, 2, 1][4, 5][][]");
  CHECK(R("{{ 'héllo'[1] }}{{ 'héllo'[1:3] }}{{ 'abc'[::-1] }}{{ 'abc'[10:1:-1] }}{{ 'ab'[5] }}|") ==
        "\xC3\xA9\xC3\xA9lcbac|");
  CHECK(R("{{ m.get('role') }}{{ m.get('nope', 'dflt') }}{{ m.get('nope') }}{{ m.keys() | list }}", ctx) ==
        "userdfltNone['role', 'content', 'items']");
  CHECK(R("{% for k, v in m.items() %}{{ k }}={{ v }};{% endfor %}{{ m.values() | list }}", ctx) ==
        "role=user;content=hi;items=3;['user', 'hi', 3]");
}

TEST_CASE("chat engine: tests", "[chat][engine]") {
  CHECK(R("{{ x is defined }}{{ y is defined }}{{ y is undefined }}{{ n is none }}{{ n is not none }}",
          R"({"x": 1, "n": null})") == "TrueFalseTrueTrueFalse");
  CHECK(R("{{ 's' is string }}{{ 1 is string }}{{ 1 is number }}{{ true is number }}{{ true is integer }}"
          "{{ 1.5 is float }}{{ true is boolean }}{{ {} is mapping }}{{ [] is mapping }}") ==
        "TrueFalseTrueTrueFalseTrueTrueTrueFalse");
  CHECK(R("{{ 'x' is iterable }}{{ 3 is iterable }}{{ u is iterable }}{{ [] is sequence }}") == "TrueFalseTrueTrue");
  CHECK(R("{{ 3 is odd }}{{ 4 is even }}{{ 10 is divisibleby 5 }}{{ 10 is divisibleby(3) }}{{ none is sameas none }}") ==
        "TrueTrueTrueFalseTrue");
  CHECK(R("{{ 1 is eq 1 }}{{ 1 is ne 2 }}{{ 1 is lt 2 }}{{ 2 is ge 2 }}{{ 'a' is in 'abc' }}{{ 'abc' is lower }}"
          "{{ 'ABC' is upper }}{{ raise_exception is callable }}") == "TrueTrueTrueTrueTrueTrueTrueTrue");
  CHECK(R("{{ x is true }}{{ x is false }}", R"({"x": false})") == "FalseTrue");
}

TEST_CASE("chat engine: filters", "[chat][engine]") {
  CHECK(R("{{ '  x  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ '\u3000x\u00a0'|trim }}|{{ '\u200bx'|trim }}") ==
        "x|hi|x|\xE2\x80\x8Bx");
  CHECK(R("{{ 'Hello'|upper }}{{ 'Hello'|lower }}{{ 'hELLO wORLD'|capitalize }}{{ 'hello-world foo_bar'|title }}") ==
        "HELLOhelloHello worldHello-World Foo_bar");
  CHECK(R("{{ [1, 2, 3]|length }}{{ 'héllo'|length }}{{ {'a': 1}|count }}{{ u|length }}") == "3510");
  CHECK(R("{{ u|default('z') }}{{ ''|default('z') }}{{ ''|default('z', true) }}{{ 0|d(5) }}") == "zz0");
  CHECK(R("{{ [1, 2, 3]|first }}{{ 'abc'|last }}{{ []|first }}|") == "1c|");
  CHECK(R("{{ ['a', 'b']|join(', ') }}|{{ [1, none, 'a']|join('-') }}|{{ [{'n': 'a'}, {'n': 'b'}]|join(',', attribute='n') }}") ==
        "a, b|1-None-a|a,b");
  CHECK(R("{{ 'a-b-c'|replace('-', '+') }}{{ 'aaa'|replace('a', 'b', 2) }}") == "a+b+cbba");
  CHECK(R("{{ 42|string }}{{ [1]|string }}{{ '12'|int + 1 }}{{ 'zz'|int }}{{ 3.9|int }}{{ '0x1f'|int(base=16) }}"
          "{{ '3.5'|float }}{{ 'x'|float }}") == "42[1]130331" "3.50.0");
  CHECK(R("{{ 'abc'|list }}{{ {'a': 1}|list }}{{ {'b': 1, 'a': 2}|items|list }}") ==
        "['a', 'b', 'c']['a'][('b', 1), ('a', 2)]");
  CHECK(R("{{ [{'a': 1}, {'a': 2}]|map(attribute='a')|list }}{{ ['a', 'bb']|map('upper')|list }}"
          "{{ [{'a': 1}, {}]|map(attribute='a', default=0)|list }}") == "[1, 2]['A', 'BB'][1, 0]");
  CHECK(R("{{ x|selectattr('type', 'equalto', 'text')|map(attribute='text')|join('') }}|"
          "{{ x|rejectattr('text')|list }}|{{ x|selectattr('text', 'defined')|list|length }}",
          R"({"x": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]})") ==
        "ab|[{'type': 'image'}]|2");
  CHECK(R("{{ [1, 2, 3, 4]|select('odd')|list }}{{ [1, 2, 3, 4]|reject('even')|list }}{{ [0, 1, '', 'a']|select|list }}") ==
        "[1, 3][1, 3][1, 'a']");
  CHECK(R("{{ ['b', 'A', 'c']|sort }}{{ [3, 1, 2]|sort(reverse=true) }}{{ [{'n': 2}, {'n': 1}]|sort(attribute='n') }}") ==
        "['A', 'b', 'c'][3, 2, 1][{'n': 1}, {'n': 2}]");
  CHECK(R("{{ [1, 2, 2, 1]|unique|list }}{{ [1, 2, 3]|sum }}{{ [1, 5, 3]|max }}{{ [4, 1, 3]|min }}"
          "{{ [1, 2]|reverse|list }}{{ 'abc'|reverse }}") == "[1, 2]651[2, 1]cba");
  CHECK(R("{{ 'a\nb'|indent }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent(width='> ', blank=true) }}") ==
        "a\n    b|  a\n  b|a\n> \n> b");
  CHECK(R("{{ 3.14159|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.71|round(1, 'floor') }}") == "3.14 2.0 4.0 2.7");
  CHECK(R("{{ 'x=%s'|format(1) }}{{ 'a b c'|wordcount }}{{ '<a>'|e }}{{ 'x'|safe }}") == "x=13&lt;a&gt;x");
  CHECK(R("{{ d|dictsort }}", R"({"d": {"b": 1, "a": 2}})") == "[('a', 2), ('b', 1)]");
  CHECK(R("{% filter upper %}hi {{ 'x' }}{% endfilter %}") == "HI X");
}

TEST_CASE("chat engine: tojson follows transformers", "[chat][engine]") {
  const std::string ctx = R"({"x": {"b": 1, "a": "\u00e9\n\"<>&'\ud83d\ude00", "c": [], "d": {}, "e": [1, 2.5, null, true]}})";
  CHECK(R("{{ x|tojson }}", ctx) ==
        "{\"b\": 1, \"a\": \"\xC3\xA9\\n\\\"<>&'\xF0\x9F\x98\x80\", \"c\": [], \"d\": {}, \"e\": [1, 2.5, null, true]}");
  CHECK(R("{{ x.e|tojson(indent=2) }}", ctx) == "[\n  1,\n  2.5,\n  null,\n  true\n]");
  CHECK(R("{{ x.e|tojson(separators=(',', ':')) }}{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}", ctx) ==
        "[1,2.5,null,true]{\"a\": 2, \"b\": 1}");
  CHECK(R("{{ x.a|tojson(ensure_ascii=true) }}", ctx) == "\"\\u00e9\\n\\\"<>&'\\ud83d\\ude00\"");
  CHECK(R("{{ 1.0|tojson }}{{ ('a', 1)|tojson }}") == "1.0[\"a\", 1]");
  CHECK(runtimeError("{{ nope|tojson }}").kind() == "TypeError");
}

TEST_CASE("chat engine: lazy filters behave like jinja2's generators", "[chat][engine]") {
  // select, reject, map, items, unique, ... return generators: always true, no len().
  CHECK(R("{{ 'y' if [] | select else 'n' }}{{ 'y' if [] | select | list else 'n' }}") == "yn");
  CHECK(R("{{ [1, 2] | select | list | length }}{{ none | map(attribute='x') | list }}{{ 0 | select | list }}") ==
        "2[][]");
  CHECK(runtimeError("{{ [1] | map('string') | length }}").message() == "object of type 'generator' has no len()");
  // An unusable input only fails when the generator is iterated.
  CHECK(R("{% set g = 5 | select %}ok") == "ok");
  CHECK(runtimeError("{% set g = 5 | select %}{{ g | list }}").message() == "'int' object is not iterable");
  CHECK(R("{% set g = 5 | items %}ok") == "ok");
  CHECK(runtimeError("{{ 5 | items | list }}").message() == "Can only get item pairs from a mapping.");
  // Dict views have a len() but no indexing.
  CHECK(R("{{ d.keys() }} {{ d.values() }} {{ d.items() }} {{ d.keys() | length }} [{{ d.values()[0] }}]",
          R"({"d": {"a": 1}})") == "dict_keys(['a']) dict_values([1]) dict_items([('a', 1)]) 1 []");
  CHECK(R("{{ d | last }}{{ d | first }}", R"({"d": {"a": 1, "b": 2}})") == "ba");
}

TEST_CASE("chat engine: corners of jinja2's Undefined and Python operators", "[chat][engine]") {
  CHECK(R("{{ u is callable }}{{ u is iterable }}{{ u is sequence }}{{ u | list }}{{ u | items | list }}") ==
        "TrueTrueTrue[][]");
  CHECK(runtimeError("{{ u | int }}").message() == "'u' is undefined");
  CHECK(runtimeError("{{ u | float }}").message() == "'u' is undefined");
  CHECK(runtimeError("{{ 3 | indent }}").kind() == "TypeError");
  CHECK(R("{{ 'x' % u }}{{ 'x' % [] }}{{ '%s' % [1] }}{{ '%s' % {'a': 1} }}") == "xx[1]{'a': 1}");
  CHECK(runtimeError("{{ '%s %s' % (1,) }}").message() == "not enough arguments for format string");
  CHECK(runtimeError("{{ '%s' % (1, 2) }}").message() == "not all arguments converted during string formatting");
  CHECK(R("{{ [] | max }}|{{ [] | min }}|") == "||");
  CHECK(runtimeError("{{ ([] | max).x }}").message() == "No aggregated item, sequence was empty.");
  CHECK(R("{{ 2.5 is odd }}{{ 3.0 is odd }}{{ 4.0 is even }}{{ 7.5 is divisibleby 2.5 }}") == "FalseTrueTrueTrue");
  CHECK(runtimeError("{{ 1 is number 2 }}").kind() == "TypeError");  // a test given too many arguments
  CHECK(runtimeError("{{ {} in {} }}").message() == "unhashable type: 'dict'");
  // Slices are plain Python subscripts (jinja2 folds constant ones differently).
  CHECK(runtimeError("{{ n[1:] }}", R"({"n": 5})").message() == "'int' object is not subscriptable");
  CHECK(runtimeError("{{ d[1:] }}", R"({"d": {}})").message() == "unhashable type: 'slice'");
}

TEST_CASE("chat engine: string methods", "[chat][engine]") {
  CHECK(R("{{ 'a b  c'.split() }}{{ 'a,b'.split(',') }}{{ 'a,b,c'.split(',', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}"
          "{{ '  a  b '.split(none, 1) }}") == "['a', 'b', 'c']['a', 'b']['a', 'b,c']['a,b', 'c']['a', 'b ']");
  CHECK(R("{{ ' x '.strip() }}|{{ ' x '.lstrip() }}|{{ ' x '.rstrip() }}|{{ '\\n\\nx'.lstrip('\\n') }}") ==
        "x|x | x|x");
  CHECK(R("{{ 'abc'.startswith('ab') }}{{ 'abc'.startswith(('x', 'a')) }}{{ 'abc'.endswith('bc') }}") ==
        "TrueTrueTrue");
  CHECK(R("{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}{{ 'a b'.title() }}{{ 'aBc'.capitalize() }}{{ 'a-a'.replace('-', '') }}") ==
        "HIhiA BAbcaa");
  CHECK(R("{{ 'a.b.c'.find('b') }}{{ 'a.b.c'.rfind('.') }}{{ 'aaa'.count('a') }}{{ ', '.join(['a', 'b']) }}") ==
        "233a, b");
  CHECK(R("{{ '{} and {}'.format('a', 'b') }}|{{ 'k=v'.partition('=') }}|{{ 'abc'.removeprefix('a') }}") ==
        "a and b|('k', '=', 'v')|bc");
  CHECK(R("{{ 'x</think>y</think>z'.split('</think>')[-1] }}") == "z");
}

TEST_CASE("chat engine: for loops", "[chat][engine]") {
  CHECK(R("{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
          "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ x }};{% endfor %}") ==
        "1032TrueFalse3a;2121FalseFalse3b;3210FalseTrue3c;");
  CHECK(R("{% for a in [1, 2, 3] %}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('x', 'y') }}|{% endfor %}") ==
        "2x|13y|2x|");
  CHECK(R("{% for x in [] %}x{% else %}empty{% endfor %}") == "empty");
  // jinja2 runs the else block unless some iteration reached the end of the loop body.
  CHECK(R("{% for i in [1, 2] %}{{ loop.index }}{% break %}{% else %}E{% endfor %}") == "1E");
  CHECK(R("{% for i in [1, 2] %}{{ loop.index }}{% continue %}{% else %}E{% endfor %}") == "12E");
  CHECK(R("{% for i in [1, 2] %}{{ loop.index }}{% if i == 1 %}{% continue %}{% endif %}{% else %}E{% endfor %}") ==
        "12");
  CHECK(R("{% for k, v in d.items() if k != 'b' %}{{ k }}={{ v }}{{ loop.length }}{% else %}empty{% endfor %}",
          R"({"d": {"a": 1, "b": 2, "c": 3}})") == "a=12c=32");
  CHECK(R("{% for i in range(10) %}{% if i == 3 %}{% continue %}{% endif %}{% if i == 6 %}{% break %}{% endif %}{{ i }}{% endfor %}") ==
        "01245");
  CHECK(R("{% for x in [[1, 2], [3, 4]] %}{% for y in x %}{{ loop.index }}{{ y }}{% endfor %}{{ loop.index }};{% endfor %}") ==
        "11221;13242;");
  CHECK(R("{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}{% for c in 'hé' %}[{{ c }}]{% endfor %}") ==
        "1234[h][\xC3\xA9]");
  CHECK(R("{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}{% for m in u %}never{% endfor %}") == "xy");
  CHECK(R("{{ range(3)|list }}{{ range(1, 10, 3)|list }}{{ range(5, 0, -2)|list }}") ==
        "[0, 1, 2][1, 4, 7][5, 3, 1]");
}

TEST_CASE("chat engine: scoping, set and namespace", "[chat][engine]") {
  // Assignments inside a loop body stay in that iteration.
  CHECK(R("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = i * 10 %}{{ x }};{% endfor %}{{ x }}") ==
        "110;120;1");
  CHECK(R("{% for i in [1, 2] %}{% for j in [1] %}{% set x = i %}{% endfor %}{{ x }}{% endfor %}", R"({"x": 0})") ==
        "00");
  CHECK(R("{% if true %}{% set z = 5 %}{% endif %}{{ z }}") == "5");
  CHECK(R("{{ x }}{% set x = 2 %}{{ x }}", R"({"x": 1})") == "12");
  CHECK(R("{% set ns = namespace(a=1) %}{% for i in [1, 2] %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}") == "4");
  CHECK(R("{% set ns = namespace() %}{% set ns.items = [] %}{% for i in range(3) %}{% set ns.items = ns.items + [i] %}"
          "{% endfor %}{{ ns.items }}") == "[0, 1, 2]");
  CHECK(R("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set s %}inner {{ a }}{% endset %}[{{ s }}]") == "12[inner 1]");
  CHECK(R("{% set s | upper %}abc{% endset %}{{ s }}") == "ABC");
  // A name first assigned unconditionally in a frame starts undefined there: nested frames that
  // read it before the assignment runs see undefined, not the context's value.
  CHECK(R("{% for i in [1] %}[{{ x }}]{% endfor %}{% set x = 2 %}{{ x }}", R"({"x": 1})") == "[]2");
  CHECK(R("{% for i in [1] %}[{{ x }}]{% endfor %}{% if false %}{% set x = 2 %}{% endif %}{{ x }}",
          R"({"x": 1})") == "[1]1");
  CHECK(R("{% macro m() %}[{{ x }}]{% endmacro %}{{ m() }}{% set x = 2 %}{{ m() }}", R"({"x": 1})") == "[][2]");
  CHECK(R("{% if true %}[{{ x }}]{% endif %}{% set x = 2 %}", R"({"x": 1})") == "[1]");
  CHECK(R("{% for i in [1] %}{% for j in [1] %}[{{ x }}]{% endfor %}{% set x = 3 %}{% endfor %}", R"({"x": 1})") ==
        "[]");
  CHECK(R("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]") == "3[]");
  CHECK(R("{{ dict(a=1, b='x') }}{{ namespace(a=1).a }}{{ dict([('k', 2)]).k }}") == "{'a': 1, 'b': 'x'}12");
  CHECK(runtimeError("{% set x = 3 %}{% set x.y = 3 %}").message() == "cannot assign attribute on non-namespace object");
  CHECK(runtimeError("{% set ns = namespace(_a=1) %}").kind() == "SecurityError");
}

TEST_CASE("chat engine: macros", "[chat][engine]") {
  CHECK(R("{% macro m(a, b=2) %}{{ a }}-{{ b }}-{{ g }}{% endmacro %}{% set g = 7 %}{{ m(1) }}|{{ m(1, b=3) }}") ==
        "1-2-7|1-3-7");
  CHECK(R("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}") == "54321");
  CHECK(R("{% set x = 1 %}{% macro m() %}{{ x }}{% set x = 5 %}{{ x }}{% endmacro %}{{ m() }}{{ x }}") == "151");
  CHECK(R("{% macro f(a, b) %}[{{ a }}{{ b }}]{% endmacro %}{{ f(1) }}{{ f(b=2, a=1) }}") == "[1][12]");
  CHECK(runtimeError("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}").kind() == "TypeError");
  CHECK(runtimeError("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").kind() == "LimitError");
}

TEST_CASE("chat engine: whitespace control as transformers configures jinja2", "[chat][engine]") {
  // trim_blocks removes the newline after a block tag; lstrip_blocks the indentation before it.
  CHECK(R("  {% if true %}\n  x\n  {% endif %}\n") == "  x\n");
  CHECK(R("line1\n    {% if true %}\n    in\n    {% endif %}\n  {{ 'v' }}\n  {# c #}\nend\n") ==
        "line1\n    in\n  v\nend");
  CHECK(R("a  {%- if true -%}  b  {%- endif -%}  c") == "abc");
  CHECK(R("a  {{- 'x' -}}  c  {#- comment -#}  d") == "axcd");
  CHECK(R("x {%+ if true %}y{% endif %}\n  {%+ if true %}z{% endif %}") == "x y  z");
  CHECK(R("{% if true %}\r\nwin\r\n{% endif %}\r\n") == "win\n");
  CHECK(R("trailing\n\n") == "trailing\n");
  CHECK(R("{{ 'a' }}\n{{ 'b' }}\n") == "a\nb");
  CHECK(R("{#- c #}\n\n{% set x = 1 -%}\n\n   {{ x }}") == "\n1");
  CHECK(R("{% raw %}{{ not processed }}{% endraw %}") == "{{ not processed }}");
  CHECK(R("a\n  {%- raw -%}  r  {%- endraw -%}  \nb") == "arb");
  CHECK(R("{%- for m in ms -%}\n{{ m }}\n{%- endfor -%}\n", R"({"ms": ["a", "b"]})") == "ab");
  CHECK(R("{% generation %}gen {{ 1 }}{% endgeneration %}") == "gen 1");
}

TEST_CASE("chat engine: undefined values follow jinja2's default Undefined", "[chat][engine]") {
  CHECK(R("[{{ nope }}]{{ nope|length }}{{ nope|trim }}{% for x in nope %}x{% endfor %}{% if nope %}y{% endif %}") ==
        "[]0");
  CHECK(R("{{ m.y }}|{{ m['y'] }}|{{ xs[3] }}|", R"({"m": {"a": 1}, "xs": []})") == "|||");
  auto e1 = runtimeError("{{ nope.attr }}");
  CHECK(e1.kind() == "UndefinedError");
  CHECK(e1.message() == "'nope' is undefined");
  auto e2 = runtimeError("{{ m.y.z }}", R"({"m": {"a": 1}})");
  CHECK(e2.message() == "'dict object' has no attribute 'y'");
  CHECK(runtimeError("{{ xs[0].a }}", R"({"xs": []})").message() == "list object has no element 0");
  CHECK(runtimeError("{{ nope + 1 }}").message() == "'nope' is undefined");
  CHECK(runtimeError("{{ nope() }}").message() == "'nope' is undefined");
  CHECK(runtimeError("{{ nope < 1 }}").kind() == "UndefinedError");
}

TEST_CASE("chat engine: runtime errors", "[chat][engine]") {
  CHECK(runtimeError("{{ 'a' + 1 }}").message() == "can only concatenate str (not \"int\") to str");
  CHECK(runtimeError("{{ 1 / 0 }}").kind() == "ZeroDivisionError");
  CHECK(runtimeError("{{ 1 % 0 }}").kind() == "ZeroDivisionError");
  CHECK(runtimeError("{{ 'a' < 1 }}").kind() == "TypeError");
  CHECK(runtimeError("{% for x in 5 %}{% endfor %}").message() == "'int' object is not iterable");
  CHECK(runtimeError("{{ 9223372036854775807 + 1 }}").kind() == "OverflowError");
  CHECK(runtimeError("{{ [1].append(2) }}").message() == "access to attribute 'append' of 'list' object is unsafe.");
  CHECK(runtimeError("{% for a, b in [[1, 2, 3]] %}{% endfor %}").message() == "too many values to unpack (expected 2)");

  auto e = runtimeError("line one\n  {{ 'x' ~ (1 / 0) }}");
  CHECK(e.templateName() == "t");
  CHECK(e.line() == 2);
  CHECK(e.column() == 15);  // the "/"
  CHECK(std::string(e.what()) == "t:2:15: division by zero");

  try {
    R("{% if messages|length > 1 %}{{ raise_exception('Only one message, got ' ~ messages|length) }}{% endif %}",
      R"({"messages": [1, 2]})");
    FAIL("no exception");
  } catch (const TemplateRaisedError& err) {
    // what() says where: the template (its tokenizer_config.json or GGUF when loaded from one) and line.
    CHECK(std::string(err.what()) == "t:1:47: raise_exception: Only one message, got 2");
    CHECK(err.message() == "Only one message, got 2");
    CHECK(err.kind() == "TemplateError");
    CHECK(err.line() == 1);
  }
}

TEST_CASE("chat engine: syntax errors name the template, line, column and what was expected", "[chat][engine]") {
  auto e = syntaxError("Hello\n{% for m in messages %}\n{{ m }}\n");
  CHECK(e.templateName() == "my_template");
  CHECK(e.line() == 3);
  CHECK(e.message().find("expected 'endfor' or 'else'") != std::string::npos);
  CHECK(e.message().find("'for' block opened at line 2, column 1") != std::string::npos);
  CHECK(std::string(e.what()).rfind("my_template:3:", 0) == 0);

  auto e2 = syntaxError("ab\n  {{ 1 + }}");
  CHECK(e2.line() == 2);
  CHECK(e2.column() == 10);
  CHECK(e2.message() == "expected an expression, got end of print statement '}}'");

  auto e3 = syntaxError("{% if x %}{% endfor %}");
  CHECK(e3.column() == 14);
  CHECK(e3.message().find("unknown tag 'endfor'") != std::string::npos);

  auto e4 = syntaxError("é {{ x | nofilter }}");
  CHECK(e4.column() == 8);
  CHECK(e4.message() == "no filter named 'nofilter'");

  CHECK(syntaxError("{{ x is nosuchtest }}").message() == "no test named 'nosuchtest'");
  CHECK(syntaxError("{{ 'unterminated }}").message() == "unterminated string literal");
  CHECK(syntaxError("{# never closed").message() == "missing end of comment tag '#}'");
  CHECK(syntaxError("{{ (1 }}").message().find("expected ')'") != std::string::npos);
  CHECK(syntaxError("{% break %}").message() == "'break' outside of a loop");
  CHECK(syntaxError("{% include 'x' %}").message().find("not supported") != std::string::npos);
  CHECK(syntaxError("{{ a $ b }}").message() == "unexpected character '$'");
  CHECK(syntaxError("{% set %}").message() == "expected a variable name, got end of statement block '%}'");
  CHECK(syntaxError("{{ x ]").message() == "unexpected ']'");
}

TEST_CASE("chat engine: limits keep hostile templates bounded", "[chat][engine]") {
  RenderOptions o;
  o.limits.maxLoopIterations = 1000;
  o.limits.maxOutputBytes = 4096;
  o.limits.maxSteps = 100000;
  CHECK_THROWS_AS(R("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "{}", o),
                  TemplateLimitError);
  CHECK_THROWS_AS(R("{% for i in range(1000) %}xxxxxxxxxx{% endfor %}", "{}", o), TemplateLimitError);
  CHECK_THROWS_AS(R("{{ 'x' * 100000 }}", "{}", o), TemplateLimitError);
  CHECK_THROWS_AS(R("{{ [0] * 9223372036854775807 }}", "{}", o), TemplateLimitError);
  CHECK_THROWS_AS(R("{% set ns = namespace(s='xx') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                    "{}", o),
                  TemplateLimitError);
  // tojson with a string indent is bounded while it builds its text (a deep
  // value and a long indent used to build gigabytes before the check).
  std::string deepList = "1";
  for (int i = 0; i < 30; ++i) deepList = "[" + deepList + "]";
  auto tj = runtimeError("{{ x|tojson(indent='" + std::string(100, 'y') + "') }}", "{\"x\": " + deepList + "}", o);
  CHECK(tj.kind() == "LimitError");
  CHECK_THAT(tj.message(), Catch::Contains("exceeds the limit of 4096"));
  {
    namespace d = linnet::chat::detail;
    d::JsonDumpOptions jo;
    jo.hasIndent = true;
    jo.indent = std::string(100, 'y');
    jo.maxBytes = 1000;
    CHECK_THROWS_AS(d::jsonDumps(d::Value::fromJson(json::parse(deepList)), jo), d::ValueTooLarge);
    // The repr of a list holding one string many times is bounded as it grows.
    std::vector<d::Value> items(100, d::Value::string(std::string(100, 'x')));
    const d::Value list = d::Value::list(std::move(items));
    d::ReprLimit limit(1000);
    CHECK_THROWS_AS(list.repr(), d::ValueTooLarge);
  }
  auto rp = runtimeError("{{ [('x' * 1000)] * 100 }}", "{}", o);
  CHECK(rp.kind() == "LimitError");
  CHECK_THAT(rp.message(), Catch::Contains("exceeds the limit of 4096 bytes"));
  // Steps bound work that produces no output.
  RenderOptions steps;
  steps.limits.maxSteps = 5000;
  CHECK_THROWS_AS(R("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", "{}", steps),
                  TemplateLimitError);
  // jinja2's sandbox refuses ranges over 100000.
  auto e = runtimeError("{{ range(200000)|length }}");
  CHECK(e.kind() == "OverflowError");
  CHECK(e.message() == "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  // Deep nesting is a syntax error, not a stack overflow.
  CHECK_THROWS_AS(ChatTemplate::parse("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), TemplateSyntaxError);
  CHECK_THROWS_AS(ChatTemplate::parse("{{ " + std::string(5000, '[') + " }}"), TemplateSyntaxError);
  std::string nestedIfs;
  for (int i = 0; i < 500; ++i) nestedIfs += "{% if true %}";
  CHECK_THROWS_AS(ChatTemplate::parse(nestedIfs), TemplateSyntaxError);
  std::string nots = "{{ " + std::string(3000, ' ') + "}}";
  for (int i = 0; i < 1000; ++i) nots.insert(3, "not ");
  CHECK_THROWS_AS(ChatTemplate::parse(nots), TemplateSyntaxError);
  // Container nesting built at render time is bounded too.
  CHECK_THROWS_AS(R("{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}"),
                  TemplateLimitError);
  // Evaluation nesting is bounded even when the macro-call limit is raised.
  RenderOptions deep;
  deep.limits.maxCallDepth = 1000000;
  auto nest = runtimeError("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}", deep);
  CHECK(nest.kind() == "LimitError");
  CHECK(nest.message().find("nested more than") != std::string::npos);
  // A namespace cannot be stored inside a namespace (no reference cycles).
  CHECK(runtimeError("{% set ns = namespace() %}{% set ns.me = ns %}").kind() == "TypeError");
}

TEST_CASE("chat engine: strftime_now uses the injected clock", "[chat][engine]") {
  RenderOptions o;
  o.clock = [] {
    std::tm tm{};
    tm.tm_year = 2025 - 1900;
    tm.tm_mon = 2;
    tm.tm_mday = 9;
    tm.tm_hour = 14;
    tm.tm_min = 5;
    tm.tm_sec = 7;
    tm.tm_wday = 0;
    tm.tm_yday = 67;
    return tm;
  };
  CHECK(R("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S %A %B %j') }}", "{}", o) ==
        "09 Mar 2025|2025-03-09 14:05:07 Sunday March 068");
  CHECK(R("{{ strftime_now('%Y') | length }}") == "4");  // the system clock by default
}

TEST_CASE("chat engine: render with nlohmann::json sorts object keys, ordered_json keeps them", "[chat][engine]") {
  auto t = ChatTemplate::parse("{{ d|tojson }}");
  CHECK(t.render(nlohmann::json::parse(R"({"d": {"b": 1, "a": 2}})")) == "{\"a\": 2, \"b\": 1}");
  CHECK(t.render(json::parse(R"({"d": {"b": 1, "a": 2}})")) == "{\"b\": 1, \"a\": 2}");
  CHECK(t.name() == "chat_template");
  CHECK(t.source() == "{{ d|tojson }}");
  CHECK_THROWS_AS(t.render(json::array()), ChatTemplateError);
}

TEST_CASE("chat engine: applyChatTemplate fills the context as transformers does", "[chat][engine]") {
  json messages = json::parse(R"([
    {"role": "user", "content": "Hi", "name": null},
    {"role": "assistant", "content": "Yo", "reasoning": "because"}
  ])");
  json ctx = buildChatContext(messages, true, json::parse(R"({"bos_token": "<s>", "date_string": "x"})"));
  CHECK(ctx["messages"][0].dump() == R"({"role":"user","content":"Hi"})");
  CHECK(ctx["messages"][1].dump() ==
        R"({"thinking":"because","role":"assistant","content":"Yo","reasoning":"because","reasoning_content":"because"})");
  CHECK(ctx["tools"].is_null());
  CHECK(ctx["documents"].is_null());
  CHECK(ctx["add_generation_prompt"] == true);
  CHECK(ctx["bos_token"] == "<s>");
  CHECK(ctx["date_string"] == "x");

  const std::string tpl =
      "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ m.name is defined }}{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}{{ tools is none }}";
  CHECK(applyChatTemplate(tpl, nlohmann::json::parse(R"([{"role": "user", "content": "Hi", "name": null}])"), true,
                          nlohmann::json{{"bos_token", "<s>"}}) == "<s><user>HiFalse<assistant>True");
  CHECK_THROWS_WITH(applyChatTemplate(tpl, json::array(), false),
                    "Cannot apply chat template to an empty conversation. Provide at least one message.");
  CHECK_THROWS_AS(applyChatTemplate(tpl, json::parse("[1]"), false), ChatTemplateError);
  CHECK_THROWS_AS(applyChatTemplate("{% if %}", json::parse(R"([{"role": "user"}])"), false), TemplateSyntaxError);
}
