// The apiserver's protobuf encoding (pkg/api/protobuf.h): an enveloped object, a v1.Pod message
// on the fast path and on the general one, and one watch event frame, all from the same bytes.
// Whenever the fast path decodes a pod, the general path must decode the same pod.

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "pkg/api/codec.h"
#include "pkg/api/errors.h"
#include "pkg/api/protobuf.h"
#include "pkg/api/types.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

using json = nlohmann::json;

// The objects Berth reads from protobuf go on to the JSON decoders.
void DecodeAsObjects(const json& object) {
  for (const auto decode :
       {+[](const json& j) { api::DecodePod(j); }, +[](const json& j) { api::DecodeNode(j); }}) {
    try {
      decode(object);
    } catch (const api::DecodeError&) {
    }
  }
}

void CheckPodMessage(std::string_view message) {
  const std::optional<api::Pod> fast = api::TryDecodeProtobufPod(message);
  std::optional<api::Pod> general;
  try {
    general = api::DecodePod(api::ProtobufPodToJson(message));
  } catch (const api::DecodeError&) {
  }
  if (fast) {
    Require(general.has_value(), "a pod the fast path decodes, the general path decodes");
    Require(*fast == *general, "the fast and the general path decode the same pod");
  }
}

void CheckObject(std::string_view envelope) {
  json object;
  try {
    object = api::DecodeProtobufObject(envelope);
  } catch (const api::DecodeError&) {
    return;
  }
  DecodeAsObjects(object);
  if (const auto items = object.find("items"); items != object.end() && items->is_array()) {
    for (const json& item : *items) DecodeAsObjects(item);
  }
}

void CheckWatchEvent(std::string_view frame, bool undecoded_pods) {
  api::ParsedWatchEvent event;
  try {
    event = api::ParseProtobufWatchEvent(frame, undecoded_pods);
  } catch (const api::DecodeError&) {
    return;
  }
  if (!event.protobuf_pod.empty()) {
    Require(undecoded_pods, "a pod is left undecoded only when asked");
    CheckPodMessage(event.protobuf_pod);
  } else if (event.has_object) {
    DecodeAsObjects(event.object);
  }
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  CheckObject(input);
  CheckPodMessage(input);
  CheckWatchEvent(input, false);
  CheckWatchEvent(input, true);
}

}  // namespace berth::fuzz
