#include "pkg/config/scalars.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <system_error>

#include "pkg/config/quote.h"

namespace berth::config {
namespace internal {
namespace {

// Go's strconv.ParseUint(s, 0, 64): "0x"/"0b"/"0o" prefixes, a bare leading 0 means octal.
std::optional<uint64_t> ParseUintBase0(std::string_view s) {
  int base = 10;
  if (s.size() > 1 && s[0] == '0') {
    switch (s[1]) {
      case 'x':
      case 'X':
        base = 16;
        s.remove_prefix(2);
        break;
      case 'b':
      case 'B':
        base = 2;
        s.remove_prefix(2);
        break;
      case 'o':
      case 'O':
        base = 8;
        s.remove_prefix(2);
        break;
      default:
        base = 8;
        s.remove_prefix(1);
    }
  }
  if (s.empty()) {
    return std::nullopt;
  }
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return std::nullopt;
  }
  return value;
}

// Go's strconv.ParseInt(s, 0, 64).
std::optional<int64_t> ParseIntBase0(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::optional<uint64_t> magnitude = ParseUintBase0(s);
  if (!magnitude) {
    return std::nullopt;
  }
  constexpr uint64_t kMaxPositive = std::numeric_limits<int64_t>::max();
  if (negative) {
    if (*magnitude > kMaxPositive + 1) {
      return std::nullopt;
    }
    return static_cast<int64_t>(0 - *magnitude);
  }
  if (*magnitude > kMaxPositive) {
    return std::nullopt;
  }
  return static_cast<int64_t>(*magnitude);
}

// go-yaml v2's float syntax: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool LooksLikeFloat(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      ++i;
    }
    return i - start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) {
      return false;
    }
  } else {
    if (digits() == 0) {
      return false;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      ++i;
    }
    if (digits() == 0) {
      return false;
    }
  }
  return i == s.size();
}

std::optional<double> ParseFloat(std::string_view s) {
  if (!s.empty() && s[0] == '+') {
    s.remove_prefix(1);
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  // Out of range is an error for Go's ParseFloat, which makes go-yaml keep the scalar a string.
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return std::nullopt;
  }
  return value;
}

