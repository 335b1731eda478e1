#include "pkg/config/config.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "pkg/util/base64.h"
#include "pkg/util/time.h"

namespace berth::config {
namespace {

std::string JoinIssues(const std::string& source, const std::vector<ConfigIssue>& issues) {
  std::string out;
  for (const ConfigIssue& issue : issues) {
    if (!out.empty()) {
      out += '\n';
    }
    out += source;
    out += ": ";
    if (!issue.field.empty()) {
      out += issue.field;
      out += ": ";
    }
    out += issue.problem;
  }
  return out;
}

nlohmann::json PluginRefJson(const PluginRef& ref) {
  nlohmann::json out = {{"name", ref.name}};
  if (ref.weight != 0) {
    out["weight"] = ref.weight;
  }
  return out;
}

nlohmann::json PluginSetJson(const PluginSet& set) {
  nlohmann::json out = nlohmann::json::object();
  if (!set.enabled.empty()) {
    nlohmann::json& enabled = out["enabled"] = nlohmann::json::array();
    for (const PluginRef& ref : set.enabled) {
      enabled.push_back(PluginRefJson(ref));
    }
  }
  if (!set.disabled.empty()) {
    nlohmann::json& disabled = out["disabled"] = nlohmann::json::array();
    for (const PluginRef& ref : set.disabled) {
      disabled.push_back({{"name", ref.name}});
    }
  }
  return out;
}

nlohmann::json ProfileJson(const Profile& profile) {
  nlohmann::json out = {{"schedulerName", profile.scheduler_name}};
  if (profile.percentage_of_nodes_to_score) {
    out["percentageOfNodesToScore"] = *profile.percentage_of_nodes_to_score;
  }
  nlohmann::json& plugins = out["plugins"] = nlohmann::json::object();
  for (const ExtensionPoint& point : ExtensionPoints()) {
    plugins[std::string(point.key)] = PluginSetJson(profile.plugins.*point.set);
  }
  nlohmann::json& plugin_config = out["pluginConfig"] = nlohmann::json::array();
  for (const PluginConfig& pc : profile.plugin_config) {
    nlohmann::json entry = {{"name", pc.name}};
    if (!pc.args.is_null()) {
      entry["args"] = pc.args;
    }
    plugin_config.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

ConfigError::ConfigError(std::string source, std::vector<ConfigIssue> issues)
    : std::runtime_error(JoinIssues(source, issues)),
      source_(std::move(source)),
      issues_(std::move(issues)) {}

const std::array<ExtensionPoint, 13>& ExtensionPoints() {
  static const std::array<ExtensionPoint, 13> kPoints = {{
      {"preEnqueue", &Plugins::pre_enqueue},
      {"queueSort", &Plugins::queue_sort},
      {"preFilter", &Plugins::pre_filter},
      {"filter", &Plugins::filter},
      {"postFilter", &Plugins::post_filter},
      {"preScore", &Plugins::pre_score},
      {"score", &Plugins::score},
      {"reserve", &Plugins::reserve},
      {"permit", &Plugins::permit},
      {"preBind", &Plugins::pre_bind},
      {"bind", &Plugins::bind},
      {"postBind", &Plugins::post_bind},
      {"multiPoint", &Plugins::multi_point},
  }};
  return kPoints;
}

Plugins DefaultPlugins() {
  Plugins plugins;
  plugins.multi_point.enabled = {
      {"SchedulingGates", 0},
      // Berth's default QueueSort in place of upstream's PrioritySort: PrioritySort's order for
      // pods outside gangs, a gang's pods kept together (pkg/plugins/coscheduling). Listed before
      // DefaultPreemption, so its PostFilter ends a failed gang's attempt before preemption runs.
      {"Coscheduling", 0},
      {"NodeName", 0},
      {"NodeUnschedulable", 0},
      {"TaintToleration", 3},
      {"NodeAffinity", 2},
      {"NodePorts", 0},
      {"NodeResourcesFit", 1},
      {"VolumeRestrictions", 0},
      {"NodeVolumeLimits", 0},
      {"VolumeBinding", 0},
      {"VolumeZone", 0},
      {"PodTopologySpread", 2},
      {"InterPodAffinity", 2},
      // Before DefaultPreemption, as upstream places it: freeing an idle claim's devices beats
      // evicting a pod that may be doing useful work.
      {"DynamicResources", 2},
      {"DefaultPreemption", 0},
      {"NodeResourcesBalancedAllocation", 1},
      {"ImageLocality", 1},
      {"DefaultBinder", 0},
      {"NodeDeclaredFeatures", 0},
  };
  return plugins;
}

Configuration DefaultConfiguration() {
  Configuration config;
  Profile profile;
  profile.plugins = DefaultPlugins();
  config.profiles.push_back(std::move(profile));
  return config;
}

PluginSet MergePluginSet(const PluginSet& defaults, const PluginSet& custom) {
  PluginSet merged;
  std::set<std::string> disabled_names;
  for (const std::vector<PluginRef>* list : {&custom.disabled, &defaults.disabled}) {
    for (const PluginRef& ref : *list) {
      merged.disabled.push_back({ref.name, 0});
      disabled_names.insert(ref.name);
    }
  }
  // Upstream keys a map by name, so when the user lists a default twice the last entry replaces
  // the default and the earlier one is appended; the framework then rejects the duplicate.
  std::map<std::string, size_t> custom_index;
  for (size_t i = 0; i < custom.enabled.size(); ++i) {
    custom_index[custom.enabled[i].name] = i;
  }

  std::vector<bool> replaced(custom.enabled.size(), false);
  if (!disabled_names.contains(std::string(kAllPlugins))) {
    for (const PluginRef& def : defaults.enabled) {
      if (disabled_names.contains(def.name)) {
        continue;
      }
      if (auto it = custom_index.find(def.name); it != custom_index.end()) {
        merged.enabled.push_back(custom.enabled[it->second]);
        replaced[it->second] = true;
      } else {
        merged.enabled.push_back(def);
      }
    }
  }
  for (size_t i = 0; i < custom.enabled.size(); ++i) {
    if (!replaced[i]) {
      merged.enabled.push_back(custom.enabled[i]);
    }
  }
  return merged;
}

Plugins MergePlugins(const Plugins& defaults, const Plugins& custom) {
  Plugins merged;
  for (const ExtensionPoint& point : ExtensionPoints()) {
    merged.*point.set = MergePluginSet(defaults.*point.set, custom.*point.set);
  }
  return merged;
}

namespace {

// An extender in the file format. A client key's bytes are left out: /configz is not where a
// secret belongs (the key file's path is shown).
nlohmann::json ExtenderJson(const Extender& e) {
  nlohmann::json out = {{"urlPrefix", e.url_prefix},
                        {"httpTimeout", util::FormatGoDuration(e.http_timeout)}};
  auto add = [&](const char* key, const std::string& value) {
    if (!value.empty()) out[key] = value;
  };
  add("filterVerb", e.filter_verb);
  add("preemptVerb", e.preempt_verb);
  add("prioritizeVerb", e.prioritize_verb);
  add("bindVerb", e.bind_verb);
  if (e.weight != 0) out["weight"] = e.weight;
  if (e.enable_https) out["enableHTTPS"] = true;
  if (e.node_cache_capable) out["nodeCacheCapable"] = true;
  if (e.ignorable) out["ignorable"] = true;
  if (e.tls_config) {
    const ExtenderTlsConfig& tls = *e.tls_config;
    nlohmann::json t = nlohmann::json::object();
    if (tls.insecure) t["insecure"] = true;
    auto add_to = [&](const char* key, const std::string& value) {
      if (!value.empty()) t[key] = value;
    };
    add_to("serverName", tls.server_name);
    add_to("certFile", tls.cert_file);
    add_to("keyFile", tls.key_file);
    add_to("caFile", tls.ca_file);
    if (!tls.cert_data.empty()) t["certData"] = util::Base64Encode(tls.cert_data);
    if (!tls.ca_data.empty()) t["caData"] = util::Base64Encode(tls.ca_data);
    out["tlsConfig"] = std::move(t);
  }
  if (!e.managed_resources.empty()) {
    nlohmann::json& managed = out["managedResources"] = nlohmann::json::array();
    for (const ExtenderManagedResource& r : e.managed_resources) {
      nlohmann::json m = {{"name", r.name}};
      if (r.ignored_by_scheduler) m["ignoredByScheduler"] = true;
      managed.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace

void ApplyExtenderIgnoredResources(Configuration& config) {
  nlohmann::json ignored = nlohmann::json::array();
  for (const Extender& e : config.extenders) {
    for (const ExtenderManagedResource& r : e.managed_resources) {
      if (r.ignored_by_scheduler) ignored.push_back(r.name);
    }
  }
  if (ignored.empty()) return;
  for (Profile& profile : config.profiles) {
    auto it = std::find_if(profile.plugin_config.begin(), profile.plugin_config.end(),
                           [](const PluginConfig& pc) { return pc.name == "NodeResourcesFit"; });
    if (it == profile.plugin_config.end()) {
      profile.plugin_config.push_back({"NodeResourcesFit", nlohmann::json::object()});
      it = std::prev(profile.plugin_config.end());
    }
    if (!it->args.is_object()) it->args = nlohmann::json::object();
    it->args["ignoredResources"] = ignored;
  }
}

nlohmann::json ToJson(const Configuration& config) {
  const ClientConnection& cc = config.client_connection;
  const LeaderElection& le = config.leader_election;
  nlohmann::json out = {
      {"apiVersion", std::string(kApiVersion)},
      {"kind", std::string(kKind)},
      {"parallelism", config.parallelism},
      {"percentageOfNodesToScore", config.percentage_of_nodes_to_score},
      {"podInitialBackoffSeconds", config.pod_initial_backoff_seconds},
      {"podMaxBackoffSeconds", config.pod_max_backoff_seconds},
      {"clientConnection",
       {
           {"kubeconfig", cc.kubeconfig},
           {"qps", cc.qps},
           {"burst", cc.burst},
           {"contentType", cc.content_type},
       }},
      {"leaderElection",
       {
           {"leaderElect", le.leader_elect},
           {"leaseDuration", util::FormatGoDuration(le.lease_duration)},
           {"renewDeadline", util::FormatGoDuration(le.renew_deadline)},
           {"retryPeriod", util::FormatGoDuration(le.retry_period)},
           {"resourceLock", le.resource_lock},
           {"resourceName", le.resource_name},
           {"resourceNamespace", le.resource_namespace},
       }},
  };
  nlohmann::json& profiles = out["profiles"] = nlohmann::json::array();
  for (const Profile& profile : config.profiles) {
    profiles.push_back(ProfileJson(profile));
  }
  if (!config.extenders.empty()) {
    nlohmann::json& extenders = out["extenders"] = nlohmann::json::array();
    for (const Extender& e : config.extenders) extenders.push_back(ExtenderJson(e));
  }
  return out;
}

}  // namespace berth::config
