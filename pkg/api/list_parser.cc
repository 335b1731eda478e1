#include "pkg/api/list_parser.h"

#include <algorithm>
#include <string>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/json_sax.h"
#include "pkg/api/types.h"

namespace berth::api {
namespace {

using json = nlohmann::json;

// Keys whose values are dropped inside an item, by where they appear.
bool SkippedInContainer(const std::string& key) {
  static const char* const kKeys[] = {"env",
                                      "envFrom",
                                      "volumeMounts",
                                      "volumeDevices",
                                      "livenessProbe",
                                      "readinessProbe",
                                      "startupProbe",
                                      "lifecycle",
                                      "securityContext",
                                      "command",
                                      "args",
                                      "resizePolicy",
                                      "terminationMessagePath",
                                      "terminationMessagePolicy"};
  for (const char* k : kKeys) {
    if (key == k) return true;
  }
  return false;
}

// One SAX handler for a List body. Levels are counted from the body's outer object (level 1);
// "items" is an array at level 2 and each item an object at level 3. Inside an item, `path_`
// holds the key (or "[]" for array elements) of every open container below the item.
//
// The same handler reads a watch event ({"type": ..., "object": {...}}): there the object is the
// one item, an object at level 2 under "object", and "type" is a string at level 1.
class ListSax {
 public:
  // A List body: items under "items", list metadata into `meta`.
  ListSax(const std::function<void(json&)>& on_item, ListMeta* meta)
      : on_item_(on_item), meta_(meta), item_key_("items"), item_level_(3) {}
  // A watch event: the item under "object", the event type into `type`.
  ListSax(const std::function<void(json&)>& on_item, std::string* type)
      : on_item_(on_item), type_(type), item_key_("object"), item_level_(2) {}

  bool null() { return Scalar(nullptr); }
  bool boolean(bool v) { return Scalar(v); }
  bool number_integer(json::number_integer_t v) { return Scalar(v); }
  bool number_unsigned(json::number_unsigned_t v) { return Scalar(v); }
  bool number_float(json::number_float_t v, const std::string&) { return Scalar(v); }
  bool string(std::string& v) {
    if (skip_depth_ > 0 || skip_next_) return Scalar(nullptr);
    if (level_ == 1 && type_ != nullptr && last_top_key_ == "type") {
      *type_ = std::move(v);
      return true;
    }
    if (level_ == 2 && in_top_metadata_ && meta_ != nullptr) {
      if (last_top_key_ == "resourceVersion") meta_->resource_version = v;
      if (last_top_key_ == "continue") meta_->continue_token = v;
      return true;
    }
    return Scalar(std::move(v));
  }

  bool start_object(std::size_t) {
    level_++;
    if (Skipping()) return true;
    if (level_ == item_level_ && in_items_) {
      item_ = json::object();
      stack_.clear();
      path_.clear();
      stack_.push_back(&item_);
      return true;
    }
    if (level_ > item_level_ && in_items_) return Open(json::object());
    return true;
  }

  bool key(std::string& k) {
    if (skip_depth_ > 0) return true;
    if (level_ == 1) {
      in_items_ = k == item_key_;
      in_top_metadata_ = k == "metadata";
      last_top_key_ = std::move(k);
      return true;
    }
    if (level_ == 2 && in_top_metadata_) {
      last_top_key_ = k;
      return true;
    }
    if (level_ < item_level_ || !in_items_) return true;
    if (ShouldSkip(k)) {
      skip_next_ = true;
      return true;
    }
    pending_key_ = &(*stack_.back())[k];
    current_key_ = std::move(k);
    return true;
  }

  bool end_object() {
    if (skip_depth_ > 0) {
      EndSkipped();
      return true;
    }
    if (level_ == item_level_ && in_items_) {
      on_item_(item_);
      item_ = json();
      stack_.clear();
    } else if (level_ > item_level_ && in_items_) {
      Pop();
    }
    level_--;
    return true;
  }

