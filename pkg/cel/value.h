#ifndef BERTH_PKG_CEL_VALUE_H_
#define BERTH_PKG_CEL_VALUE_H_

// CEL's runtime values. A Value is cheap to copy: strings, lists, maps and library objects are
// shared immutable data, so values cross threads freely once built.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "pkg/cel/decimal.h"
#include "pkg/cel/semver.h"

namespace berth::cel {

class Value;

struct NullValue {};
struct StringValue {
  // Code points per entry of `checkpoints`.
  static constexpr int64_t kCheckpointStride = 128;

  std::shared_ptr<const std::string> s;
  // Counted once when the string is made: size() costs one unit in CEL whatever the length,
  // so it must not walk the string each time.
  int64_t code_points = 0;
  // For a string longer than one stride with a multi-byte code point: the byte offset of code
  // point k * kCheckpointStride at [k], built with the count. Indexing by code point (charAt(),
  // substring(), indexOf()) then walks at most one stride and allocates nothing per call; CEL
  // charges charAt() one unit whatever the length. Null otherwise (bytes index directly).
  std::shared_ptr<const std::vector<size_t>> checkpoints;

  // The byte offset of code point `index`, 0 <= index <= code_points.
  size_t ByteOffset(int64_t index) const;
  // The index of the code point starting at byte `offset` (the count of code points before it).
  int64_t CodePointAt(size_t offset) const;
};
struct BytesValue {
  std::shared_ptr<const std::string> s;
};
struct ListValue {
  std::shared_ptr<const std::vector<Value>> items;
};

// A map key: bool, a number, a string, a double with a fraction (by its bits) or null. Keys
// of different numeric kinds are different keys even with one value (`{1: a, 1u: b}` has two
// entries, as cel-go's map literals do); MapFind() falls back across the kinds.
struct MapKey {
  int rank = 0;  // 0 bool, 1 number, 2 string, 3 fractional double, 4 null
  bool b = false;
  __int128 n = 0;
  int number_kind = 0;  // rank 1: 0 int, 1 uint, 2 integral double
  std::string s;
  auto operator<=>(const MapKey&) const = default;
};
using MapEntries = std::map<MapKey, std::pair<Value, Value>>;
struct MapValue {
  std::shared_ptr<const MapEntries> entries;
  // device.attributes and device.capacity: looking up an absent domain gives an empty map
  // (upstream's selector environment does this so that `device.attributes["d"].x` fails
  // with "no such key: x" rather than on the domain); `in` and size() still see only what
  // is there.
  bool absent_is_empty = false;
};
struct QuantityValue {
  std::shared_ptr<const Decimal> q;
};
struct SemverValue {
  std::shared_ptr<const Semver> v;
};
// A type as a value (`type(1) == int`), by its CEL name.
struct TypeValue {
  std::string name;
};
// An evaluation error: it flows through the expression like a value until something absorbs
// it (`||`, `&&`, `?:` or a comprehension that no longer needs it) or it becomes the result.
struct ErrorValue {
  std::shared_ptr<const std::string> message;
};

class Value {
 public:
  using Data = std::variant<NullValue, bool, int64_t, uint64_t, double, StringValue, BytesValue,
                            ListValue, MapValue, QuantityValue, SemverValue, TypeValue, ErrorValue>;

  Value() = default;
  Value(Data data) : data_(std::move(data)) {}  // NOLINT(google-explicit-constructor)

  static Value Null() { return Value(NullValue{}); }
  static Value Bool(bool b) { return Value(b); }
  static Value Int(int64_t i) { return Value(i); }
  static Value Uint(uint64_t u) { return Value(u); }
  static Value Double(double d) { return Value(d); }
  static Value String(std::string s);
  static Value Bytes(std::string s) {
    return Value(BytesValue{std::make_shared<const std::string>(std::move(s))});
  }
  static Value List(std::vector<Value> items) {
    return Value(ListValue{std::make_shared<const std::vector<Value>>(std::move(items))});
  }
  static Value Map(MapEntries entries, bool absent_is_empty = false) {
    return Value(MapValue{std::make_shared<const MapEntries>(std::move(entries)), absent_is_empty});
  }
  static Value Quantity(Decimal q) {
    return Value(QuantityValue{std::make_shared<const Decimal>(std::move(q))});
  }
  static Value SemverOf(Semver v) {
    return Value(SemverValue{std::make_shared<const Semver>(std::move(v))});
  }
  static Value Type(std::string name) { return Value(TypeValue{std::move(name)}); }
  static Value Error(std::string message) {
    return Value(ErrorValue{std::make_shared<const std::string>(std::move(message))});
  }

  const Data& data() const { return data_; }
  template <typename T>
  bool Is() const {
    return std::holds_alternative<T>(data_);
  }
  template <typename T>
  const T& As() const {
    return std::get<T>(data_);
  }
  bool IsError() const { return Is<ErrorValue>(); }
  const std::string& ErrorMessage() const { return *As<ErrorValue>().message; }
  const std::string& Str() const {
    return Is<StringValue>() ? *As<StringValue>().s : *As<BytesValue>().s;
  }
  const std::vector<Value>& Items() const { return *As<ListValue>().items; }
  const MapEntries& Entries() const { return *As<MapValue>().entries; }

  // CEL's type name of the value: "int", "list", "kubernetes.Quantity", ...
  std::string TypeName() const;

 private:
  Data data_;
};

// CEL equality across types (1 == 1u == 1.0; values of unrelated types are unequal). Returns
// an error value only for errors among the operands.
bool Equal(const Value& a, const Value& b);

// The ordering of `<` and friends: -1, 0, 1, or 2 when the operands have no order (NaN, or
// kinds that do not compare; `*ordered` is false then).
int Compare(const Value& a, const Value& b, bool* ordered);

// The key a value is stored under in a map; false if the value cannot be a key.
bool ToMapKey(const Value& v, MapKey* key);

// Looks `key` up in `map`; nullptr when absent. A number not found under its own kind is
// looked up as cel-go does: an int as a uint, a uint as an int, an integral double as an int
// and then a uint (never an int as a double).
const Value* MapFind(const Value& map, const Value& key);

// A rendering of the value for error messages (e.g. "no such key: model").
std::string Describe(const Value& v);

}  // namespace berth::cel

#endif  // BERTH_PKG_CEL_VALUE_H_
