// JSON LIST responses ({"metadata": {...}, "items": [...]}) and watch event lines, read by the
// skipping parser (pkg/api/list_parser.h). The payload is parsed whole by ParseList and fed in
// pieces (fuzz.h's Split) to ListStreamParser, which must give the same result; the first byte's
// high bits choose the stream parser's batch size, so batches end at every item boundary.

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/list_parser.h"
#include "test/fuzz/fuzz.h"
#include "test/fuzz/list_decoding.h"

namespace berth::fuzz {
namespace {

using json = nlohmann::json;

std::optional<DecodedList> Whole(std::string_view body) {
  DecodedList decoded;
  try {
    decoded.meta =
        api::ParseList(body, [&](json& item) { decoded.items.push_back(std::move(item)); });
  } catch (const api::DecodeError&) {
    return std::nullopt;
  }
  return decoded;
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  if (input.empty()) return;
  const size_t batch_bytes = 1 + (static_cast<unsigned char>(input[0]) >> 3) * 8;
  const SplitInput split = Split(input);

  const std::optional<DecodedList> whole = Whole(split.payload);
  const std::optional<DecodedList> streamed =
      DecodeInPieces(split.pieces, [&](ItemHandler on_item) {
        return std::make_unique<api::ListStreamParser>(std::move(on_item), batch_bytes);
      });
  Require(whole.has_value() == streamed.has_value(),
          "a list parses in pieces exactly when it parses whole");
  Require(!whole || *whole == *streamed, "a list parsed in pieces has the same items and metadata");

  try {
    const api::ParsedWatchEvent event = api::ParseWatchEvent(split.payload);
    Require(event.has_object == event.object.is_object(), "a watch event's object is an object");
  } catch (const api::DecodeError&) {
  }
}

}  // namespace berth::fuzz
