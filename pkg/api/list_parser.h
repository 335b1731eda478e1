#ifndef BERTH_PKG_API_LIST_PARSER_H_
#define BERTH_PKG_API_LIST_PARSER_H_

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace berth::api {

struct ListMeta {
  std::string resource_version;
  std::string continue_token;
};

// Streams the items of a List response ({"metadata": {...}, "items": [...]}) to `on_item`, one
// object at a time, without ever building the whole response as a JSON tree. Subtrees that
// scheduling never reads are skipped while parsing (metadata.managedFields, the
// last-applied-configuration annotation, container statuses, and per-container env, mounts,
// probes, lifecycle, security context, command and args), so they cost neither allocations nor
// copies. `on_item` may move from the object it is given. Throws DecodeError on malformed JSON.
ListMeta ParseList(std::string_view body, const std::function<void(nlohmann::json&)>& on_item);

// A LIST response decoded while it arrives, whatever its encoding (JSON here, protobuf in
// pkg/api/protobuf.h): items go to the callback the decoder was made with.
class ListDecoder {
 public:
  virtual ~ListDecoder() = default;
  // Throws DecodeError when a completed item is malformed.
  virtual void Feed(std::string_view bytes) = 0;
  // The list's metadata once the whole body was fed. Throws DecodeError on a malformed or
  // truncated body.
  virtual ListMeta Finish() = 0;
};

// ParseList over a body that arrives in pieces: items are decoded as soon as they are complete,
// so decoding a large LIST overlaps the apiserver writing it instead of following it. Items go to
// `on_item` in batches of about kBatchBytes through ParseList (same skipping, same errors); the
// rest of the response (kind, metadata, the items array emptied) is parsed by Finish(). A body
// whose "items" key is spelled with escapes is not recognized early and is handed to ParseList
// whole by Finish(), with the same result.
class ListStreamParser final : public ListDecoder {
 public:
  // `batch_bytes`: how much of the items array is gathered before it is parsed.
  explicit ListStreamParser(std::function<void(nlohmann::json&)> on_item,
                            size_t batch_bytes = kBatchBytes);

  // Throws DecodeError when a completed batch of items is malformed.
  void Feed(std::string_view bytes) override;
  // Throws DecodeError on malformed JSON, including a body that ended early.
  ListMeta Finish() override;

  static constexpr size_t kBatchBytes = 256 * 1024;

 private:
  void FlushBatch();
  void CaptureKey(const char* bytes, size_t count);

  std::function<void(nlohmann::json&)> on_item_;
  const size_t batch_bytes_;
  std::string envelope_;  // Everything but the elements of the items array.
  std::string batch_;     // The current batch as a list of its own: {"items":[item,item...
  // Nothing but whitespace was added to the batch since it was started.
  bool batch_empty_ = true;
  // A batch was flushed at a comma, so an item must follow before the next comma or the end.
  bool expect_item_ = false;
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  bool in_items_ = false;
  // The last string at depth 1, raw, while it is short enough to be "items".
  std::string key_;
  bool capturing_key_ = false;
};

struct ParsedWatchEvent {
  std::string type;  // Empty when the event has no string "type".
  nlohmann::json object;
  bool has_object = false;  // Whether "object" was a JSON object.
  // Protobuf only, when asked for: the undecoded v1.Pod message of an ADDED, MODIFIED or DELETED
  // event, `object` then being null (see ParseProtobufWatchEvent).
  std::string protobuf_pod;
};

// Parses one watch event line ({"type": "...", "object": {...}}) dropping the same subtrees of
// the object as ParseList. Throws DecodeError on malformed JSON.
ParsedWatchEvent ParseWatchEvent(std::string_view line);

}  // namespace berth::api

#endif  // BERTH_PKG_API_LIST_PARSER_H_
