#ifndef BERTH_TEST_FUZZ_LIST_DECODING_H_
#define BERTH_TEST_FUZZ_LIST_DECODING_H_

// What the two list targets (list_fuzzer.cc, protobuf_list_fuzzer.cc) compare: the items and
// metadata a list decoder gives for a body, whole or in pieces.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/list_parser.h"

namespace berth::fuzz {

struct DecodedList {
  std::vector<nlohmann::json> items;
  api::ListMeta meta;

  bool operator==(const DecodedList& other) const {
    return items == other.items && meta.resource_version == other.meta.resource_version &&
           meta.continue_token == other.meta.continue_token;
  }
};

using ItemHandler = std::function<void(nlohmann::json&)>;

// Feeds `pieces` in turn to the decoder `make` builds around an item handler, then finishes it;
// nullopt when the decoder rejects the body with DecodeError.
inline std::optional<DecodedList> DecodeInPieces(
    const std::vector<std::string_view>& pieces,
    const std::function<std::unique_ptr<api::ListDecoder>(ItemHandler)>& make) {
  DecodedList decoded;
  const std::unique_ptr<api::ListDecoder> decoder =
      make([&decoded](nlohmann::json& item) { decoded.items.push_back(std::move(item)); });
  try {
    for (const std::string_view piece : pieces) decoder->Feed(piece);
    decoded.meta = decoder->Finish();
  } catch (const api::DecodeError&) {
    return std::nullopt;
  }
  return decoded;
}

}  // namespace berth::fuzz

#endif  // BERTH_TEST_FUZZ_LIST_DECODING_H_
