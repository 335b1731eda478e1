#include "pkg/config/load.h"

#include <fcntl.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "pkg/api/utf8.h"
#include "pkg/config/gang_plugins.h"
#include "pkg/config/validate.h"
#include "pkg/config/yaml_documents.h"
#include "pkg/util/base64.h"
#include "pkg/util/time.h"
#include "pkg/yaml/yaml.h"

namespace berth::config {
namespace {

using yaml::Child;
using yaml::Describe;
using yaml::Index;
using yaml::kNotUtf8;
using yaml::Quote;
using yaml::Resolve;
using yaml::Scalar;

// A bound for plugin args, the only part of the file whose shape the schema does not limit.
constexpr size_t kMaxArgsValues = 100'000;

// ---- Decoding ----------------------------------------------------------------------------------

using Keys = std::initializer_list<std::string_view>;

// Decodes a document into a defaulted Configuration, recording every problem instead of stopping
// at the first. A field with a problem keeps its default so decoding can go on.
class Decoder {
 public:
  explicit Decoder(const std::set<std::string>& known_plugins) : known_plugins_(known_plugins) {}

  Configuration Decode(const YAML::Node& root);
  std::vector<ConfigIssue>& issues() { return issues_; }
  // Per profile of the decoded configuration, the Coscheduling args that upstream's gang plugins
  // and percentageOfPlacementsToScore mean (pkg/config/gang_plugins.h); applied after validation.
  const std::vector<nlohmann::json>& gang_args() const { return gang_args_; }

 private:
  void Fail(const std::string& path, std::string problem) {
    issues_.push_back({path, std::move(problem)});
  }

  // Calls fn(key, value, path) for each entry of a mapping after rejecting duplicate and unknown
  // keys (upstream decodes strictly). Null counts as an empty mapping.
  template <typename Fn>
  void Fields(const YAML::Node& node, const std::string& path, Keys allowed, Fn&& fn);
  // Calls fn(index, item, path) for each item of a list. Null counts as an empty list.
  template <typename Fn>
  void Items(const YAML::Node& node, const std::string& path, Fn&& fn);

  // Typed values. Nullopt for null (upstream leaves the field unset) and for a mistyped value,
  // which is recorded.
  std::optional<std::string> String(const YAML::Node& node, const std::string& path);
  std::optional<bool> Bool(const YAML::Node& node, const std::string& path);
  template <typename T>
  std::optional<T> Integer(const YAML::Node& node, const std::string& path);
  std::optional<double> Number(const YAML::Node& node, const std::string& path);
  std::optional<std::chrono::milliseconds> Duration(const YAML::Node& node,
                                                    const std::string& path);

  void CheckTypeField(const YAML::Node& root, std::string_view key, std::string_view expected);
  std::optional<int32_t> PercentageOfPlacements(const YAML::Node& node, const std::string& path);
  void DecodeClientConnection(const YAML::Node& node, const std::string& path,
                              ClientConnection& out);
  void DecodeLeaderElection(const YAML::Node& node, const std::string& path, LeaderElection& out);
  Extender DecodeExtender(const YAML::Node& node, const std::string& path);
  ExtenderTlsConfig DecodeExtenderTls(const YAML::Node& node, const std::string& path);
  // A []byte field: base64 text (Go's encoding of bytes in JSON), decoded.
  std::optional<std::string> Bytes(const YAML::Node& node, const std::string& path);
  Profile DecodeProfile(const YAML::Node& node, const std::string& path);
  Plugins DecodePlugins(const YAML::Node& node, const std::string& path,
                        PodGroupPluginSets& pod_group);
  PluginSet DecodePluginSet(const YAML::Node& node, const std::string& path);
  PluginRef DecodePluginRef(const YAML::Node& node, const std::string& path);
  PluginConfig DecodePluginConfig(const YAML::Node& node, const std::string& path);
  // Plugin args as JSON; every plugin's args share kMaxArgsValues and JsonBudget's byte bound.
  nlohmann::json Json(const YAML::Node& node, const std::string& path) {
    return yaml::JsonConverter(
               &json_budget_,
               "plugin args have more than " + std::to_string(kMaxArgsValues) + " values",
               [this](const std::string& at, const std::string& problem) { Fail(at, problem); })
        .Convert(node, path);
  }

