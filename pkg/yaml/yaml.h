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

// What one or more JSON conversions may still produce. Aliases are why a budget is needed: a
// small file can anchor a long string or a large tree and then name it by alias many times, and
// yaml-cpp shares the anchored node among its aliases (parsing stays cheap), but the JSON tree
// holds a copy per alias. So the budget counts what the conversion produces, each alias as the
// full size of what it names, and stops as soon as it is spent.
class JsonBudget {
 public:
  // The default bound on the bytes of keys and scalars (after YAML's escapes are resolved).
  // Plugin args and a kubeconfig's exec extension are a few KiB, and an object the apiserver
  // stores is at most about 1.5 MiB (etcd's default request limit); 16 MiB is ten times that, yet
  // the tree it builds (with the callers' bounds of 10,000 to 100,000 values) stays well under a
  // hundred MB of memory.
  static constexpr size_t kMaxBytes = size_t{16} << 20;

  explicit JsonBudget(size_t max_values, size_t max_bytes = kMaxBytes)
      : max_values_(max_values), max_bytes_(max_bytes) {}

  size_t max_values() const { return max_values_; }
  size_t max_bytes() const { return max_bytes_; }
  // True once a conversion went past either bound; every later value is null.
  bool spent() const { return spent_; }

 private:
  friend class JsonConverter;
  size_t max_values_;
  size_t max_bytes_;
  size_t values_ = 0;
  size_t bytes_ = 0;
  bool spent_ = false;
};

// YAML to JSON, with scalars resolved as above, strings and keys valid UTF-8 (JSON must be),
// keys strings and unique, and nesting bounded (a self-referencing anchor would otherwise make
// a cyclic tree). Each problem goes to `fail(path, message)` and its value becomes null, so a
// caller can report every problem or stop at the first.
//
// Every value converted counts against `budget`, which several converters can share. The value
// past budget->max_values() is reported as `too_many`; the key or scalar that takes the bytes
// past budget->max_bytes() is reported with a message naming that bound; after either, every
// value is null and nothing more is reported. Work is linear in what is produced before that
// point: a path is spelled out only for a problem, and a long key is cut short in it.
class JsonConverter {
 public:
  static constexpr int kMaxDepth = 64;
  using Fail = std::function<void(const std::string& path, const std::string& message)>;

  JsonConverter(JsonBudget* budget, std::string too_many, Fail fail)
      : budget_(budget), too_many_(std::move(too_many)), fail_(std::move(fail)) {}

  nlohmann::json Convert(const YAML::Node& node, const std::string& path);

 private:
  struct PathLink;
  nlohmann::json Convert(const YAML::Node& node, const PathLink& path, int depth);
  // Counts `bytes` more; false (the problem reported at `path`) when that exceeds the budget.
  bool Spend(size_t bytes, const PathLink& path);
  void Report(const PathLink& path, const std::string& message);

  JsonBudget* budget_;
  std::string too_many_;
  Fail fail_;
};

// The message for a string or key that is not UTF-8.
inline constexpr char kNotUtf8[] = "not valid UTF-8";

}  // namespace berth::yaml

#endif  // BERTH_PKG_YAML_YAML_H_
