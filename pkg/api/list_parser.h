#ifndef BERTH_PKG_API_LIST_PARSER_H_
#define BERTH_PKG_API_LIST_PARSER_H_

#include <functional>
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

struct ParsedWatchEvent {
  std::string type;  // Empty when the event has no string "type".
  nlohmann::json object;
  bool has_object = false;  // Whether "object" was a JSON object.
};

// Parses one watch event line ({"type": "...", "object": {...}}) dropping the same subtrees of
// the object as ParseList. Throws DecodeError on malformed JSON.
ParsedWatchEvent ParseWatchEvent(std::string_view line);

}  // namespace berth::api

#endif  // BERTH_PKG_API_LIST_PARSER_H_
