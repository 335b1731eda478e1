#include "pkg/config/validate.h"

#include <cmath>
#include <map>
#include <string_view>

#include "pkg/config/gang_plugins.h"
#include "pkg/util/time.h"
#include "pkg/util/url.h"
#include "pkg/yaml/yaml.h"

namespace berth::config {
namespace {

using yaml::Quote;

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

bool IsDefaultPlugin(const std::string& name) {
  static const Plugins kDefaults = DefaultPlugins();
  for (const ExtensionPoint& point : ExtensionPoints()) {
    for (const PluginRef& ref : (kDefaults.*point.set).enabled) {
      if (ref.name == name) {
        return true;
      }
    }
  }
  return false;
}

bool Contains(const std::vector<PluginRef>& refs, std::string_view name) {
  for (const PluginRef& ref : refs) {
    if (ref.name == name) {
      return true;
    }
  }
  return false;
}

// Whether a merged profile can end up with any plugin at `point` once the framework expands
// MultiPoint. Among DefaultPlugins() only `default_provider` implements the point (Coscheduling
// is the only default QueueSort plugin, DefaultBinder the only default Bind plugin).
// Which other plugins implement it is known only to the framework runtime, so any non-default
// MultiPoint plugin counts as a possible provider: this reports a missing provider only when
// there certainly is none.
bool MayHavePluginAt(const Plugins& plugins, const PluginSet& point,
                     std::string_view default_provider) {
  if (!point.enabled.empty()) {
    return true;
  }
  // As in upstream's expansion: "*" at a point disables MultiPoint expansion there entirely.
  if (Contains(point.disabled, kAllPlugins)) {
    return false;
  }
  for (const PluginRef& ref : plugins.multi_point.enabled) {
    if (Contains(point.disabled, ref.name)) {
      continue;
    }
    if (ref.name == default_provider || !IsDefaultPlugin(ref.name)) {
      return true;
    }
  }
  return false;
}

void ValidatePercentage(const std::string& path, int32_t value, std::vector<ConfigIssue>& issues) {
  if (value < 0 || value > 100) {
    issues.push_back({path, "must be in the range [0, 100], got " + std::to_string(value)});
  }
}

void ValidateClientConnection(const ClientConnection& cc, std::vector<ConfigIssue>& issues) {
  if (!std::isfinite(cc.qps)) {
    issues.push_back({"clientConnection.qps", "must be a finite number"});
  }
  if (cc.burst <= 0) {
    issues.push_back(
        {"clientConnection.burst", "must be greater than 0, got " + std::to_string(cc.burst)});
  }
  if (cc.content_type != kContentTypeJson && cc.content_type != kContentTypeProtobuf) {
    issues.push_back({"clientConnection.contentType", "unsupported content type " +
                                                          Quote(cc.content_type) + "; expected " +
                                                          std::string(kContentTypeProtobuf) +
                                                          " or " + std::string(kContentTypeJson)});
  }
}

// Upstream's component-base rules, which apply only when leader election is on.
void ValidateLeaderElection(const LeaderElection& le, std::vector<ConfigIssue>& issues) {
  if (!le.leader_elect) {
    return;
  }
  const std::chrono::milliseconds zero{0};
  if (le.lease_duration <= zero) {
    issues.push_back({"leaderElection.leaseDuration", "must be greater than zero"});
  }
  if (le.renew_deadline <= zero) {
    issues.push_back({"leaderElection.renewDeadline", "must be greater than zero"});
  }
  if (le.retry_period <= zero) {
    issues.push_back({"leaderElection.retryPeriod", "must be greater than zero"});
  }
  if (le.lease_duration <= le.renew_deadline) {
    issues.push_back(
        {"leaderElection.leaseDuration", "must be greater than renewDeadline (" +
                                             util::FormatGoDuration(le.renew_deadline) + "), got " +
                                             util::FormatGoDuration(le.lease_duration)});
  }
  if (le.resource_lock != "leases") {
    issues.push_back(
        {"leaderElection.resourceLock", "must be \"leases\", got " + Quote(le.resource_lock)});
  }
  if (le.resource_name.empty()) {
    issues.push_back({"leaderElection.resourceName", "required"});
  }
  if (le.resource_namespace.empty()) {
    issues.push_back({"leaderElection.resourceNamespace", "required"});
  }
}

void ValidatePlugins(const std::string& path, const Plugins& plugins,
                     const std::set<std::string>& known_plugins, std::vector<ConfigIssue>& issues) {
  for (const ExtensionPoint& point : ExtensionPoints()) {
    const PluginSet& set = plugins.*point.set;
    std::string point_path = path + "." + std::string(point.key);
    for (size_t i = 0; i < set.enabled.size(); ++i) {
      const PluginRef& ref = set.enabled[i];
      std::string ref_path = Index(point_path + ".enabled", i);
      if (ref.name.empty()) {
        issues.push_back({ref_path + ".name", "required"});
      } else if (!known_plugins.contains(ref.name)) {
        issues.push_back({ref_path + ".name", UnknownPluginProblem(ref.name, known_plugins)});
      }
      if (ref.weight < 0) {
        issues.push_back({ref_path + ".weight",
                          "must not be negative (0 means the plugin's "
                          "default), got " +
                              std::to_string(ref.weight)});
      }
    }
    // Disabled names are deliberately not checked against the known plugins: files written for
    // kube-scheduler disable upstream plugins Berth does not have, and disabling a plugin that
    // is absent anyway is harmless.
    for (size_t i = 0; i < set.disabled.size(); ++i) {
      if (set.disabled[i].name.empty()) {
        issues.push_back({Index(point_path + ".disabled", i) + ".name", "required"});
      }
    }
  }
  if (plugins.queue_sort.enabled.size() > 1) {
    issues.push_back(
        {path + ".queueSort.enabled", "only one queue sort plugin can be enabled, got " +
                                          std::to_string(plugins.queue_sort.enabled.size())});
  }
  if (!MayHavePluginAt(plugins, plugins.queue_sort, "Coscheduling")) {
    issues.push_back({path + ".queueSort", "no queue sort plugin is enabled"});
  }
  if (!MayHavePluginAt(plugins, plugins.bind, "DefaultBinder")) {
    issues.push_back({path + ".bind", "no bind plugin is enabled"});
  }
}

void ValidateProfile(const std::string& path, const Profile& profile,
                     const std::set<std::string>& known_plugins, const ArgsValidator& validate_args,
                     std::vector<ConfigIssue>& issues) {
  if (profile.scheduler_name.empty()) {
    issues.push_back({path + ".schedulerName", "required"});
  }
  if (profile.percentage_of_nodes_to_score) {
    ValidatePercentage(path + ".percentageOfNodesToScore", *profile.percentage_of_nodes_to_score,
                       issues);
  }
  ValidatePlugins(path + ".plugins", profile.plugins, known_plugins, issues);

  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < profile.plugin_config.size(); ++i) {
    const std::string& name = profile.plugin_config[i].name;
    std::string name_path = Index(path + ".pluginConfig", i) + ".name";
    if (name.empty()) {
      issues.push_back({name_path, "required"});
      continue;
    }
    if (!known_plugins.contains(name)) {
      issues.push_back({name_path, UnknownPluginProblem(name, known_plugins)});
    } else if (validate_args) {
      const std::string args_path = Index(path + ".pluginConfig", i) + ".args";
      for (ConfigIssue& issue : validate_args(name, profile.plugin_config[i].args)) {
        issues.push_back(
            {issue.field.empty() ? args_path : args_path + "." + issue.field, issue.problem});
      }
    }
    if (auto [it, inserted] = seen.emplace(name, i); !inserted) {
      issues.push_back({name_path, "duplicate " + Quote(name) + "; already configured at " +
                                       Index(path + ".pluginConfig", it->second)});
    }
  }
}

const nlohmann::json* FindArgs(const Profile& profile, const std::string& name, size_t* index) {
  for (size_t i = 0; i < profile.plugin_config.size(); ++i) {
    if (profile.plugin_config[i].name == name) {
      *index = i;
      return &profile.plugin_config[i].args;
    }
  }
  return nullptr;
}

// The queue sort plugin's args as far as the queue order depends on them: null for none.
// Coscheduling's placement args place each profile's own gangs (gang_plugins.h).
nlohmann::json QueueOrderArgs(const std::string& plugin, const nlohmann::json* args) {
  if (args == nullptr || args->is_null()) return nullptr;
  if (plugin != kCoscheduling || !args->is_object()) return *args;
  nlohmann::json out = *args;
  for (std::string_view key : kCoschedulingPlacementArgs) out.erase(std::string(key));
  return out.empty() ? nlohmann::json() : out;
}

// Upstream's validateCommonQueueSort: one queue serves every profile, so every profile's
// (merged) queueSort set and the queue sort plugin's args must match the first profile's.
void ValidateCommonQueueSort(const std::vector<Profile>& profiles,
                             std::vector<ConfigIssue>& issues) {
  const PluginSet& canon = profiles[0].plugins.queue_sort;
  std::string queue_sort_name = canon.enabled.empty() ? "" : canon.enabled[0].name;
  size_t unused = 0;
  const nlohmann::json canon_args = QueueOrderArgs(
      queue_sort_name,
      queue_sort_name.empty() ? nullptr : FindArgs(profiles[0], queue_sort_name, &unused));
  for (size_t i = 1; i < profiles.size(); ++i) {
    std::string path = Index("profiles", i);
    if (profiles[i].plugins.queue_sort != canon) {
      issues.push_back({path + ".plugins.queueSort",
                        "must be the same for all profiles (differs from profiles[0])"});
      continue;
    }
    if (queue_sort_name.empty()) {
      continue;
    }
    size_t index = 0;
    const nlohmann::json* args = FindArgs(profiles[i], queue_sort_name, &index);
    if (QueueOrderArgs(queue_sort_name, args) != canon_args) {
      std::string args_path =
          args != nullptr ? Index(path + ".pluginConfig", index) + ".args" : path + ".pluginConfig";
      issues.push_back({args_path, "args of queue sort plugin " + Quote(queue_sort_name) +
                                       " must be the same for all profiles"});
    }
  }
}

// Upstream's validateExtenders, plus a check upstream leaves to the first call: the URL prefix
// must be one that can be called. Managed resource names are checked where resource names are
// known (pkg/extender's Build).
void ValidateExtenders(const std::vector<Extender>& extenders, std::vector<ConfigIssue>& issues) {
  int binders = 0;
  std::set<std::string> managed;
  for (size_t i = 0; i < extenders.size(); ++i) {
    const Extender& e = extenders[i];
    const std::string path = Index("extenders", i);
    if (e.url_prefix.empty()) {
      issues.push_back({path + ".urlPrefix", "required; expected an http:// or https:// URL"});
    } else if (const util::UrlResult url = util::ParseUrl(e.url_prefix); !url) {
      issues.push_back({path + ".urlPrefix", "not a URL: " + url.error});
    } else if (url.url->scheme != "http" && url.url->scheme != "https") {
      issues.push_back({path + ".urlPrefix", "expected an http:// or https:// URL, got " +
                                                 Quote(util::RedactUrl(e.url_prefix))});
    } else if (url.url->has_user || url.url->has_query || url.url->has_fragment) {
      issues.push_back({path + ".urlPrefix",
                        "must be scheme://host[:port][/path], without user info, query or "
                        "fragment"});
    }
    if (!e.prioritize_verb.empty() && e.weight <= 0) {
      issues.push_back({path + ".weight", "must have a positive weight applied to it, got " +
                                              std::to_string(e.weight)});
    }
    if (!e.bind_verb.empty()) binders++;
    if (e.http_timeout.count() < 0) {
      issues.push_back({path + ".httpTimeout", "must not be negative"});
    }
    if (const auto& tls = e.tls_config;
        tls && (tls->cert_data.empty() && tls->cert_file.empty()) !=
                   (tls->key_data.empty() && tls->key_file.empty())) {
      issues.push_back({path + ".tlsConfig",
                        "a client certificate needs its key, and a key its "
                        "certificate (certData/certFile with "
                        "keyData/keyFile)"});
    }
    for (size_t j = 0; j < e.managed_resources.size(); ++j) {
      const std::string& name = e.managed_resources[j].name;
      if (!managed.insert(name).second) {
        issues.push_back({Index(path + ".managedResources", j) + ".name",
                          "duplicate extender managed resource name " + Quote(name)});
      }
    }
  }
  if (binders > 1) {
    issues.push_back({"extenders", "found " + std::to_string(binders) +
                                       " extenders implementing bind; only one extender can "
                                       "implement bind"});
  }
}

}  // namespace

