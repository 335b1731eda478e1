#ifndef BERTH_PKG_YAML_YAML_H_
#define BERTH_PKG_YAML_YAML_H_

// YAML as Kubernetes reads it. kube-scheduler's configuration file and client-go's kubeconfig are
// both decoded by sigs.k8s.io/yaml, i.e. go-yaml v2, which resolves plain (unquoted) scalars with
// YAML 1.1 rules and then hands the tree on as JSON. The functions here reproduce that resolution
// over yaml-cpp's nodes, so free-form values (plugin args, a kubeconfig's exec extension) get the
// JSON types upstream gives them. Quoted and block scalars are always strings.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace YAML {
class Node;
}  // namespace YAML

namespace berth::yaml {

struct Scalar {
  enum class Kind { kNull, kBool, kInt, kUint, kFloat, kString };
  Kind kind = Kind::kString;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
};

// Resolves a null or scalar node. yaml-cpp tags plain scalars "?" and quoted or block scalars
// "!".
Scalar Resolve(const YAML::Node& node);

// What a node is, for an error message: "a list", "integer 3", "string \"x\"".
std::string Describe(const YAML::Node& node);

// A value from a file, double-quoted and escaped for an error message. Long values are cut so an
// error never carries more of the file than the start of the offending scalar.
std::string Quote(std::string_view value);

// Field paths for error messages: "profiles[0].pluginConfig", "a.b".
std::string Child(const std::string& path, std::string_view key);
std::string Index(const std::string& path, size_t i);

// YAML to JSON, with scalars resolved as above, strings and keys valid UTF-8 (JSON must be),
// keys strings and unique, and nesting bounded: anchors and aliases can make a small file expand
// to an enormous (or, through a self-referencing anchor, cyclic) tree. Each problem goes to
// `fail(path, message)` and its value becomes null, so a caller can report every problem or stop
// at the first.
//
// `values_left` counts down over every value converted through it, so several conversions can
// share one budget; the value that takes it to 0 is reported as `too_many`, and the rest are
// null.
class JsonConverter {
 public:
  static constexpr int kMaxDepth = 64;
  using Fail = std::function<void(const std::string& path, const std::string& message)>;

  JsonConverter(size_t* values_left, std::string too_many, Fail fail)
      : values_left_(values_left), too_many_(std::move(too_many)), fail_(std::move(fail)) {}

  nlohmann::json Convert(const YAML::Node& node, const std::string& path, int depth = 0);

 private:
  size_t* values_left_;
  std::string too_many_;
  Fail fail_;
};

// The message for a string or key that is not UTF-8.
inline constexpr char kNotUtf8[] = "not valid UTF-8";

}  // namespace berth::yaml

#endif  // BERTH_PKG_YAML_YAML_H_
