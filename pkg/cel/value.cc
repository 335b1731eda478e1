#include "pkg/cel/value.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace berth::cel {
namespace {

// -1, 0, 1 comparing an int64 with a double exactly; 2 for NaN.
int CompareIntDouble(int64_t i, double d) {
  if (std::isnan(d)) return 2;
  // 2^63 is exactly representable; every int64 lies in [-2^63, 2^63).
  if (d >= 9223372036854775808.0) return -1;
  if (d < -9223372036854775808.0) return 1;
  const double t = std::trunc(d);
  const auto di = static_cast<int64_t>(t);
  if (i != di) return i < di ? -1 : 1;
  if (d == t) return 0;
  return d > t ? -1 : 1;
}

int CompareUintDouble(uint64_t u, double d) {
  if (std::isnan(d)) return 2;
  if (d >= 18446744073709551616.0) return -1;
  if (d < 0) return 1;
  const double t = std::trunc(d);
  const auto du = static_cast<uint64_t>(t);
  if (u != du) return u < du ? -1 : 1;
  if (d == t) return 0;
  return d > t ? -1 : 1;
}

template <typename T>
int Cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int CompareNumbers(const Value& a, const Value& b) {
  const auto& x = a.data();
  const auto& y = b.data();
  if (const auto* i = std::get_if<int64_t>(&x)) {
    if (const auto* j = std::get_if<int64_t>(&y)) return Cmp(*i, *j);
    if (const auto* u = std::get_if<uint64_t>(&y)) {
      return *i < 0 ? -1 : Cmp(static_cast<uint64_t>(*i), *u);
    }
    if (const auto* d = std::get_if<double>(&y)) return CompareIntDouble(*i, *d);
  }
  if (const auto* u = std::get_if<uint64_t>(&x)) {
    if (const auto* j = std::get_if<int64_t>(&y))
      return *j < 0 ? 1 : Cmp(*u, static_cast<uint64_t>(*j));
    if (const auto* v = std::get_if<uint64_t>(&y)) return Cmp(*u, *v);
    if (const auto* d = std::get_if<double>(&y)) return CompareUintDouble(*u, *d);
  }
  if (const auto* d = std::get_if<double>(&x)) {
    if (const auto* j = std::get_if<int64_t>(&y)) {
      const int c = CompareIntDouble(*j, *d);
      return c == 2 ? 2 : -c;
    }
    if (const auto* v = std::get_if<uint64_t>(&y)) {
      const int c = CompareUintDouble(*v, *d);
      return c == 2 ? 2 : -c;
    }
    if (const auto* e = std::get_if<double>(&y)) {
      if (std::isnan(*d) || std::isnan(*e)) return 2;
      return Cmp(*d, *e);
    }
  }
  return 3;  // not two numbers
}

bool IsNumber(const Value& v) { return v.Is<int64_t>() || v.Is<uint64_t>() || v.Is<double>(); }

// The entry under `key`, falling back across numeric kinds as MapFind() describes.
const std::pair<Value, Value>* FindEntry(const MapEntries& entries, MapKey key);

}  // namespace

namespace {

bool StartsCodePoint(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }

}  // namespace

Value Value::String(std::string s) {
  int64_t code_points = 0;
  for (const char c : s) code_points += StartsCodePoint(c) ? 1 : 0;
  StringValue v{std::make_shared<const std::string>(std::move(s)), code_points, nullptr};
  if (code_points != static_cast<int64_t>(v.s->size()) &&
      code_points > StringValue::kCheckpointStride) {
    std::vector<size_t> checkpoints;
    checkpoints.reserve(static_cast<size_t>(code_points / StringValue::kCheckpointStride) + 1);
    int64_t k = 0;
    for (size_t i = 0; i < v.s->size(); ++i) {
      if (!StartsCodePoint((*v.s)[i])) continue;
      if (k % StringValue::kCheckpointStride == 0) checkpoints.push_back(i);
      ++k;
    }
    v.checkpoints = std::make_shared<const std::vector<size_t>>(std::move(checkpoints));
  }
  return Value(std::move(v));
}