  const std::set<std::string>& known_plugins_;
  std::vector<ConfigIssue> issues_;
  std::vector<nlohmann::json> gang_args_;
  // The global percentageOfPlacementsToScore, for profiles without their own.
  std::optional<int32_t> percentage_of_placements_;
  yaml::JsonBudget json_budget_{kMaxArgsValues};
};

template <typename Fn>
void Decoder::Fields(const YAML::Node& node, const std::string& path, Keys allowed, Fn&& fn) {
  if (node.IsNull()) {
    return;
  }
  if (!node.IsMap()) {
    Fail(path, "expected a mapping, got " + Describe(node));
    return;
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      Fail(path, "mapping keys must be strings, got " + Describe(key));
      continue;
    }
    const std::string& name = key.Scalar();
    std::string child = Child(path, name);
    if (!seen.insert(name).second) {
      Fail(child, "duplicate key");
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::vector<std::string_view> sorted(allowed);
      std::sort(sorted.begin(), sorted.end());
      std::string list;
      for (std::string_view k : sorted) {
        if (!list.empty()) {
          list += ", ";
        }
        list += k;
      }
      Fail(child, "unknown field; allowed fields: " + list);
      continue;
    }
    fn(name, entry.second, child);
  }
}

template <typename Fn>
void Decoder::Items(const YAML::Node& node, const std::string& path, Fn&& fn) {
  if (node.IsNull()) {
    return;
  }
  if (!node.IsSequence()) {
    Fail(path, "expected a list, got " + Describe(node));
    return;
  }
  size_t i = 0;
  for (const auto& item : node) {
    fn(i, item, Index(path, i));
    ++i;
  }
}

std::optional<std::string> Decoder::String(const YAML::Node& node, const std::string& path) {
  if (node.IsNull()) {
    return std::nullopt;
  }
  if (!node.IsScalar()) {
    Fail(path, "expected a string, got " + Describe(node));
    return std::nullopt;
  }
  if (!api::IsValidUtf8(node.Scalar())) {
    Fail(path, kNotUtf8);
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<bool> Decoder::Bool(const YAML::Node& node, const std::string& path) {
  if (node.IsNull()) {
    return std::nullopt;
  }
  if (node.IsScalar()) {
    Scalar s = Resolve(node);
    if (s.kind == Scalar::Kind::kBool) {
      return s.b;
    }
  }
  Fail(path, "expected a boolean, got " + Describe(node));
  return std::nullopt;
}

template <typename T>
std::optional<T> Decoder::Integer(const YAML::Node& node, const std::string& path) {
  static_assert(std::is_signed_v<T>);
  if (node.IsNull()) {
    return std::nullopt;
  }
  constexpr T kMin = std::numeric_limits<T>::min();
  constexpr T kMax = std::numeric_limits<T>::max();
  Scalar s;
  if (node.IsScalar()) {
    s = Resolve(node);
  }
  switch (s.kind) {
    case Scalar::Kind::kInt:
      if (s.i >= kMin && s.i <= kMax) {
        return static_cast<T>(s.i);
      }
      break;
    case Scalar::Kind::kUint:
      break;
    case Scalar::Kind::kFloat:
      // JSON has no integer type: upstream accepts 16.0 where an integer is expected.
      if (std::isfinite(s.f) && std::trunc(s.f) != s.f) {
        Fail(path, "expected an integer, got " + Describe(node));
        return std::nullopt;
      }
      // -kMin is a power of two, exact in a double.
      if (std::isfinite(s.f) && s.f >= static_cast<double>(kMin) &&
          s.f < -static_cast<double>(kMin)) {
        return static_cast<T>(s.f);
      }
      break;
    default:
      Fail(path, "expected an integer, got " + Describe(node));
      return std::nullopt;
  }
  Fail(path, "integer " + node.Scalar() + " is out of range [" + std::to_string(kMin) + ", " +
                 std::to_string(kMax) + "]");
  return std::nullopt;
}

std::optional<double> Decoder::Number(const YAML::Node& node, const std::string& path) {
  if (node.IsNull()) {
    return std::nullopt;
  }
  Scalar s;
  if (node.IsScalar()) {
    s = Resolve(node);
  }
  switch (s.kind) {
    case Scalar::Kind::kInt:
      return static_cast<double>(s.i);
    case Scalar::Kind::kUint:
      return static_cast<double>(s.u);
    case Scalar::Kind::kFloat:
      if (std::isfinite(s.f)) {
        return s.f;
      }
      Fail(path, "expected a finite number, got " + Describe(node));
      return std::nullopt;
    default:
      Fail(path, "expected a number, got " + Describe(node));
      return std::nullopt;
  }
}

std::optional<std::chrono::milliseconds> Decoder::Duration(const YAML::Node& node,
                                                           const std::string& path) {
  if (node.IsNull()) {
    return std::nullopt;
  }
  // Upstream's metav1.Duration is a JSON string: a bare number such as 15 is a type error there.
  if (!node.IsScalar() || Resolve(node).kind != Scalar::Kind::kString) {
    Fail(path, "expected a duration string such as \"15s\", got " + Describe(node));
    return std::nullopt;
  }
  std::optional<std::chrono::nanoseconds> d = util::ParseGoDuration(node.Scalar());
  if (!d) {
    Fail(path, "invalid duration " + Quote(node.Scalar()) +
                   "; expected a Go duration such as \"15s\", \"1m30s\" or \"500ms\"");
    return std::nullopt;
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  if (ms != *d) {
    Fail(path, "duration " + Quote(node.Scalar()) +
                   " is not a whole number of milliseconds, the precision berth-scheduler uses");
    return std::nullopt;
  }
  return ms;
}

void Decoder::CheckTypeField(const YAML::Node& root, std::string_view key,
                             std::string_view expected) {
  const YAML::Node value = root[std::string(key)];
  if (!value.IsDefined() || value.IsNull()) {
    Fail(std::string(key), "required; expected " + Quote(expected));
  } else if (!value.IsScalar() || value.Scalar() != expected) {
    Fail(std::string(key), "expected " + Quote(expected) + ", got " + Describe(value));
  }
}

std::optional<int32_t> Decoder::PercentageOfPlacements(const YAML::Node& node,
                                                       const std::string& path) {
  // Upstream's alpha workload-aware scheduling setting, Coscheduling's arg in Berth.
  std::optional<int32_t> value = Integer<int32_t>(node, path);
  if (value && (*value < 0 || *value > 100)) {
    Fail(path, "must be in the range [0, 100] (0 means berth-scheduler's default), got " +
                   std::to_string(*value));
    return std::nullopt;
  }
  return value;
}

void Decoder::DecodeClientConnection(const YAML::Node& node, const std::string& path,
                                     ClientConnection& out) {
  Fields(node, path, {"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"},
         [&](const std::string& key, const YAML::Node& value, const std::string& p) {
           if (key == "kubeconfig") {
             if (auto v = String(value, p)) {
               out.kubeconfig = *v;
             }
           } else if (key == "acceptContentTypes") {
             String(value, p);
           } else if (key == "contentType") {
             // Empty means the default; anything but the two encodings is left for validation
             // to reject.
             if (auto v = String(value, p); v && !v->empty()) {
               out.content_type = *v;
             }
           } else if (key == "qps") {
             // Upstream defaulting: 0 means the scheduler's 50.
             if (auto v = Number(value, p); v && *v != 0) {
               out.qps = *v;
             }
           } else if (key == "burst") {
             if (auto v = Integer<int32_t>(value, p); v && *v != 0) {
               out.burst = *v;
             }
           }
         });
}

void Decoder::DecodeLeaderElection(const YAML::Node& node, const std::string& path,
                                   LeaderElection& out) {
  // Upstream defaulting treats zero durations and empty strings as unset.
  auto duration = [&](const YAML::Node& value, const std::string& p,
                      std::chrono::milliseconds& field) {
    if (auto v = Duration(value, p); v && v->count() != 0) {
      field = *v;
    }
  };
  auto string = [&](const YAML::Node& value, const std::string& p, std::string& field) {
    if (auto v = String(value, p); v && !v->empty()) {
      field = *v;
    }
  };
  Fields(node, path,
         {"leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock",
          "resourceName", "resourceNamespace"},
         [&](const std::string& key, const YAML::Node& value, const std::string& p) {
           if (key == "leaderElect") {
             if (auto v = Bool(value, p)) {
               out.leader_elect = *v;
             }
           } else if (key == "leaseDuration") {
             duration(value, p, out.lease_duration);
           } else if (key == "renewDeadline") {
             duration(value, p, out.renew_deadline);
           } else if (key == "retryPeriod") {
             duration(value, p, out.retry_period);
           } else if (key == "resourceLock") {
             string(value, p, out.resource_lock);
           } else if (key == "resourceName") {
             string(value, p, out.resource_name);
           } else if (key == "resourceNamespace") {
             string(value, p, out.resource_namespace);
           }
         });
}

std::optional<std::string> Decoder::Bytes(const YAML::Node& node, const std::string& path) {
  std::optional<std::string> text = String(node, path);
  if (!text) return std::nullopt;
  std::optional<std::string> bytes = util::Base64Decode(*text);
  if (!bytes) {
    Fail(path, "expected base64 (the bytes of a PEM file, encoded), got text that is not");
  }
  return bytes;
}

ExtenderTlsConfig Decoder::DecodeExtenderTls(const YAML::Node& node, const std::string& path) {
  static const std::map<std::string_view, std::string ExtenderTlsConfig::*> kStrings = {
      {"serverName", &ExtenderTlsConfig::server_name},
      {"certFile", &ExtenderTlsConfig::cert_file},
      {"keyFile", &ExtenderTlsConfig::key_file},
      {"caFile", &ExtenderTlsConfig::ca_file}};
  static const std::map<std::string_view, std::string ExtenderTlsConfig::*> kBytes = {
      {"certData", &ExtenderTlsConfig::cert_data},
      {"keyData", &ExtenderTlsConfig::key_data},
      {"caData", &ExtenderTlsConfig::ca_data}};
  ExtenderTlsConfig out;
  Fields(
      node, path,
      {"insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData"},
      [&](const std::string& key, const YAML::Node& value, const std::string& p) {
        if (auto it = kStrings.find(key); it != kStrings.end()) {
          if (auto v = String(value, p)) out.*(it->second) = std::move(*v);
        } else if (auto b = kBytes.find(key); b != kBytes.end()) {
          if (auto v = Bytes(value, p)) out.*(b->second) = std::move(*v);
        } else if (auto v = Bool(value, p)) {
          out.insecure = *v;
        }
      });
  return out;
}

Extender Decoder::DecodeExtender(const YAML::Node& node, const std::string& path) {
  static const std::map<std::string_view, std::string Extender::*> kStrings = {
      {"urlPrefix", &Extender::url_prefix},
      {"filterVerb", &Extender::filter_verb},
      {"preemptVerb", &Extender::preempt_verb},
      {"prioritizeVerb", &Extender::prioritize_verb},
      {"bindVerb", &Extender::bind_verb}};
  static const std::map<std::string_view, bool Extender::*> kBools = {
      {"enableHTTPS", &Extender::enable_https},
      {"nodeCacheCapable", &Extender::node_cache_capable},
      {"ignorable", &Extender::ignorable}};
  Extender out;
  if (!node.IsMap()) {
    Fail(path, "expected a mapping, got " + Describe(node));
    return out;
  }
  Fields(node, path,
         {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
          "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources",
          "ignorable"},
         [&](const std::string& key, const YAML::Node& value, const std::string& p) {
           if (auto it = kStrings.find(key); it != kStrings.end()) {
             if (auto v = String(value, p)) out.*(it->second) = std::move(*v);
           } else if (auto b = kBools.find(key); b != kBools.end()) {
             if (auto v = Bool(value, p)) out.*(b->second) = *v;
           } else if (key == "weight") {
             if (auto v = Integer<int64_t>(value, p)) out.weight = *v;
           } else if (key == "tlsConfig") {
             if (!value.IsNull()) out.tls_config = DecodeExtenderTls(value, p);
           } else if (key == "httpTimeout") {
             if (auto v = Duration(value, p); v && v->count() != 0) out.http_timeout = *v;
           } else if (key == "managedResources") {
             Items(value, p, [&](size_t, const YAML::Node& item, const std::string& item_path) {
               ExtenderManagedResource& resource = out.managed_resources.emplace_back();
               Fields(item, item_path, {"name", "ignoredByScheduler"},
                      [&](const std::string& k, const YAML::Node& v, const std::string& kp) {
                        if (k == "name") {
                          if (auto name = String(v, kp)) resource.name = std::move(*name);
                        } else if (auto b = Bool(v, kp)) {
                          resource.ignored_by_scheduler = *b;
                        }
                      });
             });
           }
         });
  return out;
}

PluginRef Decoder::DecodePluginRef(const YAML::Node& node, const std::string& path) {
  PluginRef ref;
  Fields(node, path, {"name", "weight"},
         [&](const std::string& key, const YAML::Node& value, const std::string& p) {
           if (key == "name") {
             if (auto v = String(value, p)) {
               ref.name = *v;
             }
           } else if (key == "weight") {
             if (auto v = Integer<int32_t>(value, p)) {
               ref.weight = *v;
             }
           }
         });
  // A non-mapping item was reported by Fields already.
  if (ref.name.empty() && (node.IsMap() || node.IsNull())) {
    Fail(Child(path, "name"), "required");
  }
  return ref;
}

PluginSet Decoder::DecodePluginSet(const YAML::Node& node, const std::string& path) {
  PluginSet set;
  Fields(node, path, {"enabled", "disabled"},
         [&](const std::string& key, const YAML::Node& value, const std::string& p) {
           std::vector<PluginRef>& list = key == "enabled" ? set.enabled : set.disabled;
           Items(value, p, [&](size_t, const YAML::Node& item, const std::string& item_path) {
             list.push_back(DecodePluginRef(item, item_path));
           });
         });
  // Checked here rather than only after merging so the paths point at the user's entries.
  for (size_t i = 0; i < set.enabled.size(); ++i) {
    const PluginRef& ref = set.enabled[i];
    std::string ref_path = Index(Child(path, "enabled"), i);
    if (!ref.name.empty() && !known_plugins_.contains(ref.name)) {
      Fail(Child(ref_path, "name"), UnknownPluginProblem(ref.name, known_plugins_));
    }
    if (ref.weight < 0) {
      Fail(Child(ref_path, "weight"), "must not be negative (0 means the plugin's default), got " +
                                          std::to_string(ref.weight));
    }
  }
  return set;
}

Plugins Decoder::DecodePlugins(const YAML::Node& node, const std::string& path,
                               PodGroupPluginSets& pod_group) {
  Plugins plugins;
  Fields(node, path,
         {"preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
          "reserve", "permit", "preBind", "bind", "postBind", "multiPoint", "placementGenerate",
          "placementScore", "placementFeasible", "podGroupPostFilter"},
         [&](const std::string& key, const YAML::Node& value, const std::string& p) {
           for (const ExtensionPoint& point : ExtensionPoints()) {
             if (point.key == key) {
               plugins.*point.set = DecodePluginSet(value, p);
               return;
             }
           }
           // Upstream's pod-group extension points, read by TranslateGangPlugins.
           for (const auto& [point_key, set] : PodGroupPoints()) {
             if (point_key == key) pod_group.*set = DecodePluginSet(value, p);
           }
         });
  return plugins;
}

PluginConfig Decoder::DecodePluginConfig(const YAML::Node& node, const std::string& path) {
  PluginConfig pc;
  Fields(node, path, {"name", "args"},
         [&](const std::string& key, const YAML::Node& value, const std::string& p) {
           if (key == "name") {
             if (auto v = String(value, p)) {
               pc.name = *v;
             }
           } else if (key == "args") {
             pc.args = Json(value, p);
           }
         });
  return pc;
}

Profile Decoder::DecodeProfile(const YAML::Node& node, const std::string& path) {
  Profile profile;
  Plugins custom;
  PodGroupPluginSets pod_group;
  std::optional<int32_t> percentage;
  Fields(node, path,
         {"schedulerName", "percentageOfNodesToScore", "percentageOfPlacementsToScore", "plugins",
          "pluginConfig"},
         [&](const std::string& key, const YAML::Node& value, const std::string& p) {
           if (key == "schedulerName") {
             // Present but empty stays empty so validation reports it, as upstream does.
             if (auto v = String(value, p)) {
               profile.scheduler_name = *v;
             }
           } else if (key == "percentageOfNodesToScore") {
             profile.percentage_of_nodes_to_score = Integer<int32_t>(value, p);
           } else if (key == "percentageOfPlacementsToScore") {
             percentage = PercentageOfPlacements(value, p);
           } else if (key == "plugins") {
             custom = DecodePlugins(value, p, pod_group);
           } else if (key == "pluginConfig") {
             Items(value, p, [&](size_t, const YAML::Node& item, const std::string& item_path) {
               profile.plugin_config.push_back(DecodePluginConfig(item, item_path));
             });
           }
         });
  gang_args_.push_back(TranslateGangPlugins(path, custom, pod_group, known_plugins_, issues_));
  if (percentage.value_or(0) != 0) gang_args_.back()[kPercentageOfPlacements] = *percentage;
  profile.plugins = MergePlugins(DefaultPlugins(), custom);
  return profile;
}

Configuration Decoder::Decode(const YAML::Node& root) {
  Configuration config;
  if (!root.IsDefined() || root.IsNull()) {
    Fail("", "empty document; expected a " + std::string(kKind));
    return config;
  }
  if (!root.IsMap()) {
    Fail("", "expected a " + std::string(kKind) + " mapping, got " + Describe(root));
    return config;
  }
  // Another apiVersion or kind means another schema: reporting its fields against this one
  // would only bury the real problem.
  CheckTypeField(root, "apiVersion", kApiVersion);
  CheckTypeField(root, "kind", kKind);
  if (!issues_.empty()) {
    return config;
  }

  Fields(root, "",
         {"apiVersion", "kind", "parallelism", "percentageOfNodesToScore",
          "percentageOfPlacementsToScore", "podInitialBackoffSeconds", "podMaxBackoffSeconds",
          "clientConnection", "leaderElection", "profiles", "extenders", "enableProfiling",
          "enableContentionProfiling", "delayCacheUntilActive"},
         [&](const std::string& key, const YAML::Node& value, const std::string& p) {
           if (key == "apiVersion" || key == "kind") {
             return;  // Checked above.
           } else if (key == "parallelism") {
             if (auto v = Integer<int32_t>(value, p)) {
               config.parallelism = *v;
             }
           } else if (key == "percentageOfNodesToScore") {
             if (auto v = Integer<int32_t>(value, p)) {
               config.percentage_of_nodes_to_score = *v;
             }
           } else if (key == "percentageOfPlacementsToScore") {
             percentage_of_placements_ = PercentageOfPlacements(value, p);
           } else if (key == "podInitialBackoffSeconds") {
             if (auto v = Integer<int64_t>(value, p)) {
               config.pod_initial_backoff_seconds = *v;
             }
           } else if (key == "podMaxBackoffSeconds") {
             if (auto v = Integer<int64_t>(value, p)) {
               config.pod_max_backoff_seconds = *v;
             }
           } else if (key == "clientConnection") {
             DecodeClientConnection(value, p, config.client_connection);
           } else if (key == "leaderElection") {
             DecodeLeaderElection(value, p, config.leader_election);
           } else if (key == "profiles") {
             Items(value, p, [&](size_t, const YAML::Node& item, const std::string& item_path) {
               config.profiles.push_back(DecodeProfile(item, item_path));
             });
           } else if (key == "extenders") {
             Items(value, p, [&](size_t, const YAML::Node& item, const std::string& item_path) {
               config.extenders.push_back(DecodeExtender(item, item_path));
             });
           } else {
             // enableProfiling, enableContentionProfiling, delayCacheUntilActive: upstream
             // settings with no Berth counterpart, type-checked and ignored.
             Bool(value, p);
           }
         });

  if (config.profiles.empty()) {
    Profile profile;
    profile.plugins = DefaultPlugins();
    config.profiles.push_back(std::move(profile));
    gang_args_.push_back(nlohmann::json::object());
  }
  for (nlohmann::json& args : gang_args_) {
    if (percentage_of_placements_.value_or(0) != 0 && !args.contains(kPercentageOfPlacements)) {
      args[kPercentageOfPlacements] = *percentage_of_placements_;
    }
  }
  return config;
}

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void ThrowUnreadable(const std::string& path, int error) {
  throw ConfigError(
      path, {{"", "cannot read: " + std::error_code(error, std::generic_category()).message()}});
}

}  // namespace

Configuration LoadString(const std::string& text, const std::string& source_name,
                         const std::set<std::string>& known_plugins,
                         const ArgsValidator& validate_args) {
  const std::vector<YAML::Node> documents = LoadDocuments(text, source_name);
  if (documents.size() > 1) {
    throw ConfigError(source_name,
                      {{"", "found " + std::to_string(documents.size()) +
                                " YAML documents; expected exactly one " + std::string(kKind)}});
  }

  const std::set<std::string> known = WithGangPlugins(known_plugins);
  Decoder decoder(known);
  Configuration config = decoder.Decode(documents.empty() ? YAML::Node() : documents[0]);
  if (!decoder.issues().empty()) {
    throw ConfigError(source_name, std::move(decoder.issues()));
  }
  std::vector<ConfigIssue> issues = Validate(config, known, WithGangArgsCheck(validate_args));
  if (!issues.empty()) {
    throw ConfigError(source_name, std::move(issues));
  }
  for (size_t i = 0; i < config.profiles.size(); ++i) {
    ApplyGangArgs(config.profiles[i], decoder.gang_args()[i]);
  }
  ApplyExtenderIgnoredResources(config);
  return config;
}

Configuration LoadFile(const std::string& path, const std::set<std::string>& known_plugins,
                       const ArgsValidator& validate_args) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    ThrowUnreadable(path, errno);
  }
  std::string text;
  std::array<char, size_t{64} * 1024> buffer;
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n == 0) {
      break;
    }
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      ThrowUnreadable(path, errno);
    }
    text.append(buffer.data(), static_cast<size_t>(n));
  }
  return LoadString(text, path, known_plugins, validate_args);
}

}  // namespace berth::config
