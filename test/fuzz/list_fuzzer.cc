// JSON LIST responses ({"metadata": {...}, "items": [...]}) and watch event lines, read by the
// skipping parser (pkg/api/list_parser.h). The payload is parsed whole by ParseList and fed in
// pieces (fuzz.h's Split) to ListStreamParser, which must give the same result; the first byte's
// high bits choose the stream parser's batch size, so batches end at every item boundary.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/list_parser.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

using json = nlohmann::json;

struct Parsed {
  std::vector<json> items;
  api::ListMeta meta;
};

bool operator==(const Parsed& a, const Parsed& b) {
  return a.items == b.items && a.meta.resource_version == b.meta.resource_version &&
         a.meta.continue_token == b.meta.continue_token;
}

std::optional<Parsed> Whole(std::string_view body) {
  Parsed parsed;
  try {
    parsed.meta =
        api::ParseList(body, [&](json& item) { parsed.items.push_back(std::move(item)); });
  } catch (const api::DecodeError&) {
    return std::nullopt;
  }
  return parsed;
}

std::optional<Parsed> Streamed(const std::vector<std::string_view>& pieces, size_t batch_bytes) {
  Parsed parsed;
  api::ListStreamParser parser([&](json& item) { parsed.items.push_back(std::move(item)); },
                               batch_bytes);
  try {
    for (const std::string_view piece : pieces) parser.Feed(piece);
    parsed.meta = parser.Finish();
  } catch (const api::DecodeError&) {
    return std::nullopt;
  }
  return parsed;
}

void Check(std::string_view input) {
  if (input.empty()) return;
  const size_t batch_bytes = 1 + (static_cast<unsigned char>(input[0]) >> 3) * 8;
  const SplitInput split = Split(input);

  const std::optional<Parsed> whole = Whole(split.payload);
  const std::optional<Parsed> streamed = Streamed(split.pieces, batch_bytes);
  Require(whole.has_value() == streamed.has_value(),
          "a list parses in pieces exactly when it parses whole");
  Require(!whole || *whole == *streamed, "a list parsed in pieces has the same items and metadata");

  try {
    const api::ParsedWatchEvent event = api::ParseWatchEvent(split.payload);
    Require(event.has_object == event.object.is_object(), "a watch event's object is an object");
  } catch (const api::DecodeError&) {
  }
}

}  // namespace
}  // namespace berth::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  berth::fuzz::Check(berth::fuzz::AsView(data, size));
  return 0;
}
