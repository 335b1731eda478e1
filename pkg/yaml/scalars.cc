#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <system_error>

#include "pkg/yaml/yaml.h"

namespace berth::yaml {
namespace {

bool OneOf(std::string_view s, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), s) != options.end();
}

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

}  // namespace berth::yaml
