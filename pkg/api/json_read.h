#ifndef BERTH_PKG_API_JSON_READ_H_
#define BERTH_PKG_API_JSON_READ_H_

// Internal to pkg/api: typed reads of JSON members for the decoders, each failing with a
// DecodeError that names the member's path. Every reader treats an absent member and a null one
// alike (the apiserver writes null for some unset fields) and leaves *out unchanged then.

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/field_path.h"
#include "pkg/api/quantity.h"
#include "pkg/api/types.h"

namespace berth::api::json_read {

using json = nlohmann::json;

[[noreturn]] inline void FailType(const FieldPath& path, std::string_view expected,
                                  const json& got) {
  std::string problem = "expected ";
  problem += expected;
  problem += ", got ";
  problem += got.type_name();
  FailAt(path, problem);
}

// The member of `parent` named by field.key(), or nullptr when absent or null.
inline const json* Member(const json& parent, const FieldPath& field) {
  auto it = parent.find(field.key());
  if (it == parent.end() || it->is_null()) {
    return nullptr;
  }
  return &*it;
}

inline void ExpectObject(const json& value, const FieldPath& path) {
  if (!value.is_object()) {
    FailType(path, "object", value);
  }
}

inline const json* GetObject(const json& parent, const FieldPath& field) {
  const json* value = Member(parent, field);
  if (value != nullptr) {
    ExpectObject(*value, field);
  }
  return value;
}

inline bool ReadString(const json& parent, const FieldPath& field, std::string* out) {
  const json* value = Member(parent, field);
  if (value == nullptr) {
    return false;
  }
  if (!value->is_string()) {
    FailType(field, "string", *value);
  }
  *out = value->get_ref<const std::string&>();
  return true;
}

inline bool ReadBool(const json& parent, const FieldPath& field, bool* out) {
  const json* value = Member(parent, field);
  if (value == nullptr) {
    return false;
  }
  if (!value->is_boolean()) {
    FailType(field, "boolean", *value);
  }
  *out = value->get_ref<const bool&>();
  return true;
}

inline bool ReadInt64(const json& parent, const FieldPath& field, int64_t* out) {
  const json* value = Member(parent, field);
  if (value == nullptr) {
    return false;
  }
  if (value->is_number_unsigned()) {
    const uint64_t u = value->get_ref<const uint64_t&>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      FailAt(field, "integer " + std::to_string(u) + " out of range");
    }
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (!value->is_number_integer()) {
    FailType(field, "integer", *value);
  }
  *out = value->get_ref<const int64_t&>();
  return true;
}

inline bool ReadInt32(const json& parent, const FieldPath& field, int32_t* out) {
  int64_t wide = 0;
  if (!ReadInt64(parent, field, &wide)) {
    return false;
  }
  if (wide < std::numeric_limits<int32_t>::min() || wide > std::numeric_limits<int32_t>::max()) {
    FailAt(field, "integer " + std::to_string(wide) + " out of int32 range");
  }
  *out = static_cast<int32_t>(wide);
  return true;
}

// Decodes an array member element by element; `decode(element, path, T*)` fills one entry.
template <typename T, typename Decode>
void ReadArray(const json& parent, const FieldPath& field, std::vector<T>* out, Decode&& decode) {
  const json* value = Member(parent, field);
  if (value == nullptr) {
    return;
  }
  if (!value->is_array()) {
    FailType(field, "array", *value);
  }
  out->reserve(out->size() + value->size());
  size_t index = 0;
  for (const json& element : *value) {
    const FieldPath element_path = field.Index(index++);
    decode(element, element_path, &out->emplace_back());
  }
}

inline void ReadStringList(const json& parent, const FieldPath& field,
                           std::vector<std::string>* out) {
  ReadArray(parent, field, out, [](const json& element, const FieldPath& path, std::string* s) {
    if (!element.is_string()) {
      FailType(path, "string", element);
    }
    *s = element.get_ref<const std::string&>();
  });
}

// Reads an optional string member: absent or null stays std::nullopt.
inline void ReadOptionalString(const json& parent, const FieldPath& field,
                               std::optional<std::string>* out) {
  std::string value;
  if (ReadString(parent, field, &value)) {
    *out = std::move(value);
  }
}

// Reads an object of string values, leaving out the member named `skip` when given; returns false
// when absent or null.
inline bool ReadStringMap(const json& parent, const FieldPath& field, StringMap* out,
                          std::string_view skip = {}) {
  const json* value = GetObject(parent, field);
  if (value == nullptr) {
    return false;
  }
  std::vector<StringMap::Entry> entries;
  entries.reserve(value->size());
  for (auto it = value->begin(); it != value->end(); ++it) {
    if (!skip.empty() && it.key() == skip) {
      continue;
    }
    if (!it->is_string()) {
      const FieldPath entry_path = field.Field(it.key());
      FailType(entry_path, "string", *it);
    }
    entries.emplace_back(it.key(), it->get_ref<const std::string&>());
  }
  *out = StringMap(std::move(entries));
  return true;
}

template <typename E, size_t N>
using EnumTable = std::array<std::pair<std::string_view, E>, N>;

// The enum value `text` names in `table`; false when it names none.
template <typename E, size_t N>
bool FindEnum(std::string_view text, const EnumTable<E, N>& table, E* out) {
  for (const auto& [name, e] : table) {
    if (name == text) {
      *out = e;
      return true;
    }
  }
  return false;
}

// The enum value `text` names in `table`; anything else is an error naming the value.
template <typename E, size_t N>
E ParseEnum(const std::string& text, const EnumTable<E, N>& table, const FieldPath& path) {
  E e{};
  if (!FindEnum(text, table, &e)) {
    FailAt(path, "unknown value \"" + text + "\"");
  }
  return e;
}

// The enum value a JSON string names in `table`; anything else is an error naming the value.
template <typename E, size_t N>
E DecodeEnum(const json& value, const FieldPath& path, const EnumTable<E, N>& table) {
  if (!value.is_string()) {
    FailType(path, "string", value);
  }
  return ParseEnum(value.get_ref<const std::string&>(), table, path);
}

// The name `table` gives `value`, for writing it back; empty for a value the table lacks.
template <typename E, size_t N>
constexpr std::string_view EnumName(const EnumTable<E, N>& table, E value) {
  for (const auto& [name, e] : table) {
    if (e == value) {
      return name;
    }
  }
  return {};
}

// Reads an optional enum member; absent or null leaves *out unchanged.
template <typename E, size_t N>
bool ReadEnum(const json& parent, const FieldPath& field, const EnumTable<E, N>& table, E* out) {
  const json* value = Member(parent, field);
  if (value == nullptr) {
    return false;
  }
  *out = DecodeEnum(*value, field, table);
  return true;
}

// A quantity as the apiserver serves it: a string ("10Gi"), or a bare JSON number.
inline Quantity DecodeQuantity(const json& value, const FieldPath& path) {
  std::string text;
  if (value.is_string()) {
    text = value.get_ref<const std::string&>();
  } else if (value.is_number_integer()) {
    text = value.dump();
  } else if (value.is_number_float()) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value.get_ref<const double&>());
    if (ec != std::errc()) {
      FailAt(path, "unrepresentable number");
    }
    text.assign(buf, end);
  } else {
    FailType(path, "quantity string", value);
  }
  Quantity quantity;
  std::string why;
  if (!Quantity::TryParse(text, &quantity, &why)) {
    FailAt(path, "invalid quantity \"" + text + "\": " + why);
  }
  return quantity;
}

// Reads a quantity member as whole units (bytes for storage); false when absent or null.
inline bool ReadQuantityValue(const json& parent, const FieldPath& field, int64_t* out) {
  const json* value = Member(parent, field);
  if (value == nullptr) {
    return false;
  }
  *out = DecodeQuantity(*value, field).Value();
  return true;
}

}  // namespace berth::api::json_read

#endif  // BERTH_PKG_API_JSON_READ_H_