  bool start_array(std::size_t) {
    level_++;
    if (Skipping()) return true;
    if (level_ > item_level_ && in_items_) return Open(json::array());
    return true;
  }

  bool end_array() {
    if (skip_depth_ > 0) {
      EndSkipped();
      return true;
    }
    if (level_ > item_level_ && in_items_) Pop();
    level_--;
    return true;
  }

  // Asked by the parser before each value: a value under a dropped key is not decoded at all.
  bool SkipNextValue() {
    if (!skip_next_) return false;
    skip_next_ = false;
    return true;
  }

 private:
  // A container starts: if its key was marked skipped, everything until it closes is dropped.
  bool Skipping() {
    if (skip_depth_ > 0) {
      skip_depth_++;
      return true;
    }
    if (skip_next_) {
      skip_next_ = false;
      skip_depth_ = 1;
      return true;
    }
    return false;
  }

  // A container below the item level. With no item open (the "items" array holds a non-object,
  // or a watch event's "object" is not one) there is nothing to put it in, so it is dropped.
  bool Open(json&& container) {
    if (stack_.empty()) {
      skip_depth_ = 1;
      return true;
    }
    stack_.push_back(Emplace(std::move(container), true));
    return true;
  }

  void EndSkipped() {
    skip_depth_--;
    level_--;
  }

  template <typename T>
  bool Scalar(T&& v) {
    if (skip_depth_ > 0) return true;
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    if (level_ >= item_level_ && in_items_ && !stack_.empty()) {
      Emplace(json(std::forward<T>(v)), false);
    }
    return true;
  }

  // Places a value in the container on top of the stack and returns it; a container value also
  // extends path_.
  json* Emplace(json&& v, bool container) {
    json* top = stack_.back();
    json* placed;
    if (top->is_array()) {
      top->push_back(std::move(v));
      placed = &top->back();
      if (container) path_.push_back("[]");
    } else {
      *pending_key_ = std::move(v);
      placed = pending_key_;
      if (container) path_.push_back(current_key_);
    }
    return placed;
  }

  void Pop() {
    stack_.pop_back();
    path_.pop_back();
  }

  bool ShouldSkip(const std::string& key) const {
    const size_t depth = stack_.size() - 1;  // Open containers below the item.
    if (depth == 1) {
      const std::string& parent = path_[0];
      if (parent == "metadata") return key == "managedFields";
      if (parent == "status") {
        return key == "containerStatuses" || key == "initContainerStatuses" ||
               key == "ephemeralContainerStatuses";
      }
      if (parent == "spec") return key == "ephemeralContainers";
      return false;
    }
    if (depth == 2 && path_[0] == "metadata" && path_[1] == "annotations") {
      return key == kLastAppliedAnnotation;
    }
    if (depth == 3 && path_[0] == "spec" &&
        (path_[1] == "containers" || path_[1] == "initContainers") && path_[2] == "[]") {
      return SkippedInContainer(key);
    }
    return false;
  }

  const std::function<void(json&)>& on_item_;
  ListMeta* meta_ = nullptr;
  std::string* type_ = nullptr;
  const std::string_view item_key_;
  const int item_level_;
  int level_ = 0;
  bool in_items_ = false;
  bool in_top_metadata_ = false;
  std::string last_top_key_;
  int skip_depth_ = 0;
  bool skip_next_ = false;