std::string UnknownPluginProblem(const std::string& name,
                                 const std::set<std::string>& known_plugins) {
  std::string known;
  for (const std::string& k : known_plugins) {
    if (!known.empty()) {
      known += ", ";
    }
    known += k;
  }
  if (known.empty()) {
    known = "(none)";
  }
  return "unknown plugin " + Quote(name) + "; known plugins: " + known;
}

std::vector<ConfigIssue> Validate(const Configuration& config,
                                  const std::set<std::string>& known_plugins,
                                  const ArgsValidator& validate_args) {
  std::vector<ConfigIssue> issues;
  if (config.parallelism <= 0) {
    issues.push_back(
        {"parallelism", "must be greater than 0, got " + std::to_string(config.parallelism)});
  }
  ValidatePercentage("percentageOfNodesToScore", config.percentage_of_nodes_to_score, issues);
  if (config.pod_initial_backoff_seconds <= 0) {
    issues.push_back(
        {"podInitialBackoffSeconds",
         "must be greater than 0, got " + std::to_string(config.pod_initial_backoff_seconds)});
  }
  if (config.pod_max_backoff_seconds < config.pod_initial_backoff_seconds) {
    issues.push_back(
        {"podMaxBackoffSeconds", "must be greater than or equal to podInitialBackoffSeconds (" +
                                     std::to_string(config.pod_initial_backoff_seconds) +
                                     "), got " + std::to_string(config.pod_max_backoff_seconds)});
  }
  ValidateClientConnection(config.client_connection, issues);
  ValidateLeaderElection(config.leader_election, issues);
  ValidateExtenders(config.extenders, issues);

  if (config.profiles.empty()) {
    issues.push_back({"profiles", "at least one profile is required"});
    return issues;
  }
  std::map<std::string, size_t> names;
  for (size_t i = 0; i < config.profiles.size(); ++i) {
    const Profile& profile = config.profiles[i];
    std::string path = Index("profiles", i);
    ValidateProfile(path, profile, known_plugins, validate_args, issues);
    if (profile.scheduler_name.empty()) {
      continue;
    }
    if (auto [it, inserted] = names.emplace(profile.scheduler_name, i); !inserted) {
      issues.push_back({path + ".schedulerName", "duplicate " + Quote(profile.scheduler_name) +
                                                     "; already used by " +
                                                     Index("profiles", it->second)});
    }
  }
  ValidateCommonQueueSort(config.profiles, issues);
  return issues;
}

}  // namespace berth::config
