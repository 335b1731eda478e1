#ifndef BERTH_PKG_CONFIG_CONFIG_H_
#define BERTH_PKG_CONFIG_CONFIG_H_

// Berth's view of kube-scheduler's KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).
// A Configuration returned by LoadFile/LoadString (pkg/config/load.h) is fully defaulted:
// every profile's plugins are already the merge of DefaultPlugins() with the user's sets, and
// plugin args are the user's JSON, untouched (each plugin decodes and defaults its own args).

#include <array>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace berth::config {

inline constexpr std::string_view kApiVersion = "kubescheduler.config.k8s.io/v1";
inline constexpr std::string_view kKind = "KubeSchedulerConfiguration";
// Upstream's default is "default-scheduler"; Berth runs beside kube-scheduler, so it must not
// claim the pods kube-scheduler owns unless the user asks for that name explicitly.
inline constexpr std::string_view kDefaultSchedulerName = "berth-scheduler";
// The encodings clientConnection.contentType may name.
inline constexpr std::string_view kContentTypeJson = "application/json";
inline constexpr std::string_view kContentTypeProtobuf = "application/vnd.kubernetes.protobuf";
// The name that disables every default plugin of an extension point when listed in `disabled`.
inline constexpr std::string_view kAllPlugins = "*";

struct PluginRef {
  std::string name;
  // 0 means "not set": the framework applies the plugin's default (1 for score plugins).
  int32_t weight = 0;

  bool operator==(const PluginRef&) const = default;
};

struct PluginSet {
  std::vector<PluginRef> enabled;
  // After merging, also the disabled defaults; the framework needs them to decide which
  // MultiPoint plugins to expand into this extension point.
  std::vector<PluginRef> disabled;

  bool operator==(const PluginSet&) const = default;
};

struct Plugins {
  PluginSet pre_enqueue, queue_sort, pre_filter, filter, post_filter, pre_score, score, reserve,
      permit, pre_bind, bind, post_bind, multi_point;

  bool operator==(const Plugins&) const = default;
};

// One extension point's key in the file format and its member in Plugins.
struct ExtensionPoint {
  std::string_view key;
  PluginSet Plugins::*set;
};

// Every extension point, in upstream's field order (multiPoint last).
const std::array<ExtensionPoint, 13>& ExtensionPoints();

struct PluginConfig {
  std::string name;
  // The args exactly as written (null when absent). In-tree kube-scheduler files may carry
  // apiVersion/kind inside args; they are kept.
  nlohmann::json args;

  bool operator==(const PluginConfig&) const = default;
};

struct Profile {
  std::string scheduler_name = std::string(kDefaultSchedulerName);
  // Unset: the global percentage applies.
  std::optional<int32_t> percentage_of_nodes_to_score;
  Plugins plugins;
  std::vector<PluginConfig> plugin_config;

  bool operator==(const Profile&) const = default;
};

struct LeaderElection {
  // As upstream: on, so a second replica is a standby rather than a second scheduler.
  bool leader_elect = true;
  std::chrono::milliseconds lease_duration{15000}, renew_deadline{10000}, retry_period{2000};
  std::string resource_lock = "leases", resource_name = "berth-scheduler",
              resource_namespace = "kube-system";

  bool operator==(const LeaderElection&) const = default;
};

struct ClientConnection {
  std::string kubeconfig;
  // <= 0 disables client-side rate limiting (as in client-go); 0 in a file means the default 50.
  double qps = 50;
  int32_t burst = 100;
  // How pods and nodes are listed and watched: protobuf (upstream's default; JSON is still
  // accepted from a server that cannot encode protobuf) or JSON. What Berth writes (bindings,
  // events, status patches) is JSON either way.
  std::string content_type = std::string(kContentTypeProtobuf);

  bool operator==(const ClientConnection&) const = default;
};

// extenders[].tlsConfig. The *_data fields hold the bytes (the file format has them in base64).
struct ExtenderTlsConfig {
  bool insecure = false;
  std::string server_name;
  std::string cert_file, key_file, ca_file;
  std::string cert_data, key_data, ca_data;