Scalar ResolvePlain(const std::string& text) {
  Scalar out;
  if (OneOf(text, {"", "~", "null", "Null", "NULL"})) {
    out.kind = Scalar::Kind::kNull;
    return out;
  }
  if (OneOf(text, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) {
    out.kind = Scalar::Kind::kBool;
    out.b = true;
    return out;
  }
  if (OneOf(text, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) {
    out.kind = Scalar::Kind::kBool;
    return out;
  }
  if (OneOf(text, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"})) {
    out.kind = Scalar::Kind::kFloat;
    out.f = std::numeric_limits<double>::infinity();
    return out;
  }
  if (OneOf(text, {"-.inf", "-.Inf", "-.INF"})) {
    out.kind = Scalar::Kind::kFloat;
    out.f = -std::numeric_limits<double>::infinity();
    return out;
  }
  if (OneOf(text, {".nan", ".NaN", ".NAN"})) {
    out.kind = Scalar::Kind::kFloat;
    out.f = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  char first = text[0];
  if (first == '.') {
    if (LooksLikeFloat(text)) {
      if (std::optional<double> f = ParseFloat(text)) {
        out.kind = Scalar::Kind::kFloat;
        out.f = *f;
      }
    }
    return out;
  }
  if (first != '+' && first != '-' && (first < '0' || first > '9')) {
    return out;
  }
  std::string plain = text;
  std::erase(plain, '_');
  if (std::optional<int64_t> i = ParseIntBase0(plain)) {
    out.kind = Scalar::Kind::kInt;
    out.i = *i;
  } else if (std::optional<uint64_t> u = ParseUintBase0(plain)) {
    out.kind = Scalar::Kind::kUint;
    out.u = *u;
  } else if (LooksLikeFloat(plain)) {
    if (std::optional<double> f = ParseFloat(plain)) {
      out.kind = Scalar::Kind::kFloat;
      out.f = *f;
    }
  }
  return out;
}

}  // namespace

Scalar Resolve(const YAML::Node& node) {
  if (node.IsNull()) {
    Scalar out;
    out.kind = Scalar::Kind::kNull;
    return out;
  }
  const std::string& tag = node.Tag();
  if (tag == "?" || OneOf(tag, {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                                "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"})) {
    return ResolvePlain(node.Scalar());
  }
  return Scalar{};
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
      return "nothing";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      break;
  }
  switch (Resolve(node).kind) {
    case Scalar::Kind::kNull:
      return "null";
    case Scalar::Kind::kBool:
      return "boolean " + node.Scalar();
    case Scalar::Kind::kInt:
    case Scalar::Kind::kUint:
      return "integer " + node.Scalar();
    case Scalar::Kind::kFloat:
      return "number " + node.Scalar();
    case Scalar::Kind::kString:
      break;
  }
  return "string " + Quote(node.Scalar());
}

}  // namespace internal

std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view s) {
  // Mirrors Go's time.ParseDuration, including its overflow rules.
  constexpr uint64_t kMaxMagnitude = uint64_t{1} << 63;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") {
    return std::chrono::nanoseconds{0};
  }
  if (s.empty()) {
    return std::nullopt;
  }
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  uint64_t total = 0;
  while (!s.empty()) {
    if (s[0] != '.' && !is_digit(s[0])) {
      return std::nullopt;
    }
    // Integer part; overflow is an error.
    uint64_t whole = 0;
    size_t whole_digits = 0;
    while (!s.empty() && is_digit(s[0])) {
      if (whole > (kMaxMagnitude - 1) / 10) {
        return std::nullopt;
      }
      whole = whole * 10 + static_cast<uint64_t>(s[0] - '0');
      if (whole > kMaxMagnitude) {
        return std::nullopt;
      }
      s.remove_prefix(1);
      ++whole_digits;
    }
    // Fraction; digits past int64 precision are dropped, as Go does.
    uint64_t frac = 0;
    double scale = 1;
    size_t frac_digits = 0;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      bool overflow = false;
      while (!s.empty() && is_digit(s[0])) {
        if (!overflow) {
          if (frac > (kMaxMagnitude - 1) / 10) {
            overflow = true;
          } else {
            uint64_t next = frac * 10 + static_cast<uint64_t>(s[0] - '0');
            if (next > kMaxMagnitude) {
              overflow = true;
            } else {
              frac = next;
              scale *= 10;
            }
          }
        }
        s.remove_prefix(1);
        ++frac_digits;
      }
    }
    if (whole_digits == 0 && frac_digits == 0) {
      return std::nullopt;
    }
    size_t unit_len = 0;
    while (unit_len < s.size() && s[unit_len] != '.' && !is_digit(s[unit_len])) {
      ++unit_len;
    }
    if (unit_len == 0) {
      return std::nullopt;
    }
    std::string_view unit_name = s.substr(0, unit_len);
    s.remove_prefix(unit_len);
    uint64_t unit = 0;
    if (unit_name == "ns") {
      unit = 1;
    } else if (unit_name == "us" || unit_name == "\xC2\xB5s" || unit_name == "\xCE\xBCs") {
      unit = 1'000;
    } else if (unit_name == "ms") {
      unit = 1'000'000;
    } else if (unit_name == "s") {
      unit = 1'000'000'000;
    } else if (unit_name == "m") {
      unit = 60'000'000'000;
    } else if (unit_name == "h") {
      unit = 3'600'000'000'000;
    } else {
      return std::nullopt;
    }
    if (whole > kMaxMagnitude / unit) {
      return std::nullopt;
    }
    whole *= unit;
    if (frac > 0) {
      whole +=
          static_cast<uint64_t>(static_cast<double>(frac) * (static_cast<double>(unit) / scale));
      if (whole > kMaxMagnitude) {
        return std::nullopt;
      }
    }
    total += whole;
    if (total > kMaxMagnitude) {
      return std::nullopt;
    }
  }
  if (negative) {
    return std::chrono::nanoseconds{static_cast<int64_t>(0 - total)};
  }
  if (total > kMaxMagnitude - 1) {
    return std::nullopt;
  }
  return std::chrono::nanoseconds{static_cast<int64_t>(total)};
}

}  // namespace berth::config
