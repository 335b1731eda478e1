// Extender responses: the body an extender answers filter, prioritize, preempt and bind with, read
// by pkg/extender/wire.h's decoders through go_json.h's pruning parser. An extender is a service
// the user points the scheduler at, not the apiserver, so its bytes are arbitrary: a decoder must
// reject what it cannot read with extender::ResponseError only.
//
// The same bytes also go through DecodePruned with a shape that nests structs, maps and arrays
// through itself (so shaped containers can be as deep as the parser allows), and with the shape
// that keeps everything, which must give what nlohmann/json parses whenever nlohmann accepts the
// body as one JSON value within the nesting limit.

#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pkg/extender/go_json.h"
#include "pkg/extender/wire.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

using extender::ResponseError;
using extender::Shape;
using json = nlohmann::json;

// A shape that refers to itself: each struct field, array item and map value is another level of
// it, so every container the input nests stays shaped.
extern const Shape kTreeArray;
extern const Shape kTreeMap;
const Shape kLeaf = Shape::Value();
const Shape kTree = Shape::Struct({{"a", &kTree},
                                   {"items", &kTreeArray},
                                   {"map", &kTreeMap},
                                   {"score", &kLeaf},
                                   {"kind", &kLeaf}});
const Shape kTreeArray = Shape::Array(&kTree);
const Shape kTreeMap = Shape::Map(&kTreeArray);
const Shape kAll = Shape::Value();

// The pruning parser's nesting limit (pkg/api/json_sax.h): the top value is at depth 0, and a
// value at a greater depth than this is rejected, even a scalar.
constexpr int kMaxDepth = 512;

// Whether some value inside `value` lies more than `levels` levels below it; the recursion stops
// there, however deep nlohmann/json nested what it built.
bool NestedDeeper(const json& value, int levels) {
  if (!value.is_structured()) return false;
  if (levels == 0) return !value.empty();
  return std::any_of(value.begin(), value.end(),
                     [&](const json& item) { return NestedDeeper(item, levels - 1); });
}

template <typename Call>
void Decode(const Call& decode) {
  try {
    decode();
  } catch (const ResponseError&) {
  }
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  Decode([&] { extender::wire::DecodeFilterResult(input); });
  Decode([&] { extender::wire::DecodeHostPriorityList(input); });
  Decode([&] { extender::wire::DecodePreemptionResult(input); });
  Decode([&] { extender::wire::DecodeBindingResult(input); });
  Decode([&] { extender::DecodePruned(input, kTree); });

  json whole;
  bool whole_ok = true;
  try {
    whole = extender::DecodePruned(input, kAll);
  } catch (const ResponseError&) {
    whole_ok = false;
  }
  const json reference = json::parse(input.begin(), input.end(), nullptr,
                                     /*allow_exceptions=*/false);
  if (reference.is_discarded() || NestedDeeper(reference, kMaxDepth)) return;
  Require(whole_ok, "a body nlohmann/json accepts is accepted when everything is kept",
          reference.dump(-1, ' ', false, json::error_handler_t::replace));
  Require(whole == reference, "a body kept whole reads as nlohmann/json reads it",
          whole.dump(-1, ' ', false, json::error_handler_t::replace) + " vs " +
              reference.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace berth::fuzz