  bool operator==(const ExtenderTlsConfig&) const = default;
};

struct ExtenderManagedResource {
  std::string name;
  // NodeResourcesFit leaves the resource to the extender (added to its ignoredResources).
  bool ignored_by_scheduler = false;

  bool operator==(const ExtenderManagedResource&) const = default;
};

// One entry of `extenders`: a kube-scheduler extender (pkg/extender).
struct Extender {
  std::string url_prefix;
  std::string filter_verb, preempt_verb, prioritize_verb, bind_verb;
  int64_t weight = 0;  // Multiplies the prioritize scores; positive when prioritizeVerb is set.
  bool enable_https = false;
  std::optional<ExtenderTlsConfig> tls_config;
  // Upstream's default; a zero in the file means the default too.
  std::chrono::milliseconds http_timeout{5000};
  bool node_cache_capable = false;
  std::vector<ExtenderManagedResource> managed_resources;
  bool ignorable = false;

  bool operator==(const Extender&) const = default;
};

struct Configuration {
  int32_t parallelism = 16;
  // 0: adaptive (upstream's 5%..50% by cluster size).
  int32_t percentage_of_nodes_to_score = 0;
  int64_t pod_initial_backoff_seconds = 1, pod_max_backoff_seconds = 10;
  ClientConnection client_connection;
  LeaderElection leader_election;
  std::vector<Profile> profiles;
  std::vector<Extender> extenders;

  bool operator==(const Configuration&) const = default;
};

// One problem in a configuration. `field` is the path in the file format
// ("profiles[0].plugins.score.enabled[2].name"); empty when the problem is the document itself
// (syntax errors, unreadable file).
struct ConfigIssue {
  std::string field;
  std::string problem;

  bool operator==(const ConfigIssue&) const = default;
};

// Every problem found in one configuration source. what() has one line per issue:
// "<source>: <field>: <problem>" (or "<source>: <problem>" for document-level issues).
class ConfigError : public std::runtime_error {
 public:
  // Invariant: `issues` is not empty.
  ConfigError(std::string source, std::vector<ConfigIssue> issues);

  const std::string& source() const { return source_; }
  const std::vector<ConfigIssue>& issues() const { return issues_; }

 private:
  std::string source_;
  std::vector<ConfigIssue> issues_;
};

// Berth's baseline: upstream v1's default MultiPoint set restricted to the plugins Berth has,
// with upstream's weights and order, and Coscheduling (gang scheduling, a no-op for pods outside
// gangs) as the QueueSort plugin in PrioritySort's place.
Plugins DefaultPlugins();

// What an empty file (apiVersion and kind only) loads to: one "berth-scheduler" profile with
// DefaultPlugins().
Configuration DefaultConfiguration();

// Upstream mergePluginSet: the custom disabled names (and "*") remove defaults; a default the
// user enables again is replaced in place by the user's entry (user's weight, default's
// position); every other custom plugin is appended in the user's order. The result's disabled
// list is the custom disabled names followed by the default disabled names, without weights.
PluginSet MergePluginSet(const PluginSet& defaults, const PluginSet& custom);
// MergePluginSet for every extension point.
Plugins MergePlugins(const Plugins& defaults, const Plugins& custom);

// As kube-scheduler does at start: the resources that extenders manage with ignoredByScheduler
// become the ignoredResources of every profile's NodeResourcesFit args (replacing any the file
// gave; an entry is added where a profile has none), so that the plugin leaves them to the
// extender. No change without such resources. LoadFile and LoadString apply it.
void ApplyExtenderIgnoredResources(Configuration& config);

// The configuration in the file format (camelCase, durations as Go strings), with apiVersion and
// kind, so /configz output loads back to an equal Configuration.
nlohmann::json ToJson(const Configuration& config);

}  // namespace berth::config

#endif  // BERTH_PKG_CONFIG_CONFIG_H_
