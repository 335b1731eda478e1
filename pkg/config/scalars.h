#ifndef BERTH_PKG_CONFIG_SCALARS_H_
#define BERTH_PKG_CONFIG_SCALARS_H_

// kube-scheduler reads its file with sigs.k8s.io/yaml, i.e. go-yaml v2, which resolves plain
// (unquoted) scalars with YAML 1.1 rules. These functions reproduce that resolution so values,
// above all free-form plugin args, get the same JSON types as upstream gives them. Quoted and
// block scalars are always strings.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace YAML {
class Node;
}  // namespace YAML

namespace berth::config {

// Go's time.ParseDuration: "15s", "1m30s", "-1.5h", "500ms", "0". Nullopt when malformed or
// outside int64 nanoseconds.
std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view text);

namespace internal {

struct Scalar {
  enum class Kind { kNull, kBool, kInt, kUint, kFloat, kString };
  Kind kind = Kind::kString;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
};

inline bool OneOf(std::string_view s, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), s) != options.end();
}

// Resolves a null or scalar node. yaml-cpp tags plain scalars "?" and quoted or block scalars
// "!".
Scalar Resolve(const YAML::Node& node);

// What a node is, for an error message: "a list", "integer 3", "string \"x\"".
std::string Describe(const YAML::Node& node);

}  // namespace internal
}  // namespace berth::config

#endif  // BERTH_PKG_CONFIG_SCALARS_H_
