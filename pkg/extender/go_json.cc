#include "pkg/extender/go_json.h"

#include <limits>

#include "pkg/api/errors.h"
#include "pkg/api/json_sax.h"

namespace berth::extender {
namespace {

using json = nlohmann::json;

// Builds the pruned value from the parser's events. Invariant: every frame's container lives in
// the tree under root_ and does not move while the frame is open (a parent is not changed until
// its child's frame is closed; objects are node-based maps).
class PruningBuilder {
 public:
  explicit PruningBuilder(const Shape& root) : root_shape_(&root) {}

  json Take() { return std::move(root_); }

  bool SkipNextValue() {
    bool skip = false;
    next_ = NextShape(&skip);
    return skip || (next_ != nullptr && next_->kind() == Shape::Kind::kSkip);
  }

  bool null() { return Put(json(nullptr)); }
  bool boolean(bool v) { return Put(json(v)); }
  bool number_integer(int64_t v) { return Put(json(v)); }
  bool number_unsigned(uint64_t v) { return Put(json(v)); }
  bool number_float(double v, const std::string&) { return Put(json(v)); }
  bool string(std::string& v) { return Put(json(std::move(v))); }

  bool start_object(size_t) {
    // A struct or map decoded twice (a duplicate key) is filled again, as Go fills the existing
    // value rather than replacing it.
    const Shape* shape = Fits(next_, /*object=*/true) ? next_ : nullptr;
    json* slot = Slot();
    if (shape == nullptr || !slot->is_object()) *slot = json::object();
    stack_.push_back({slot, shape, {}, nullptr});
    return true;
  }
  bool key(std::string& k) {
    Frame& f = stack_.back();
    if (f.shape != nullptr && f.shape->kind() == Shape::Kind::kStruct) {
      f.key = FoldKey(k);
      f.field = f.shape->Field(f.key);
    } else {
      f.key = std::move(k);
      f.field = nullptr;
    }
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(size_t) {
    const Shape* shape = Fits(next_, /*object=*/false) ? next_ : nullptr;
    json* slot = Slot();
    *slot = json::array();
    stack_.push_back({slot, shape, {}, nullptr});
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }

 private:
  struct Frame {
    json* container;
    const Shape* shape;  // Null: kept as written, whatever it holds.
    std::string key;     // The current key of an object (folded for a struct).
    const Shape* field;  // The current key's shape in a struct; null when unknown.
  };

  static bool Fits(const Shape* shape, bool object) {
    if (shape == nullptr) return false;
    switch (shape->kind()) {
      case Shape::Kind::kStruct:
      case Shape::Kind::kMap:
        return object;
      case Shape::Kind::kArray:
        return !object;
      default:
        return false;
    }
  }

  // The shape of the value about to start; null to keep it as written. Sets *skip for an unknown
  // struct field.
  const Shape* NextShape(bool* skip) const {
    if (stack_.empty()) return root_shape_;
    const Frame& f = stack_.back();
    if (f.shape == nullptr) return nullptr;
    switch (f.shape->kind()) {
      case Shape::Kind::kStruct:
        if (f.field == nullptr) *skip = true;
        return f.field;
      case Shape::Kind::kArray:
      case Shape::Kind::kMap:
        return f.shape->items();
      default:
        return nullptr;
    }
  }

  // Where the value about to start goes.
  json* Slot() {
    if (stack_.empty()) return &root_;
    Frame& f = stack_.back();
    if (f.container->is_object()) return &(*f.container)[f.key];
    f.container->push_back(nullptr);
    return &f.container->back();
  }

  bool Put(json value) {
    *Slot() = std::move(value);
    return true;
  }

  const Shape* root_shape_;
  const Shape* next_ = nullptr;
  json root_;
  std::vector<Frame> stack_;
};

const char* JsonKind(const json& value) {
  switch (value.type()) {
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::null:
      return "null";
    default:
      return "number";
  }
}

}  // namespace

const Shape* Shape::Field(std::string_view key) const {
  const std::string folded = FoldKey(key);
  for (const auto& [name, shape] : fields_) {
    if (name == folded) return shape;
  }
  return nullptr;
}

std::string FoldKey(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (size_t i = 0; i < key.size(); i++) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c >= 'A' && c <= 'Z') {
      out.push_back(static_cast<char>(c - 'A' + 'a'));
    } else if (c == 0xE2 && key.substr(i, 3) == "\xE2\x84\xAA") {  // KELVIN SIGN.
      out.push_back('k');
      i += 2;
    } else if (c == 0xC5 && key.substr(i, 2) == "\xC5\xBF") {  // LATIN SMALL LETTER LONG S.
      out.push_back('s');
      i += 1;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

json DecodePruned(std::string_view body, const Shape& shape) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) throw ResponseError("EOF");
  PruningBuilder builder(shape);
  try {
    api::JsonSaxParser(body, "response").ParseFirst(&builder);
  } catch (const api::DecodeError& e) {
    throw ResponseError(e.what());
  }
  return builder.Take();
}

void ThrowMismatch(const json& value, std::string_view where, std::string_view go_type) {
  std::string what = JsonKind(value);
  if (value.is_number()) what += " " + value.dump();
  throw ResponseError("json: cannot unmarshal " + what + " into Go " +
                      (where.empty() ? "value" : "struct field " + std::string(where)) +
                      " of type " + std::string(go_type));
}

void ExpectType(const json& value, json::value_t type, std::string_view where,
                std::string_view go_type) {
  if (value.type() != type) ThrowMismatch(value, where, go_type);
}

std::string ReadString(const json& value, std::string_view where) {
  if (value.is_null()) return "";
  if (!value.is_string()) ThrowMismatch(value, where, "string");
  return value.get<std::string>();
}

int64_t ReadInt64(const json& value, std::string_view where) {
  if (value.is_null()) return 0;
  if (value.is_number_integer() && !value.is_number_unsigned()) return value.get<int64_t>();
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  ThrowMismatch(value, where, "int64");
}

}  // namespace berth::extender
