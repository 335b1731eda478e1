// Protobuf LIST responses (a PodList or NodeList in the apiserver's envelope) decoded while they
// arrive by ProtobufListParser (pkg/api/protobuf.h). The payload is fed whole and in pieces
// (fuzz.h's Split): both must give the same items and metadata, the same items DecodeProtobufObject
// finds in the whole body, and the same number of raw items to a handler that takes them all.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/list_parser.h"
#include "pkg/api/protobuf.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

using json = nlohmann::json;

struct Parsed {
  std::vector<json> items;
  api::ListMeta meta;
};

std::optional<Parsed> Parse(const std::vector<std::string_view>& pieces,
                            const api::ProtobufItemHandler& on_message) {
  Parsed parsed;
  api::ProtobufListParser parser([&](json& item) { parsed.items.push_back(std::move(item)); },
                                 on_message);
  try {
    for (const std::string_view piece : pieces) parser.Feed(piece);
    parsed.meta = parser.Finish();
  } catch (const api::DecodeError&) {
    return std::nullopt;
  }
  return parsed;
}

void Check(std::string_view input) {
  const SplitInput split = Split(input);
  const std::optional<Parsed> whole = Parse({split.payload}, nullptr);
  const std::optional<Parsed> pieces = Parse(split.pieces, nullptr);
  Require(whole.has_value() == pieces.has_value(),
          "a list decodes in pieces exactly when it decodes whole");
  if (!whole) return;
  Require(whole->items == pieces->items &&
              whole->meta.resource_version == pieces->meta.resource_version &&
              whole->meta.continue_token == pieces->meta.continue_token,
          "a list decoded in pieces has the same items and metadata");

  json object;
  try {
    object = api::DecodeProtobufObject(split.payload);
  } catch (const api::DecodeError&) {
    Require(false, "a list the list parser decodes, DecodeProtobufObject decodes");
  }
  const json items = object.value("items", json::array());
  Require(items == json(whole->items), "the list parser and DecodeProtobufObject agree on items");

  size_t taken = 0;
  const std::optional<Parsed> raw = Parse(split.pieces, [&](std::string_view) {
    ++taken;
    return true;
  });
  Require(raw.has_value() && raw->items.empty() && taken == whole->items.size(),
          "a handler taking every raw item gets each item once");
}

}  // namespace
}  // namespace berth::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  berth::fuzz::Check(berth::fuzz::AsView(data, size));
  return 0;
}