size_t StringValue::ByteOffset(int64_t index) const {
  if (code_points == static_cast<int64_t>(s->size())) return static_cast<size_t>(index);
  if (index >= code_points) return s->size();
  size_t at = 0;
  int64_t k = 0;
  if (checkpoints) {
    at = (*checkpoints)[static_cast<size_t>(index / kCheckpointStride)];
    k = index - index % kCheckpointStride;
  }
  // Steps over code points until `index` is reached; `at` starts a code point throughout.
  for (; k < index; ++k) {
    ++at;
    while (at < s->size() && !StartsCodePoint((*s)[at])) ++at;
  }
  return at;
}

int64_t StringValue::CodePointAt(size_t offset) const {
  if (code_points == static_cast<int64_t>(s->size())) return static_cast<int64_t>(offset);
  size_t from = 0;
  int64_t k = 0;
  if (checkpoints) {
    const auto it = std::upper_bound(checkpoints->begin(), checkpoints->end(), offset);
    const auto block = static_cast<int64_t>(it - checkpoints->begin()) - 1;
    from = (*checkpoints)[static_cast<size_t>(block)];
    k = block * kCheckpointStride;
  }
  for (size_t i = from; i < offset && i < s->size(); ++i) k += StartsCodePoint((*s)[i]) ? 1 : 0;
  return k;
}

std::string Value::TypeName() const {
  switch (data_.index()) {
    case 0:
      return "null_type";
    case 1:
      return "bool";
    case 2:
      return "int";
    case 3:
      return "uint";
    case 4:
      return "double";
    case 5:
      return "string";
    case 6:
      return "bytes";
    case 7:
      return "list";
    case 8:
      return "map";
    case 9:
      return "kubernetes.Quantity";
    case 10:
      return "kubernetes.Semver";
    case 11:
      return "type";
    default:
      return "error";
  }
}

bool Equal(const Value& a, const Value& b) {
  if (IsNumber(a) && IsNumber(b)) return CompareNumbers(a, b) == 0;
  if (a.data().index() != b.data().index()) return false;
  return std::visit(
      [&b](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b.data());
        if constexpr (std::is_same_v<T, NullValue>) {
          return true;
        } else if constexpr (std::is_same_v<T, bool>) {
          return x == y;
        } else if constexpr (std::is_same_v<T, StringValue> || std::is_same_v<T, BytesValue>) {
          // One shared string (a variable compared with itself, list elements from one
          // source) is equal without reading it.
          return x.s == y.s || *x.s == *y.s;
        } else if constexpr (std::is_same_v<T, ListValue>) {
          if (x.items == y.items) return true;
          if (x.items->size() != y.items->size()) return false;
          for (size_t i = 0; i < x.items->size(); ++i) {
            if (!Equal((*x.items)[i], (*y.items)[i])) return false;
          }
          return true;
        } else if constexpr (std::is_same_v<T, MapValue>) {
          if (x.entries->size() != y.entries->size()) return false;
          for (const auto& [key, kv] : *x.entries) {
            const auto* other = FindEntry(*y.entries, key);
            if (other == nullptr || !Equal(kv.second, other->second)) return false;
          }
          return true;
        } else if constexpr (std::is_same_v<T, QuantityValue>) {
          return x.q->Compare(*y.q) == 0;
        } else if constexpr (std::is_same_v<T, SemverValue>) {
          return x.v->Compare(*y.v) == 0;
        } else if constexpr (std::is_same_v<T, TypeValue>) {
          return x.name == y.name;
        } else {
          return false;
        }
      },
      a.data());
}

