// Protobuf LIST responses (a PodList or NodeList in the apiserver's envelope) decoded while they
// arrive by ProtobufListParser (pkg/api/protobuf.h). The payload is fed whole and in pieces
// (fuzz.h's Split): both must give the same items and metadata, the same items DecodeProtobufObject
// finds in the whole body, and the same number of raw items to a handler that takes them all.

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/list_parser.h"
#include "pkg/api/protobuf.h"
#include "test/fuzz/fuzz.h"
#include "test/fuzz/list_decoding.h"

namespace berth::fuzz {
namespace {

using json = nlohmann::json;

std::optional<DecodedList> Decode(const std::vector<std::string_view>& pieces,
                                  const api::ProtobufItemHandler& on_message) {
  return DecodeInPieces(pieces, [&](ItemHandler on_item) {
    return std::make_unique<api::ProtobufListParser>(std::move(on_item), on_message);
  });
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  const SplitInput split = Split(input);
  const std::optional<DecodedList> whole = Decode({split.payload}, nullptr);
  const std::optional<DecodedList> pieces = Decode(split.pieces, nullptr);
  Require(whole.has_value() == pieces.has_value(),
          "a list decodes in pieces exactly when it decodes whole");
  if (!whole) return;
  Require(*whole == *pieces, "a list decoded in pieces has the same items and metadata");

  json object;
  try {
    object = api::DecodeProtobufObject(split.payload);
  } catch (const api::DecodeError&) {
    Require(false, "a list the list parser decodes, DecodeProtobufObject decodes");
  }
  const json items = object.value("items", json::array());
  Require(items == json(whole->items), "the list parser and DecodeProtobufObject agree on items");

  size_t taken = 0;
  const std::optional<DecodedList> raw = Decode(split.pieces, [&](std::string_view) {
    ++taken;
    return true;
  });
  Require(raw.has_value() && raw->items.empty() && taken == whole->items.size(),
          "a handler taking every raw item gets each item once");
}

}  // namespace berth::fuzz