  json item_;
  std::vector<json*> stack_;
  std::vector<std::string> path_;
  json* pending_key_ = nullptr;
  std::string current_key_;
};

}  // namespace

ListMeta ParseList(std::string_view body, const std::function<void(json&)>& on_item) {
  ListMeta meta;
  ListSax sax(on_item, &meta);
  JsonSaxParser(body, "list").Parse(&sax);
  return meta;
}

namespace {
constexpr std::string_view kBatchPrefix = R"({"items":[)";
constexpr std::string_view kItemsKey = "items";

bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
}  // namespace

ListStreamParser::ListStreamParser(std::function<void(json&)> on_item, size_t batch_bytes)
    : on_item_(std::move(on_item)), batch_bytes_(batch_bytes), batch_(kBatchPrefix) {}

void ListStreamParser::FlushBatch() {
  batch_.append("]}");
  ParseList(batch_, on_item_);
  batch_.assign(kBatchPrefix);
}

void ListStreamParser::CaptureKey(const char* bytes, size_t count) {
  // Only whether the key is exactly "items" matters, so one byte more than that is enough.
  if (!capturing_key_ || key_.size() > kItemsKey.size()) return;
  key_.append(bytes, std::min(count, kItemsKey.size() + 1 - key_.size()));
}

void ListStreamParser::Feed(std::string_view bytes) {
  // Only structure is tracked here (nesting, strings, the items array's commas). Every byte
  // lands in a batch or the envelope, which ParseList validates, except the items array's own
  // brackets and commas, which are checked here. Bytes are copied in runs between those.
  const char* const data = bytes.data();
  const size_t size = bytes.size();
  size_t run = 0;  // data[run, i) is still to be appended to the current output.
  auto take_run = [&](size_t end) {
    (in_items_ ? batch_ : envelope_).append(data + run, end - run);
    run = end + 1;  // The byte at `end`, if any, is handled by the caller.
  };
  size_t i = 0;
  while (i < size) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
        CaptureKey(data + i, 1);
        i++;
        continue;
      }
      size_t end = i;
      while (end < size && data[end] != '"' && data[end] != '\\') end++;
      CaptureKey(data + i, end - i);
      i = end;
      if (i == size) break;
      if (data[i] == '\\') {
        escaped_ = true;
        CaptureKey(data + i, 1);
      } else {
        in_string_ = false;
        capturing_key_ = false;
      }
      i++;
      continue;
    }
    const char c = data[i];
    if (in_items_ && depth_ == 2) {
      // A comma needs an item before it (in this batch) and after it; a flushed batch takes its
      // commas along, so those two checks are made here.
      if ((c == ',' && batch_empty_) || (c == ']' && expect_item_)) {
        throw DecodeError("list", "malformed JSON: an item of \"items\" is missing");
      }
      if (c == ']') {
        take_run(i);
        if (!batch_empty_) FlushBatch();
        in_items_ = false;
        depth_--;
        i++;
        continue;
      }
      if (c == ',') {
        take_run(i);
        if (batch_.size() >= batch_bytes_) {
          // Every item before this comma is complete.
          FlushBatch();
          batch_empty_ = true;
          expect_item_ = true;
        } else {
          batch_.push_back(',');
        }
        i++;
        continue;
      }
      if (!IsJsonSpace(c)) {
        batch_empty_ = false;
        expect_item_ = false;
      }
    }
    switch (c) {
      case '"':
        in_string_ = true;
        if (depth_ == 1 && !in_items_) {
          capturing_key_ = true;
          key_.clear();
        }
        break;
      case '[':
        if (depth_ == 1 && !in_items_ && key_ == kItemsKey) {
          take_run(i);
          envelope_.append("[]");
          in_items_ = true;
          batch_empty_ = true;
          expect_item_ = false;
          depth_++;
          i++;
          continue;
        }
        depth_++;
        break;
      case '{':
        depth_++;
        break;
      case ']':
      case '}':
        depth_--;
        break;
      default:
        break;
    }
    i++;
  }
  take_run(size);
}

ListMeta ListStreamParser::Finish() {
  // A body that ended inside the items array leaves the envelope's object open, which ParseList
  // rejects like any truncated body.
  return ParseList(envelope_, on_item_);
}

ParsedWatchEvent ParseWatchEvent(std::string_view line) {
  ParsedWatchEvent event;
  const std::function<void(json&)> on_object = [&](json& object) {
    event.object = std::move(object);
    event.has_object = true;
  };
  ListSax sax(on_object, &event.type);
  JsonSaxParser(line, "watch event").Parse(&sax);
  return event;
}

}  // namespace berth::api