int Compare(const Value& a, const Value& b, bool* ordered) {
  *ordered = true;
  if (IsNumber(a) && IsNumber(b)) {
    const int c = CompareNumbers(a, b);
    if (c == 2) *ordered = false;
    return c;
  }
  if (a.Is<bool>() && b.Is<bool>()) return Cmp(a.As<bool>(), b.As<bool>());
  if ((a.Is<StringValue>() && b.Is<StringValue>()) || (a.Is<BytesValue>() && b.Is<BytesValue>())) {
    const int c = a.Str().compare(b.Str());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  *ordered = false;
  return 2;
}

bool ToMapKey(const Value& v, MapKey* key) {
  if (v.Is<bool>()) {
    key->rank = 0;
    key->b = v.As<bool>();
    return true;
  }
  if (v.Is<int64_t>()) {
    key->rank = 1;
    key->number_kind = 0;
    key->n = v.As<int64_t>();
    return true;
  }
  if (v.Is<uint64_t>()) {
    key->rank = 1;
    key->number_kind = 1;
    key->n = static_cast<__int128>(v.As<uint64_t>());
    return true;
  }
  if (v.Is<StringValue>()) {
    key->rank = 2;
    key->s = v.Str();
    return true;
  }
  if (v.Is<double>()) {
    const double d = v.As<double>();
    if (d >= -9223372036854775808.0 && d < 18446744073709551616.0 && std::trunc(d) == d) {
      key->rank = 1;
      key->number_kind = 2;
      key->n = d < 0 ? static_cast<__int128>(static_cast<int64_t>(d))
                     : static_cast<__int128>(static_cast<uint64_t>(d));
      return true;
    }
    uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    key->rank = 3;
    key->n = static_cast<__int128>(bits);
    return true;
  }
  if (v.Is<NullValue>()) {
    key->rank = 4;
    return true;
  }
  return false;
}

namespace {

constexpr __int128 kInt64Max = std::numeric_limits<int64_t>::max();
constexpr __int128 kUint64Max = std::numeric_limits<uint64_t>::max();

const std::pair<Value, Value>* FindEntry(const MapEntries& entries, MapKey key) {
  if (const auto it = entries.find(key); it != entries.end()) return &it->second;
  if (key.rank != 1) return nullptr;
  const auto as = [&](int kind) -> const std::pair<Value, Value>* {
    key.number_kind = kind;
    const auto it = entries.find(key);
    return it == entries.end() ? nullptr : &it->second;
  };
  switch (key.number_kind) {
    case 0:
      return key.n >= 0 ? as(1) : nullptr;
    case 1:
      return key.n <= kInt64Max ? as(0) : nullptr;
    default: {
      if (key.n <= kInt64Max) {
        if (const auto* found = as(0)) return found;
      }
      return key.n >= 0 && key.n <= kUint64Max ? as(1) : nullptr;
    }
  }
}

}  // namespace

const Value* MapFind(const Value& map, const Value& key) {
  MapKey k;
  if (!ToMapKey(key, &k)) return nullptr;
  const auto* entry = FindEntry(map.Entries(), std::move(k));
  return entry == nullptr ? nullptr : &entry->second;
}

std::string Describe(const Value& v) {
  return std::visit(
      [&v](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, NullValue>) {
          return "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          char buf[64];
          snprintf(buf, sizeof buf, "%g", x);
          return buf;
        } else if constexpr (std::is_same_v<T, StringValue> || std::is_same_v<T, BytesValue>) {
          return *x.s;
        } else if constexpr (std::is_same_v<T, QuantityValue>) {
          return x.q->ToString();
        } else if constexpr (std::is_same_v<T, SemverValue>) {
          return x.v->ToString();
        } else if constexpr (std::is_same_v<T, TypeValue>) {
          return x.name;
        } else if constexpr (std::is_same_v<T, ErrorValue>) {
          return *x.message;
        } else {
          return v.TypeName();
        }
      },
      v.data());
}

}  // namespace berth::cel
