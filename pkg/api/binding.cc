#include "pkg/api/binding.h"

#include <string_view>

namespace berth::api {
namespace {

// `value` as a JSON string literal, appended to `out`. Names are already valid UTF-8 (the decoder
// checks every string it keeps), so only quotes, backslashes and control characters need escaping.
void AppendJsonString(std::string* out, std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (byte < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[byte >> 4]);
      out->push_back(kHex[byte & 0xf]);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

}  // namespace

std::string EncodeBinding(const Pod& pod, const std::string& node_name) {
  // Built by hand: one per bound pod, and assembling a JSON tree for these few fields cost more
  // than the rest of the binding request's encoding.
  std::string body;
  body.reserve(160 + pod.meta.name.size() + pod.meta.namespace_.size() + pod.meta.uid.size() +
               node_name.size());
  body.append(R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":)");
  AppendJsonString(&body, pod.meta.name);
  body.append(R"(,"namespace":)");
  AppendJsonString(&body, pod.meta.namespace_);
  if (!pod.meta.uid.empty()) {
    body.append(R"(,"uid":)");
    AppendJsonString(&body, pod.meta.uid);
  }
  body.append(R"(},"target":{"apiVersion":"v1","kind":"Node","name":)");
  AppendJsonString(&body, node_name);
  body.append("}}");
  return body;
}

}  // namespace berth::api
