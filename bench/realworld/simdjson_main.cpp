// The driver of bench/realworld_cpp.py: parses each argument (a JSON file, else the text itself)
// with simdjson's DOM API and walks it; `sum:[...]` sums an array with the On-Demand API.
// Errors take the library's rare paths (the code PGO and BOLT move away).
#include "simdjson.h"
#include <cstdio>
#include <string>
#include <map>
using namespace simdjson;

struct Stats { size_t objects = 0, arrays = 0, strings = 0, numbers = 0, other = 0, depth = 0; };

static void walk(dom::element e, Stats &s, size_t depth) {
  if (depth > s.depth) s.depth = depth;
  switch (e.type()) {
  case dom::element_type::OBJECT:
    s.objects++;
    for (auto field : dom::object(e)) walk(field.value, s, depth + 1);
    break;
  case dom::element_type::ARRAY:
    s.arrays++;
    for (auto child : dom::array(e)) walk(child, s, depth + 1);
    break;
  case dom::element_type::STRING: s.strings++; break;
  case dom::element_type::INT64: case dom::element_type::UINT64:
  case dom::element_type::DOUBLE: s.numbers++; break;
  default: s.other++;
  }
}

static int ondemand_sum(const padded_string &json) {
  ondemand::parser p;
  auto doc = p.iterate(json);
  double total = 0;
  try {
    for (auto v : doc.get_array()) {
      double d;
      if (v.get_double().get(d) == SUCCESS) total += d;
    }
  } catch (simdjson_error &err) {
    std::fprintf(stderr, "ondemand: %s\n", err.what());
    return 1;
  }
  std::printf("sum %g\n", total);
  return 0;
}

int main(int argc, char **argv) {
  int bad = 0;
  dom::parser parser;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg.rfind("sum:", 0) == 0) {
      padded_string j(arg.substr(4));
      bad += ondemand_sum(j);
      continue;
    }
    padded_string json;
    auto error = padded_string::load(arg).get(json);
    if (error) {
      padded_string inline_json(arg);
      json = std::move(inline_json);
    }
    dom::element doc;
    error = parser.parse(json).get(doc);
    if (error) {
      std::fprintf(stderr, "%s: %s\n", arg.c_str(), error_message(error));
      bad++;
      continue;
    }
    Stats s;
    walk(doc, s, 0);
    std::printf("%zu objects %zu arrays %zu strings %zu numbers %zu other depth %zu\n",
                s.objects, s.arrays, s.strings, s.numbers, s.other, s.depth);
  }
  return bad;
}
