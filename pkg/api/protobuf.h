#ifndef BERTH_PKG_API_PROTOBUF_H_
#define BERTH_PKG_API_PROTOBUF_H_

// The apiserver's protobuf encoding (application/vnd.kubernetes.protobuf) for the objects Berth
// lists and watches: Pod, Node and their lists, plus the Status of a watch ERROR event.
//
// Protobuf is read, never written, and only as a cheaper wire form of the same objects. The
// general path turns each object into the JSON the apiserver would have sent for it, restricted
// to the fields pkg/api/codec.h reads, so DecodePod/DecodeNode (and their validation) are the same
// for both encodings; TryDecodeProtobufPod and TryDecodeProtobufNode are faster paths that give
// the same result.
// Every field scheduling never reads (managedFields, container statuses, env, probes,
// ...) is skipped by its length without being looked at. Only proto fields Berth knows are
// decoded; unknown field numbers are skipped, as protobuf requires.
//
// A body that is not well-formed protobuf, a known field with the wrong wire type, a string that
// is not UTF-8 or a kind this file has no schema for throws DecodeError naming the JSON path
// ("items[3].spec.containers[0].resources.requests.cpu: ...").

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "pkg/api/list_parser.h"
#include "pkg/api/types.h"

namespace berth::api {

// A message schema: which proto fields of a Kubernetes type Berth reads, under their JSON names.
struct ProtobufMessage;

inline constexpr std::string_view kProtobufMediaType = "application/vnd.kubernetes.protobuf";
// What list and watch requests that prefer protobuf send as Accept: kinds the apiserver cannot
// encode as protobuf (custom resources) still come back as JSON.
inline constexpr std::string_view kAcceptProtobufOrJson =
    "application/vnd.kubernetes.protobuf, application/json";

// Whether a Content-Type value names the Kubernetes protobuf encoding (parameters such as
// ";stream=watch" allowed, case-insensitive).
bool IsProtobufMediaType(std::string_view content_type);

// Decodes one object in the apiserver's envelope ("k8s\0" followed by a runtime.Unknown naming
// its apiVersion and kind): Pod, Node, Status, PodList or NodeList.
nlohmann::json DecodeProtobufObject(std::string_view envelope);

// Decodes one frame of a protobuf watch stream (the bytes after its 4-byte length): a
// metav1.WatchEvent whose object is an enveloped object as above. With `undecoded_pods`, the Pod
// of an ADDED, MODIFIED or DELETED event is left undecoded in `protobuf_pod`, for
// TryDecodeProtobufPod and, when that declines, ProtobufPodToJson.
ParsedWatchEvent ParseProtobufWatchEvent(std::string_view frame, bool undecoded_pods = false);

// The JSON the general path makes of a v1.Pod message (no envelope).
nlohmann::json ProtobufPodToJson(std::string_view message);

// Decodes a v1.Pod message (the bytes inside the envelope or a list's item) straight into a Pod,
// with no JSON in between: the common case, faster than DecodePod over DecodeProtobufObject.
// Returns std::nullopt for anything it leaves to that general path (malformed bytes, an invalid
// value, a singular message sent twice, which protobuf merges), which then gives the Pod or the
// DecodeError naming the field. Whenever it returns a Pod, the general path gives an equal one.
std::optional<Pod> TryDecodeProtobufPod(std::string_view message);

// The same for a v1.Node message: straight into a Node, or std::nullopt for anything the general
// path (DecodeNode over DecodeProtobufObject) decides, which then gives an equal Node whenever
// this gives one.
std::optional<Node> TryDecodeProtobufNode(std::string_view message);

// Offered each list item's raw message before it is decoded to JSON; returns true when it took
// the item, which is then not passed to the JSON callback.
using ProtobufItemHandler = std::function<bool(std::string_view message)>;

// A protobuf LIST body decoded while it arrives: each item is decoded and handed to `on_item`
// as soon as its last byte is fed, so only the item being received is ever buffered. With
// `on_message`, each item goes to it first and reaches `on_item` only when it declines.
class ProtobufListParser final : public ListDecoder {
 public:
  explicit ProtobufListParser(std::function<void(nlohmann::json&)> on_item,
                              ProtobufItemHandler on_message = nullptr);

  void Feed(std::string_view bytes) override;
  ListMeta Finish() override;

 private:
  enum class Stage { kMagic, kEnvelope, kList };

  // Decodes what it can of `data` (the unconsumed body); returns how many bytes it consumed.
  size_t Consume(std::string_view data);

  std::function<void(nlohmann::json&)> on_item_;
  ProtobufItemHandler on_message_;
  std::string pending_;  // Bytes fed but not yet consumed: at most one incomplete field.
  Stage stage_ = Stage::kMagic;
  const ProtobufMessage* item_message_ =
      nullptr;  // The item schema, known once the envelope's kind is.
  bool list_seen_ = false;
  uint64_t list_left_ = 0;  // Bytes of the list message not yet consumed, in Stage::kList.
  size_t items_ = 0;
  ListMeta meta_;
};

// The decoder for a LIST response served with `content_type`: protobuf or (anything else) JSON.
// `on_message` is used only for protobuf (see ProtobufListParser).
std::unique_ptr<ListDecoder> NewListDecoder(std::string_view content_type,
                                            std::function<void(nlohmann::json&)> on_item,
                                            ProtobufItemHandler on_message = nullptr);

}  // namespace berth::api

#endif  // BERTH_PKG_API_PROTOBUF_H_
