#include "pkg/config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "pkg/config/load.h"
#include "pkg/config/validate.h"

namespace berth::config {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::set<std::string> kKnown = {
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "DefaultBinder",
    "CustomScore",
    "CustomSort",
    "InterPodAffinity",
    "PodTopologySpread",
    "DefaultPreemption",
    "Coscheduling",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "NodeDeclaredFeatures",
    "DynamicResources",
};

constexpr char kHeader[] =
    "apiVersion: kubescheduler.config.k8s.io/v1\n"
    "kind: KubeSchedulerConfiguration\n";

// The issues a failing load reports; fails the test when the load succeeds.
std::vector<ConfigIssue> LoadIssues(const std::string& text) {
  try {
    LoadString(text, "cfg.yaml", kKnown);
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.source(), "cfg.yaml");
    return e.issues();
  }
  ADD_FAILURE() << "loaded without error:\n" << text;
  return {};
}

// The single issue a failing load reports.
ConfigIssue LoadIssue(const std::string& text) {
  std::vector<ConfigIssue> issues = LoadIssues(text);
  EXPECT_EQ(issues.size(), 1u) << ::testing::PrintToString(issues.size());
  if (issues.empty()) {
    return {};
  }
  return issues[0];
}

std::string FileError(const std::string& path) {
  try {
    LoadFile(path, kKnown);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "loaded without error: " << path;
  return "";
}

std::vector<PluginRef> Refs(std::initializer_list<PluginRef> refs) { return refs; }

// ---- Valid files -------------------------------------------------------------------------------

TEST(LoadTest, MinimalFileGetsDefaults) {
  Configuration config = LoadFile("pkg/config/testdata/minimal.yaml", kKnown);
  EXPECT_EQ(config, DefaultConfiguration());
  EXPECT_EQ(config.parallelism, 16);
  EXPECT_EQ(config.percentage_of_nodes_to_score, 0);
  EXPECT_EQ(config.pod_initial_backoff_seconds, 1);
  EXPECT_EQ(config.pod_max_backoff_seconds, 10);
  EXPECT_EQ(config.client_connection.qps, 50);
  EXPECT_EQ(config.client_connection.burst, 100);
  EXPECT_EQ(config.client_connection.content_type, "application/vnd.kubernetes.protobuf");
  EXPECT_TRUE(config.leader_election.leader_elect);
  EXPECT_EQ(config.leader_election.lease_duration, milliseconds(15000));
  EXPECT_EQ(config.leader_election.renew_deadline, milliseconds(10000));
  EXPECT_EQ(config.leader_election.retry_period, milliseconds(2000));
  EXPECT_EQ(config.leader_election.resource_lock, "leases");
  EXPECT_EQ(config.leader_election.resource_name, "berth-scheduler");
  EXPECT_EQ(config.leader_election.resource_namespace, "kube-system");
  ASSERT_EQ(config.profiles.size(), 1u);
  EXPECT_EQ(config.profiles[0].scheduler_name, "berth-scheduler");
  EXPECT_FALSE(config.profiles[0].percentage_of_nodes_to_score.has_value());
  EXPECT_TRUE(config.profiles[0].plugin_config.empty());
  EXPECT_EQ(config.profiles[0].plugins, DefaultPlugins());
}

TEST(DefaultsTest, DefaultPluginsAreUpstreamOrderAndWeights) {
  Plugins plugins = DefaultPlugins();
  EXPECT_EQ(plugins.multi_point.enabled, Refs({{"SchedulingGates", 0},
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
                                               {"DynamicResources", 2},
                                               {"DefaultPreemption", 0},
                                               {"NodeResourcesBalancedAllocation", 1},
                                               {"ImageLocality", 1},
                                               {"DefaultBinder", 0},
                                               {"NodeDeclaredFeatures", 0}}));
  EXPECT_TRUE(plugins.multi_point.disabled.empty());
  for (const ExtensionPoint& point : ExtensionPoints()) {
    if (point.key == "multiPoint") {
      continue;
    }
    EXPECT_EQ(plugins.*point.set, PluginSet{}) << point.key;
  }
}

TEST(LoadTest, KubeSchedulerStyleFileWithTwoProfiles) {
  Configuration config = LoadFile("pkg/config/testdata/two-profiles.yaml", kKnown);
  EXPECT_EQ(config.parallelism, 8);
  EXPECT_EQ(config.percentage_of_nodes_to_score, 30);
  EXPECT_EQ(config.pod_initial_backoff_seconds, 2);
  EXPECT_EQ(config.pod_max_backoff_seconds, 20);
  EXPECT_EQ(config.client_connection.kubeconfig, "/etc/kubernetes/scheduler.conf");
  EXPECT_EQ(config.client_connection.qps, 100);
  EXPECT_EQ(config.client_connection.burst, 200);
  EXPECT_EQ(config.leader_election.resource_name, "berth-lock");
  EXPECT_EQ(config.leader_election.resource_namespace, "berth-system");
  ASSERT_EQ(config.profiles.size(), 2u);

  const Profile& first = config.profiles[0];
  EXPECT_EQ(first.scheduler_name, "berth-scheduler");
  EXPECT_EQ(first.percentage_of_nodes_to_score, 50);
  // NodeResourcesFit keeps its default position with the user's weight; CustomScore is appended.
  EXPECT_EQ(first.plugins.multi_point.enabled, Refs({{"SchedulingGates", 0},
                                                     {"Coscheduling", 0},
                                                     {"NodeName", 0},
                                                     {"NodeUnschedulable", 0},
                                                     {"TaintToleration", 3},
                                                     {"NodeAffinity", 2},
                                                     {"NodePorts", 0},
                                                     {"NodeResourcesFit", 5},
                                                     {"VolumeRestrictions", 0},
                                                     {"NodeVolumeLimits", 0},
                                                     {"VolumeBinding", 0},
                                                     {"VolumeZone", 0},
                                                     {"PodTopologySpread", 2},
                                                     {"InterPodAffinity", 2},
                                                     {"DynamicResources", 2},
                                                     {"DefaultPreemption", 0},
                                                     {"NodeResourcesBalancedAllocation", 1},
                                                     {"ImageLocality", 1},
                                                     {"DefaultBinder", 0},
                                                     {"NodeDeclaredFeatures", 0},
                                                     {"CustomScore", 2}}));
  EXPECT_EQ(first.plugins.score.enabled, Refs({{"NodeResourcesFit", 10}, {"ImageLocality", 0}}));
  EXPECT_EQ(first.plugins.score.disabled, Refs({{"*", 0}}));
  EXPECT_EQ(first.plugins.pre_score.disabled, Refs({{"PodTopologySpread", 0}}));

  ASSERT_EQ(first.plugin_config.size(), 3u);
  EXPECT_EQ(first.plugin_config[0].name, "NodeResourcesFit");
  EXPECT_EQ(first.plugin_config[0].args, nlohmann::json::parse(R"({
    "scoringStrategy": {
      "type": "MostAllocated",
      "resources": [
        {"name": "cpu", "weight": 1},
        {"name": "memory", "weight": 2},
        {"name": "nvidia.com/gpu", "weight": 5}
      ]
    }
  })"));
  const nlohmann::json& fit = first.plugin_config[0].args;
  EXPECT_TRUE(fit["scoringStrategy"]["resources"][1]["weight"].is_number_integer());

  EXPECT_EQ(first.plugin_config[1].name, "NodeAffinity");
  const nlohmann::json& term =
      first.plugin_config[1].args["addedAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                                 ["nodeSelectorTerms"][0]["matchExpressions"][0];
  EXPECT_EQ(term, nlohmann::json::parse(R"({
    "key": "topology.kubernetes.io/zone", "operator": "In", "values": ["1", "us-east-1a"]
  })"));
  // A quoted number stays a string.
  EXPECT_TRUE(term["values"][0].is_string());

  // Plain scalars resolve like kube-scheduler's YAML reader (go-yaml v2) resolves them.
  const nlohmann::json& custom = first.plugin_config[2].args;
  EXPECT_TRUE(custom["ratio"].is_number_float());
  EXPECT_DOUBLE_EQ(custom["ratio"].get<double>(), 0.75);
  EXPECT_EQ(custom["strict"], true);
  EXPECT_EQ(custom["label"], "true");
  EXPECT_EQ(custom["mask"], 16);
  EXPECT_EQ(custom["legacyYes"], true);
  EXPECT_TRUE(custom["nothing"].is_null());
  EXPECT_TRUE(custom["tildeNull"].is_null());
  EXPECT_EQ(custom["version"], "1.20.3");
  EXPECT_TRUE(custom["big"].is_number_unsigned());
  EXPECT_EQ(custom["big"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(custom["block"], "two\nlines\n");

  const Profile& second = config.profiles[1];
  EXPECT_EQ(second.scheduler_name, "berth-batch");
  EXPECT_FALSE(second.percentage_of_nodes_to_score.has_value());
  EXPECT_EQ(
      second.plugins.multi_point.enabled,
      Refs({{"PrioritySort", 0}, {"NodeName", 0}, {"NodeResourcesFit", 3}, {"DefaultBinder", 0}}));
  EXPECT_EQ(second.plugins.multi_point.disabled, Refs({{"*", 0}}));
}

TEST(LoadTest, JsonFile) {
  Configuration config = LoadFile("pkg/config/testdata/config.json", kKnown);
  EXPECT_EQ(config.parallelism, 4);
  EXPECT_FALSE(config.leader_election.leader_elect);
  ASSERT_EQ(config.profiles.size(), 1u);
  EXPECT_EQ(config.profiles[0].scheduler_name, "json-scheduler");
  EXPECT_EQ(config.profiles[0].plugins.score.enabled, Refs({{"ImageLocality", 4}}));
  EXPECT_EQ(config.profiles[0].plugins.multi_point, DefaultPlugins().multi_point);
  ASSERT_EQ(config.profiles[0].plugin_config.size(), 1u);
  const nlohmann::json& args = config.profiles[0].plugin_config[0].args;
  EXPECT_EQ(args, nlohmann::json::parse(R"({
    "scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 1}]},
    "ignoredResources": ["example.com/foo"], "fraction": 0.5, "flag": false, "none": null
  })"));
  EXPECT_TRUE(args["scoringStrategy"]["resources"][0]["weight"].is_number_integer());
  EXPECT_TRUE(args["flag"].is_boolean());
}

TEST(LoadTest, LeaderElectionDurations) {
  Configuration config = LoadFile("pkg/config/testdata/leader-election.yaml", kKnown);
  EXPECT_TRUE(config.leader_election.leader_elect);
  EXPECT_EQ(config.leader_election.lease_duration, milliseconds(90'000));
  EXPECT_EQ(config.leader_election.renew_deadline, milliseconds(45'500));
  EXPECT_EQ(config.leader_election.retry_period, milliseconds(500));
  EXPECT_EQ(config.leader_election.resource_name, "berth-lock");
  EXPECT_EQ(config.leader_election.resource_namespace, "berth-system");
}

TEST(LoadTest, ZeroAndEmptyValuesMeanUpstreamDefaults) {
  Configuration config = LoadString(std::string(kHeader) +
                                        "clientConnection: {qps: 0, burst: 0, contentType: ''}\n"
                                        "leaderElection:\n"
                                        "  leaseDuration: 0s\n"
                                        "  resourceLock: ''\n"
                                        "  resourceName: ''\n",
                                    "cfg.yaml", kKnown);
  EXPECT_EQ(config.client_connection, ClientConnection{});
  EXPECT_EQ(config.leader_election, LeaderElection{});
}

TEST(LoadTest, ContentTypeNamesTheReadEncoding) {
  for (const char* type : {"application/json", "application/vnd.kubernetes.protobuf"}) {
    Configuration config =
        LoadString(std::string(kHeader) + "clientConnection: {contentType: " + type + "}\n",
                   "cfg.yaml", kKnown);
    EXPECT_EQ(config.client_connection.content_type, type);
  }
}

TEST(LoadTest, MergeSemantics) {
  Configuration config = LoadFile("pkg/config/testdata/merge.yaml", kKnown);
  ASSERT_EQ(config.profiles.size(), 1u);
  // A profile without schedulerName gets Berth's name.
  EXPECT_EQ(config.profiles[0].scheduler_name, "berth-scheduler");
  const PluginSet& mp = config.profiles[0].plugins.multi_point;
  EXPECT_EQ(mp.enabled, Refs({{"SchedulingGates", 0},
                              {"Coscheduling", 0},
                              {"NodeName", 0},
                              {"NodeUnschedulable", 0},
                              {"TaintToleration", 7},
                              {"NodeAffinity", 2},
                              {"NodeResourcesFit", 1},
                              {"VolumeRestrictions", 0},
                              {"NodeVolumeLimits", 0},
                              {"VolumeBinding", 0},
                              {"VolumeZone", 0},
                              {"PodTopologySpread", 2},
                              {"InterPodAffinity", 2},
                              {"DynamicResources", 2},
                              {"DefaultPreemption", 0},
                              {"NodeResourcesBalancedAllocation", 1},
                              {"ImageLocality", 1},
                              {"DefaultBinder", 0},
                              {"NodeDeclaredFeatures", 0},
                              {"CustomScore", 0}}));
  EXPECT_EQ(mp.disabled, Refs({{"NodePorts", 0}}));
}

TEST(MergeTest, MergePluginSetFollowsUpstream) {
  PluginSet defaults{{{"A", 1}, {"B", 2}, {"C", 3}}, {{"Z", 0}}};

  // A default both disabled and enabled again moves to the end, as upstream does.
  PluginSet merged = MergePluginSet(defaults, {{{"B", 0}, {"X", 4}}, {{"B", 9}}});
  EXPECT_EQ(merged.enabled, Refs({{"A", 1}, {"C", 3}, {"B", 0}, {"X", 4}}));
  EXPECT_EQ(merged.disabled, Refs({{"B", 0}, {"Z", 0}}));

  // Re-enabling without a weight drops the default weight (upstream replaces the whole entry).
  merged = MergePluginSet(defaults, {{{"C", 0}}, {}});
  EXPECT_EQ(merged.enabled, Refs({{"A", 1}, {"B", 2}, {"C", 0}}));

  // "*" removes every default; the user's list is kept as written.
  merged = MergePluginSet(defaults, {{{"C", 5}, {"A", 0}}, {{"*", 0}}});
  EXPECT_EQ(merged.enabled, Refs({{"C", 5}, {"A", 0}}));

  // A default listed twice: the last entry replaces it in place, the first is appended.
  merged = MergePluginSet(defaults, {{{"A", 7}, {"A", 8}}, {}});
  EXPECT_EQ(merged.enabled, Refs({{"A", 8}, {"B", 2}, {"C", 3}, {"A", 7}}));

  EXPECT_EQ(MergePluginSet(defaults, {}).enabled, defaults.enabled);
}

TEST(LoadTest, ToJsonRoundTrips) {
  Configuration config = LoadFile("pkg/config/testdata/two-profiles.yaml", kKnown);
  nlohmann::json json = ToJson(config);
  EXPECT_EQ(json["apiVersion"], "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(json["kind"], "KubeSchedulerConfiguration");
  EXPECT_EQ(json["leaderElection"]["leaseDuration"], "15s");
  EXPECT_EQ(json["clientConnection"]["kubeconfig"], "/etc/kubernetes/scheduler.conf");
  EXPECT_EQ(json["profiles"][0]["percentageOfNodesToScore"], 50);
  EXPECT_FALSE(json["profiles"][1].contains("percentageOfNodesToScore"));
  EXPECT_EQ(json["profiles"][0]["plugins"]["score"]["enabled"][0],
            nlohmann::json::parse(R"({"name": "NodeResourcesFit", "weight": 10})"));
  EXPECT_EQ(json["profiles"][0]["plugins"]["score"]["enabled"][1],
            nlohmann::json::parse(R"({"name": "ImageLocality"})"));
  EXPECT_EQ(json["profiles"][0]["plugins"]["bind"], nlohmann::json::object());
  EXPECT_EQ(json["profiles"][0]["pluginConfig"][0]["args"],
            config.profiles[0].plugin_config[0].args);

  // Merging is idempotent, so the /configz output loads back to the same configuration.
  EXPECT_EQ(LoadString(json.dump(), "configz", kKnown), config);
  EXPECT_EQ(LoadString(ToJson(DefaultConfiguration()).dump(), "configz", kKnown),
            DefaultConfiguration());
}

TEST(LoadTest, IgnoredUpstreamFieldsAreTypeChecked) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) + "enableProfiling: sometimes\n");
  EXPECT_EQ(issue.field, "enableProfiling");
  EXPECT_EQ(issue.problem, "expected a boolean, got string \"sometimes\"");
}

// ---- Errors ------------------------------------------------------------------------------------

TEST(ErrorTest, WrongApiVersion) {
  EXPECT_EQ(FileError("pkg/config/testdata/wrong-api-version.yaml"),
            "pkg/config/testdata/wrong-api-version.yaml: apiVersion: expected "
            "\"kubescheduler.config.k8s.io/v1\", got string "
            "\"kubescheduler.config.k8s.io/v1beta3\"");
  ConfigIssue issue = LoadIssue("kind: KubeSchedulerConfiguration\nparallelism: 2\n");
  EXPECT_EQ(issue.field, "apiVersion");
  EXPECT_EQ(issue.problem, "required; expected \"kubescheduler.config.k8s.io/v1\"");
}

TEST(ErrorTest, WrongKind) {
  ConfigIssue issue =
      LoadIssue("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeProxyConfiguration\n");
  EXPECT_EQ(issue.field, "kind");
  EXPECT_EQ(issue.problem,
            "expected \"KubeSchedulerConfiguration\", got string \"KubeProxyConfiguration\"");
}

TEST(ErrorTest, UnknownKeys) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) + "healthzBindAddress: 0.0.0.0:10251\n");
  EXPECT_EQ(issue.field, "healthzBindAddress");
  EXPECT_EQ(issue.problem,
            "unknown field; allowed fields: apiVersion, clientConnection, delayCacheUntilActive, "
            "enableContentionProfiling, enableProfiling, extenders, kind, leaderElection, "
            "parallelism, percentageOfNodesToScore, percentageOfPlacementsToScore, "
            "podInitialBackoffSeconds, podMaxBackoffSeconds, profiles");

  issue = LoadIssue(std::string(kHeader) +
                    "profiles:\n- plugins:\n    scor:\n      enabled: [{name: ImageLocality}]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.scor");
  EXPECT_THAT(issue.problem, HasSubstr("allowed fields: bind, filter, multiPoint, "));

  issue = LoadIssue(std::string(kHeader) + "leaderElection: {leaseDurationn: 15s}\n");
  EXPECT_EQ(issue.field, "leaderElection.leaseDurationn");

  issue = LoadIssue(std::string(kHeader) +
                    "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    arg: {}\n");
  EXPECT_EQ(issue.field, "profiles[0].pluginConfig[0].arg");
  EXPECT_EQ(issue.problem, "unknown field; allowed fields: args, name");
}

TEST(ErrorTest, DuplicateKeys) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) + "parallelism: 2\nparallelism: 3\n");
  EXPECT_EQ(issue.field, "parallelism");
  EXPECT_EQ(issue.problem, "duplicate key");

  issue = LoadIssue(std::string(kHeader) +
                    "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args: {a: 1, a: 2}\n");
  EXPECT_EQ(issue.field, "profiles[0].pluginConfig[0].args.a");
}

TEST(ErrorTest, WrongTypes) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) + "parallelism: \"16\"\n");
  EXPECT_EQ(issue.field, "parallelism");
  EXPECT_EQ(issue.problem, "expected an integer, got string \"16\"");

  issue = LoadIssue(std::string(kHeader) + "parallelism: 1.5\n");
  EXPECT_EQ(issue.field, "parallelism");
  EXPECT_EQ(issue.problem, "expected an integer, got number 1.5");

  issue = LoadIssue(std::string(kHeader) + "parallelism: 4294967296\n");
  EXPECT_EQ(issue.field, "parallelism");
  EXPECT_EQ(issue.problem, "integer 4294967296 is out of range [-2147483648, 2147483647]");

  issue = LoadIssue(std::string(kHeader) + "profiles: {schedulerName: x}\n");
  EXPECT_EQ(issue.field, "profiles");
  EXPECT_EQ(issue.problem, "expected a list, got a mapping");

  issue = LoadIssue(std::string(kHeader) +
                    "profiles:\n- plugins:\n    filter:\n      enabled: [NodeName]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.filter.enabled[0]");
  EXPECT_EQ(issue.problem, "expected a mapping, got string \"NodeName\"");

  issue = LoadIssue(std::string(kHeader) + "clientConnection: {qps: fast}\n");
  EXPECT_EQ(issue.field, "clientConnection.qps");
  EXPECT_EQ(issue.problem, "expected a number, got string \"fast\"");

  issue = LoadIssue("- a\n- b\n");
  EXPECT_EQ(issue.field, "");
  EXPECT_EQ(issue.problem, "expected a KubeSchedulerConfiguration mapping, got a list");
}

TEST(ErrorTest, BadDurations) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) + "leaderElection: {renewDeadline: 10x}\n");
  EXPECT_EQ(issue.field, "leaderElection.renewDeadline");
  EXPECT_EQ(issue.problem,
            "invalid duration \"10x\"; expected a Go duration such as \"15s\", \"1m30s\" or "
            "\"500ms\"");

  issue = LoadIssue(std::string(kHeader) + "leaderElection: {retryPeriod: 2}\n");
  EXPECT_EQ(issue.field, "leaderElection.retryPeriod");
  EXPECT_EQ(issue.problem, "expected a duration string such as \"15s\", got integer 2");

  issue = LoadIssue(std::string(kHeader) + "leaderElection: {retryPeriod: 1500us}\n");
  EXPECT_EQ(issue.field, "leaderElection.retryPeriod");
  EXPECT_THAT(issue.problem, HasSubstr("not a whole number of milliseconds"));
}

TEST(ErrorTest, LeaderElectionRules) {
  ConfigIssue issue =
      LoadIssue(std::string(kHeader) +
                "leaderElection: {leaderElect: true, leaseDuration: 10s, renewDeadline: 10s}\n");
  EXPECT_EQ(issue.field, "leaderElection.leaseDuration");
  EXPECT_EQ(issue.problem, "must be greater than renewDeadline (10s), got 10s");

  issue =
      LoadIssue(std::string(kHeader) + "leaderElection: {leaderElect: true, retryPeriod: -1s}\n");
  EXPECT_EQ(issue.field, "leaderElection.retryPeriod");
  EXPECT_EQ(issue.problem, "must be greater than zero");

  issue = LoadIssue(std::string(kHeader) +
                    "leaderElection: {leaderElect: true, resourceLock: endpointsleases}\n");
  EXPECT_EQ(issue.field, "leaderElection.resourceLock");

  // Upstream checks these only when leader election is on.
  Configuration config = LoadString(
      std::string(kHeader) + "leaderElection: {leaderElect: false, resourceLock: endpoints}\n",
      "cfg.yaml", kKnown);
  EXPECT_FALSE(config.leader_election.leader_elect);
}

TEST(ErrorTest, UnknownPluginListsKnownPlugins) {
  EXPECT_EQ(FileError("pkg/config/testdata/unknown-plugin.yaml"),
            "pkg/config/testdata/unknown-plugin.yaml: profiles[0].plugins.score.enabled[2].name: "
            "unknown plugin \"Foo\"; known plugins: Coscheduling, CustomScore, CustomSort, "
            "DefaultBinder, DefaultPreemption, DynamicResources, GangScheduling, ImageLocality, "
            "InterPodAffinity, NodeAffinity, NodeDeclaredFeatures, NodeName, NodePorts, "
            "NodeResourcesBalancedAllocation, NodeResourcesFit, NodeUnschedulable, "
            "NodeVolumeLimits, PodGroupPodsCount, PodTopologySpread, PrioritySort, "
            "SchedulingGates, TaintToleration, TopologyPlacementGenerator, VolumeBinding, "
            "VolumeRestrictions, VolumeZone");

  ConfigIssue issue =
      LoadIssue(std::string(kHeader) + "profiles:\n- pluginConfig:\n  - name: GangSchedulin\n");
  EXPECT_EQ(issue.field, "profiles[0].pluginConfig[0].name");
  EXPECT_THAT(issue.problem, HasSubstr("unknown plugin \"GangSchedulin\"; known plugins: "));

  // Disabling a plugin Berth does not have is fine.
  LoadString(std::string(kHeader) +
                 "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: Elsewhere}]\n",
             "cfg.yaml", kKnown);
}

// ---- kube-scheduler's gang plugins -------------------------------------------------------------

// The args of the profile's Coscheduling pluginConfig entry; null when it has none.
nlohmann::json CoschedulingArgs(const Profile& profile) {
  for (const PluginConfig& pc : profile.plugin_config) {
    if (pc.name == "Coscheduling") return pc.args;
  }
  return nullptr;
}

// The first profile of a file with `plugins` as its plugins (indented under "  plugins:\n").
Profile LoadProfile(const std::string& plugins, const std::string& rest = "") {
  return LoadString(std::string(kHeader) + "profiles:\n- plugins:\n" + plugins + rest, "cfg.yaml",
                    kKnown)
      .profiles.at(0);
}

bool Names(const std::vector<PluginRef>& refs, const std::string& name) {
  return std::any_of(refs.begin(), refs.end(), [&](const PluginRef& r) { return r.name == name; });
}

TEST(GangPluginsTest, GangSchedulingIsCoscheduling) {
  // In multiPoint it is Coscheduling in its default place: the profile is Berth's default.
  Profile profile = LoadProfile("    multiPoint:\n      enabled: [{name: GangScheduling}]\n");
  EXPECT_EQ(profile.plugins, DefaultPlugins());
  EXPECT_TRUE(profile.plugin_config.empty());

  // At permit it is Coscheduling at permit; at preEnqueue or placementFeasible (points Berth's
  // Coscheduling does not split out) it enables Coscheduling, even where multiPoint disabled it.
  profile = LoadProfile("    permit:\n      enabled: [{name: GangScheduling}]\n");
  EXPECT_EQ(profile.plugins.permit.enabled, Refs({{"Coscheduling", 0}}));
  EXPECT_EQ(profile.plugins.multi_point, DefaultPlugins().multi_point);
  profile = LoadProfile(
      "    multiPoint:\n      disabled: [{name: GangScheduling}]\n"
      "    preEnqueue:\n      enabled: [{name: GangScheduling}]\n");
  EXPECT_EQ(profile.plugins, DefaultPlugins());
  profile = LoadProfile("    placementFeasible:\n      enabled: [{name: GangScheduling}]\n");
  EXPECT_EQ(profile.plugins, DefaultPlugins());

  // Disabled in multiPoint it disables Coscheduling, and the queue is sorted by PrioritySort, as
  // kube-scheduler's is with its gang plugin off.
  profile = LoadProfile("    multiPoint:\n      disabled: [{name: GangScheduling}]\n");
  EXPECT_FALSE(Names(profile.plugins.multi_point.enabled, "Coscheduling"));
  EXPECT_EQ(profile.plugins.multi_point.enabled.back(), (PluginRef{"PrioritySort", 0}));
  EXPECT_EQ(profile.plugins.multi_point.disabled, Refs({{"Coscheduling", 0}}));
  // A queue order of the file's own is kept.
  profile = LoadProfile(
      "    multiPoint:\n      disabled: [{name: GangScheduling}]\n"
      "    queueSort:\n      enabled: [{name: CustomSort}]\n");
  EXPECT_FALSE(Names(profile.plugins.multi_point.enabled, "PrioritySort"));
  // Disabled at permit, Coscheduling does not run at permit; at preEnqueue (where Coscheduling
  // never runs) nothing changes.
  profile = LoadProfile("    permit:\n      disabled: [{name: GangScheduling}]\n");
  EXPECT_EQ(profile.plugins.permit.disabled, Refs({{"Coscheduling", 0}}));
  profile = LoadProfile("    preEnqueue:\n      disabled: [{name: GangScheduling}]\n");
  EXPECT_EQ(profile.plugins, DefaultPlugins());

  // Its pluginConfig entry may be empty, as kube-scheduler's plugin takes no args; it is dropped.
  profile = LoadProfile("    multiPoint:\n      enabled: [{name: GangScheduling}]\n",
                        "  pluginConfig:\n  - name: GangScheduling\n    args: {}\n"
                        "  - name: PodGroupPodsCount\n");
  EXPECT_TRUE(profile.plugin_config.empty());
}

TEST(GangPluginsTest, GangSchedulingRefusals) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) +
                                "profiles:\n- plugins:\n    filter:\n"
                                "      enabled: [{name: NodeName}, {name: GangScheduling}]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.filter.enabled[1].name");
  EXPECT_EQ(issue.problem,
            "GangScheduling (Coscheduling in berth-scheduler) runs at preEnqueue, permit and "
            "placementFeasible; enable it there or in multiPoint, not at filter");

  issue = LoadIssue(std::string(kHeader) +
                    "profiles:\n- pluginConfig:\n  - name: NodeName\n"
                    "  - name: GangScheduling\n    args: {permitWaitingTimeSeconds: 30}\n");
  EXPECT_EQ(issue.field, "profiles[0].pluginConfig[1].args");
  EXPECT_EQ(issue.problem,
            "kube-scheduler's GangScheduling takes no args; in berth-scheduler gangs are "
            "configured by Coscheduling's args (permitWaitingTimeSeconds, podGroupBackoffSeconds, "
            "topologyPlacement, podGroupPodsCountWeight, placementResourcesWeight, "
            "percentageOfPlacementsToScore)");

  issue = LoadIssue(std::string(kHeader) +
                    "profiles:\n- plugins:\n    score:\n"
                    "      enabled: [{name: PodGroupPodsCount}]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.score.enabled[0].name");
  EXPECT_EQ(issue.problem,
            "PodGroupPodsCount can be enabled only in multiPoint or placementScore, not at score");
  issue = LoadIssue(std::string(kHeader) +
                    "profiles:\n- plugins:\n    postFilter:\n"
                    "      enabled: [{name: TopologyPlacementGenerator}]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.postFilter.enabled[0].name");
  EXPECT_EQ(issue.problem,
            "TopologyPlacementGenerator can be enabled only in multiPoint or placementGenerate, "
            "not at postFilter");
}

TEST(GangPluginsTest, TopologyPlacementGeneratorSetsTopologyPlacement) {
  EXPECT_EQ(CoschedulingArgs(LoadProfile(
                "    multiPoint:\n      disabled: [{name: TopologyPlacementGenerator}]\n")),
            nlohmann::json::parse(R"({"topologyPlacement": false})"));
  EXPECT_EQ(CoschedulingArgs(LoadProfile(
                "    multiPoint:\n      enabled: [{name: TopologyPlacementGenerator}]\n")),
            nlohmann::json::parse(R"({"topologyPlacement": true})"));
  // The point's own list first, as kube-scheduler reads it.
  EXPECT_EQ(CoschedulingArgs(LoadProfile(
                "    multiPoint:\n      disabled: [{name: TopologyPlacementGenerator}]\n"
                "    placementGenerate:\n      enabled: [{name: TopologyPlacementGenerator}]\n")),
            nlohmann::json::parse(R"({"topologyPlacement": true})"));
  EXPECT_EQ(CoschedulingArgs(LoadProfile(
                "    placementGenerate:\n      disabled: [{name: TopologyPlacementGenerator}]\n")),
            nlohmann::json::parse(R"({"topologyPlacement": false})"));
  // "*" names none of them: Berth's defaults stay.
  EXPECT_EQ(
      CoschedulingArgs(LoadProfile("    placementGenerate:\n      disabled: [{name: '*'}]\n")),
      nullptr);

  ConfigIssue issue = LoadIssue(std::string(kHeader) +
                                "profiles:\n- plugins:\n    placementGenerate:\n"
                                "      enabled: [{name: CustomScore}]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.placementGenerate.enabled[0].name");
  EXPECT_EQ(issue.problem,
            "only TopologyPlacementGenerator can be enabled there in berth-scheduler (it turns on "
            "Coscheduling's topologyPlacement); got \"CustomScore\"");
}

TEST(GangPluginsTest, PlacementScoreWeightsSetCoschedulingWeights) {
  EXPECT_EQ(CoschedulingArgs(LoadProfile(
                "    multiPoint:\n      enabled: [{name: PodGroupPodsCount, weight: 3}]\n")),
            nlohmann::json::parse(R"({"podGroupPodsCountWeight": 3})"));
  // placementScore's weight wins over multiPoint's; an unset weight is upstream's 1.
  EXPECT_EQ(CoschedulingArgs(LoadProfile(
                "    multiPoint:\n      enabled: [{name: PodGroupPodsCount, weight: 3}]\n"
                "    placementScore:\n      enabled: [{name: PodGroupPodsCount}]\n")),
            nlohmann::json::parse(R"({"podGroupPodsCountWeight": 1})"));
  EXPECT_EQ(CoschedulingArgs(
                LoadProfile("    placementScore:\n      disabled: [{name: PodGroupPodsCount}]\n")),
            nlohmann::json::parse(R"({"podGroupPodsCountWeight": 0})"));
  EXPECT_EQ(CoschedulingArgs(LoadProfile(
                "    placementScore:\n      enabled: [{name: NodeResourcesFit, weight: 4}]\n")),
            nlohmann::json::parse(R"({"placementResourcesWeight": 4})"));
  EXPECT_EQ(CoschedulingArgs(
                LoadProfile("    placementScore:\n      disabled: [{name: NodeResourcesFit}]\n")),
            nlohmann::json::parse(R"({"placementResourcesWeight": 0})"));
  // NodeResourcesFit's multiPoint weight is its node score's; it does not change placement.
  EXPECT_EQ(CoschedulingArgs(LoadProfile(
                "    multiPoint:\n      enabled: [{name: NodeResourcesFit, weight: 7}]\n")),
            nullptr);

  std::vector<ConfigIssue> issues = LoadIssues(
      std::string(kHeader) +
      "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: PodGroupPodsCount, weight: "
      "101}]\n    placementScore:\n      enabled: [{name: NodeResourcesFit, weight: 200}, {name: "
      "CustomScore}]\n");
  EXPECT_THAT(
      issues,
      ElementsAre(
          ConfigIssue{"profiles[0].plugins.placementScore.enabled[1].name",
                      "only PodGroupPodsCount and NodeResourcesFit can be enabled there in "
                      "berth-scheduler (their weights become Coscheduling's "
                      "podGroupPodsCountWeight and placementResourcesWeight); got \"CustomScore\""},
          ConfigIssue{"profiles[0].plugins.multiPoint.enabled[0].weight",
                      "PodGroupPodsCount's placement weight becomes Coscheduling's "
                      "podGroupPodsCountWeight in berth-scheduler, which must be in the range [0, "
                      "100], got 101"},
          ConfigIssue{"profiles[0].plugins.placementScore.enabled[0].weight",
                      "NodeResourcesFit's placement weight becomes Coscheduling's "
                      "placementResourcesWeight in berth-scheduler, which must be in the range "
                      "[0, 100], got 200"}));

  // podGroupPostFilter still runs nothing in Berth.
  ConfigIssue issue = LoadIssue(std::string(kHeader) +
                                "profiles:\n- plugins:\n    podGroupPostFilter:\n"
                                "      enabled: [{name: DefaultPreemption}]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.podGroupPostFilter.enabled[0].name");
}

TEST(GangPluginsTest, PercentageOfPlacementsToScore) {
  Configuration config = LoadString(std::string(kHeader) +
                                        "percentageOfPlacementsToScore: 20\n"
                                        "profiles:\n- {}\n- schedulerName: b\n"
                                        "  percentageOfPlacementsToScore: 35\n",
                                    "cfg.yaml", kKnown);
  EXPECT_EQ(CoschedulingArgs(config.profiles[0]),
            nlohmann::json::parse(R"({"percentageOfPlacementsToScore": 20})"));
  EXPECT_EQ(CoschedulingArgs(config.profiles[1]),
            nlohmann::json::parse(R"({"percentageOfPlacementsToScore": 35})"));
  // Without profiles the default one takes the global value; 0 is the default.
  config =
      LoadString(std::string(kHeader) + "percentageOfPlacementsToScore: 100\n", "cfg.yaml", kKnown);
  EXPECT_EQ(CoschedulingArgs(config.profiles[0]),
            nlohmann::json::parse(R"({"percentageOfPlacementsToScore": 100})"));
  config =
      LoadString(std::string(kHeader) + "percentageOfPlacementsToScore: 0\n", "cfg.yaml", kKnown);
  EXPECT_EQ(config, DefaultConfiguration());

  std::vector<ConfigIssue> issues = LoadIssues(std::string(kHeader) +
                                               "percentageOfPlacementsToScore: 101\n"
                                               "profiles:\n- percentageOfPlacementsToScore: -1\n");
  EXPECT_THAT(issues, ElementsAre(ConfigIssue{"percentageOfPlacementsToScore",
                                              "must be in the range [0, 100] (0 means "
                                              "berth-scheduler's default), got 101"},
                                  ConfigIssue{"profiles[0].percentageOfPlacementsToScore",
                                              "must be in the range [0, 100] (0 means "
                                              "berth-scheduler's default), got -1"}));
}

TEST(GangPluginsTest, ExplicitCoschedulingArgsWin) {
  Profile profile =
      LoadProfile("    multiPoint:\n      enabled: [{name: PodGroupPodsCount, weight: 2}]\n",
                  "  percentageOfPlacementsToScore: 50\n"
                  "  pluginConfig:\n  - name: Coscheduling\n"
                  "    args: {podGroupPodsCountWeight: 7, permitWaitingTimeSeconds: 30}\n");
  EXPECT_EQ(CoschedulingArgs(profile), nlohmann::json::parse(R"({
    "podGroupPodsCountWeight": 7, "permitWaitingTimeSeconds": 30,
    "percentageOfPlacementsToScore": 50})"));
}

TEST(GangPluginsTest, UpstreamTopologyAwareConfigLoads) {
  Configuration config = LoadFile("pkg/config/testdata/upstream-v1.37-tas.yaml", kKnown);
  ASSERT_EQ(config.profiles.size(), 2u);
  EXPECT_EQ(config.profiles[0].plugins, DefaultPlugins());
  EXPECT_EQ(CoschedulingArgs(config.profiles[0]), nlohmann::json::parse(R"({
    "topologyPlacement": true, "podGroupPodsCountWeight": 2, "placementResourcesWeight": 3,
    "percentageOfPlacementsToScore": 40})"));
  EXPECT_EQ(config.profiles[1].plugins, DefaultPlugins());
  EXPECT_EQ(CoschedulingArgs(config.profiles[1]),
            nlohmann::json::parse(R"({"topologyPlacement": false, "podGroupPodsCountWeight": 0})"));

  // /configz names only Berth's plugins, shows the args they became, and loads back although
  // the profiles' Coscheduling args differ (only in the per-profile placement args).
  const nlohmann::json json = ToJson(config);
  const std::string text = json.dump();
  for (const char* upstream :
       {"GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount\""}) {
    EXPECT_EQ(text.find(upstream), std::string::npos) << upstream << " in " << text;
  }
  EXPECT_EQ(LoadString(text, "configz", kKnown), config);

  // Where the queue order's args must agree across profiles (queueSort named), Coscheduling's
  // placement args may still differ; the rest may not.
  const std::string two_profiles =
      std::string(kHeader) +
      "profiles:\n"
      "- plugins: {queueSort: {enabled: [{name: Coscheduling}]}}\n"
      "  pluginConfig:\n  - name: Coscheduling\n"
      "    args: {podGroupBackoffSeconds: 2, topologyPlacement: false}\n"
      "- schedulerName: b\n"
      "  plugins: {queueSort: {enabled: [{name: Coscheduling}]}}\n"
      "  pluginConfig:\n  - name: Coscheduling\n"
      "    args: {podGroupBackoffSeconds: ";
  config = LoadString(two_profiles + "2, podGroupPodsCountWeight: 5}\n", "cfg.yaml", kKnown);
  EXPECT_EQ(CoschedulingArgs(config.profiles[1])["podGroupPodsCountWeight"], 5);
  ConfigIssue issue = LoadIssue(two_profiles + "3, podGroupPodsCountWeight: 5}\n");
  EXPECT_EQ(issue.field, "profiles[1].pluginConfig[0].args");
  EXPECT_EQ(issue.problem,
            "args of queue sort plugin \"Coscheduling\" must be the same for all profiles");
}

TEST(ErrorTest, DuplicateSchedulerName) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) +
                                "profiles:\n- schedulerName: a\n- schedulerName: b\n"
                                "- schedulerName: a\n");
  EXPECT_EQ(issue.field, "profiles[2].schedulerName");
  EXPECT_EQ(issue.problem, "duplicate \"a\"; already used by profiles[0]");

  // Both default to berth-scheduler.
  issue = LoadIssue(std::string(kHeader) + "profiles:\n- percentageOfNodesToScore: 10\n- {}\n");
  EXPECT_EQ(issue.field, "profiles[1].schedulerName");
}

TEST(ErrorTest, EmptySchedulerName) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) + "profiles:\n- schedulerName: ''\n");
  EXPECT_EQ(issue.field, "profiles[0].schedulerName");
  EXPECT_EQ(issue.problem, "required");
}

TEST(ErrorTest, DifferentQueueSortAcrossProfiles) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) +
                                "profiles:\n"
                                "- schedulerName: a\n"
                                "- schedulerName: b\n"
                                "  plugins:\n"
                                "    queueSort:\n"
                                "      enabled: [{name: CustomSort}]\n"
                                "      disabled: [{name: '*'}]\n");
  EXPECT_EQ(issue.field, "profiles[1].plugins.queueSort");
  EXPECT_EQ(issue.problem, "must be the same for all profiles (differs from profiles[0])");

  // Same queue sort plugin, different args.
  issue = LoadIssue(std::string(kHeader) +
                    "profiles:\n"
                    "- schedulerName: a\n"
                    "  plugins: {queueSort: {enabled: [{name: CustomSort}]}}\n"
                    "  pluginConfig: [{name: CustomSort, args: {order: asc}}]\n"
                    "- schedulerName: b\n"
                    "  plugins: {queueSort: {enabled: [{name: CustomSort}]}}\n"
                    "  pluginConfig: [{name: CustomSort, args: {order: desc}}]\n");
  EXPECT_EQ(issue.field, "profiles[1].pluginConfig[0].args");
}

TEST(ErrorTest, PercentageOutOfRange) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) + "percentageOfNodesToScore: 101\n");
  EXPECT_EQ(issue.field, "percentageOfNodesToScore");
  EXPECT_EQ(issue.problem, "must be in the range [0, 100], got 101");

  issue = LoadIssue(std::string(kHeader) + "profiles:\n- percentageOfNodesToScore: -1\n");
  EXPECT_EQ(issue.field, "profiles[0].percentageOfNodesToScore");
}

TEST(ExtenderConfigTest, EveryFieldOfTheV1EntryIsRead) {
  // "-----BEGIN CERTIFICATE-----\n" and "key" in base64, as Go writes []byte.
  const Configuration config = LoadString(std::string(kHeader) + R"(extenders:
- urlPrefix: https://gpu.example:8443/scheduler
  filterVerb: filter
  preemptVerb: preempt
  prioritizeVerb: prioritize
  weight: 3
  bindVerb: bind
  enableHTTPS: true
  tlsConfig:
    insecure: false
    serverName: gpu.internal
    certFile: /etc/ext/tls.crt
    keyFile: /etc/ext/tls.key
    caFile: /etc/ext/ca.crt
    caData: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
    keyData: a2V5
  httpTimeout: 2s
  nodeCacheCapable: true
  managedResources:
  - name: example.com/gpu
    ignoredByScheduler: true
  - name: example.com/vgpu
  ignorable: true
- urlPrefix: http://127.0.0.1:8888
)",
                                          "cfg.yaml", kKnown);
  ASSERT_EQ(config.extenders.size(), 2u);
  const Extender& e = config.extenders[0];
  EXPECT_EQ(e.url_prefix, "https://gpu.example:8443/scheduler");
  EXPECT_EQ(e.filter_verb, "filter");
  EXPECT_EQ(e.preempt_verb, "preempt");
  EXPECT_EQ(e.prioritize_verb, "prioritize");
  EXPECT_EQ(e.bind_verb, "bind");
  EXPECT_EQ(e.weight, 3);
  EXPECT_TRUE(e.enable_https);
  ASSERT_TRUE(e.tls_config.has_value());
  EXPECT_EQ(e.tls_config->server_name, "gpu.internal");
  EXPECT_EQ(e.tls_config->cert_file, "/etc/ext/tls.crt");
  EXPECT_EQ(e.tls_config->key_file, "/etc/ext/tls.key");
  EXPECT_EQ(e.tls_config->ca_file, "/etc/ext/ca.crt");
  EXPECT_EQ(e.tls_config->ca_data, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(e.tls_config->key_data, "key");
  EXPECT_EQ(e.http_timeout, std::chrono::seconds(2));
  EXPECT_TRUE(e.node_cache_capable);
  ASSERT_EQ(e.managed_resources.size(), 2u);
  EXPECT_EQ(e.managed_resources[0].name, "example.com/gpu");
  EXPECT_TRUE(e.managed_resources[0].ignored_by_scheduler);
  EXPECT_FALSE(e.managed_resources[1].ignored_by_scheduler);
  EXPECT_TRUE(e.ignorable);
  // Upstream's defaults for the second.
  EXPECT_EQ(config.extenders[1].http_timeout, std::chrono::seconds(5));
  EXPECT_FALSE(config.extenders[1].tls_config.has_value());

  // The ignored resource is NodeResourcesFit's to ignore in every profile, as upstream.
  const auto& plugin_config = config.profiles[0].plugin_config;
  auto fit = std::find_if(plugin_config.begin(), plugin_config.end(),
                          [](const PluginConfig& pc) { return pc.name == "NodeResourcesFit"; });
  ASSERT_NE(fit, plugin_config.end());
  EXPECT_EQ(fit->args["ignoredResources"], nlohmann::json::array({"example.com/gpu"}));

  // /configz shows it all but the key's bytes, and loads back.
  const nlohmann::json json = ToJson(config);
  EXPECT_FALSE(json["extenders"][0]["tlsConfig"].contains("keyData")) << json.dump();
  EXPECT_EQ(json["extenders"][0]["tlsConfig"]["caData"],
            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==");
  const Configuration again = LoadString(json.dump(), "configz", kKnown);
  EXPECT_EQ(again.extenders[1], config.extenders[1]);
  EXPECT_EQ(again.extenders[0].tls_config->key_data, "");
}

TEST(ExtenderConfigTest, ProblemsAreNamedByField) {
  auto issues = [](const std::string& extenders) {
    try {
      LoadString(std::string(kHeader) + "extenders:\n" + extenders, "cfg.yaml", kKnown);
    } catch (const ConfigError& e) {
      return e.issues();
    }
    return std::vector<ConfigIssue>{};
  };
  using Issues = std::vector<ConfigIssue>;
  EXPECT_EQ(issues("- {urlPrefix: 'http://e:1', prioritizeVerb: p}\n"),
            (Issues{{"extenders[0].weight", "must have a positive weight applied to it, got 0"}}));
  EXPECT_EQ(issues("- {urlPrefix: 'http://e:1', bindVerb: b}\n"
                   "- {urlPrefix: 'http://e:2', bindVerb: b}\n"),
            (Issues{{"extenders",
                     "found 2 extenders implementing bind; only one extender can "
                     "implement bind"}}));
  EXPECT_EQ(issues("- {urlPrefix: 'http://e:1', managedResources: [{name: a.b/c}]}\n"
                   "- {urlPrefix: 'http://e:2', managedResources: [{name: a.b/c}]}\n"),
            (Issues{{"extenders[1].managedResources[0].name",
                     "duplicate extender managed resource name \"a.b/c\""}}));
  EXPECT_EQ(issues("- {filterVerb: f}\n"),
            (Issues{{"extenders[0].urlPrefix", "required; expected an http:// or https:// URL"}}));
  EXPECT_EQ(issues("- {urlPrefix: 'ftp://e:1'}\n"),
            (Issues{{"extenders[0].urlPrefix",
                     "expected an http:// or https:// URL, got \"ftp://e:1\""}}));
  EXPECT_EQ(issues("- {urlPrefix: 'http://e:1', httpTimeout: 5}\n")[0].field,
            "extenders[0].httpTimeout");
  EXPECT_EQ(issues("- {urlPrefix: 'http://e:1', tlsConfig: {caData: '***'}}\n")[0].field,
            "extenders[0].tlsConfig.caData");
  EXPECT_EQ(issues("- {urlPrefix: 'http://e:1', tlsConfig: {certData: 'a2V5'}}\n")[0].field,
            "extenders[0].tlsConfig");
  EXPECT_EQ(issues("- {urlPrefix: 'http://e:1', verb: f}\n")[0].field, "extenders[0].verb");
  EXPECT_EQ(issues("- 7\n")[0].field, "extenders[0]");
}

TEST(ErrorTest, PlacementFeaturesAreRejectedOnlyWhenUsed) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) +
                                "profiles:\n- plugins:\n    placementScore:\n"
                                "      enabled: [{name: CustomScore}]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.placementScore.enabled[0].name");
  issue = LoadIssue(std::string(kHeader) + "percentageOfPlacementsToScore: 120\n");
  EXPECT_EQ(issue.field, "percentageOfPlacementsToScore");
  LoadString(std::string(kHeader) + "percentageOfPlacementsToScore: 0\n", "cfg.yaml", kKnown);
  LoadString(std::string(kHeader) +
                 "profiles:\n- plugins:\n    podGroupPostFilter:\n"
                 "      disabled: [{name: DefaultPreemption}]\n",
             "cfg.yaml", kKnown);
}

TEST(ErrorTest, PluginRules) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) +
                                "profiles:\n- plugins:\n    score:\n"
                                "      enabled: [{name: ImageLocality, weight: -1}]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.score.enabled[0].weight");

  issue = LoadIssue(std::string(kHeader) +
                    "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n  - name: NodeAffinity\n");
  EXPECT_EQ(issue.field, "profiles[0].pluginConfig[1].name");
  EXPECT_EQ(issue.problem,
            "duplicate \"NodeAffinity\"; already configured at "
            "profiles[0].pluginConfig[0]");

  issue = LoadIssue(
      std::string(kHeader) +
      "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: DefaultBinder}]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.bind");
  EXPECT_EQ(issue.problem, "no bind plugin is enabled");

  issue = LoadIssue(std::string(kHeader) +
                    "profiles:\n- plugins:\n    queueSort:\n      disabled: [{name: '*'}]\n");
  EXPECT_EQ(issue.field, "profiles[0].plugins.queueSort");
  EXPECT_EQ(issue.problem, "no queue sort plugin is enabled");

  // A non-default MultiPoint plugin may bind; only the framework knows, so it is accepted here.
  LoadString(std::string(kHeader) +
                 "profiles:\n- plugins:\n    multiPoint:\n"
                 "      disabled: [{name: DefaultBinder}]\n      enabled: [{name: CustomScore}]\n",
             "cfg.yaml", kKnown);
}

TEST(ErrorTest, GlobalRules) {
  std::vector<ConfigIssue> issues = LoadIssues(std::string(kHeader) +
                                               "parallelism: 0\n"
                                               "podInitialBackoffSeconds: 5\n"
                                               "podMaxBackoffSeconds: 4\n"
                                               "clientConnection: {burst: -1, contentType: "
                                               "application/yaml}\n");
  std::vector<std::string> fields;
  fields.reserve(issues.size());
  for (const ConfigIssue& issue : issues) {
    fields.push_back(issue.field);
  }
  EXPECT_THAT(fields, ElementsAre("parallelism", "podMaxBackoffSeconds", "clientConnection.burst",
                                  "clientConnection.contentType"));

  ConfigIssue issue = LoadIssue(std::string(kHeader) + "podInitialBackoffSeconds: 0\n");
  EXPECT_EQ(issue.field, "podInitialBackoffSeconds");
}

TEST(ErrorTest, EveryProblemIsReported) {
  try {
    LoadString(std::string(kHeader) + "parallelism: x\nprofiles:\n- schedulerName: [a]\n",
               "cfg.yaml", kKnown);
    FAIL() << "loaded";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "cfg.yaml: parallelism: expected an integer, got string \"x\"\n"
                 "cfg.yaml: profiles[0].schedulerName: expected a string, got a list");
  }
}

TEST(ErrorTest, YamlSyntaxErrorHasLineAndColumn) {
  // The mis-indented key on line 4 makes its ':' an illegal map value.
  EXPECT_EQ(FileError("pkg/config/testdata/syntax-error.yaml"),
            "pkg/config/testdata/syntax-error.yaml: line 4, column 27: illegal map value");
}

// Found by fuzzing (test/fuzz/corpus/config/timeout-stuck-document): yaml-cpp's LoadAll looped
// forever, allocating, on this stream.
TEST(ErrorTest, StreamThatStopsTheYamlParserIsASyntaxError) {
  EXPECT_EQ(LoadIssue("{[{}]},").problem, "line 1, column 7: expected the start of a document");
  EXPECT_EQ(LoadIssue("---\n,\n").problem, "line 2, column 1: expected the start of a document");
}

TEST(ErrorTest, DocumentShape) {
  ConfigIssue issue = LoadIssue("");
  EXPECT_EQ(issue.field, "");
  EXPECT_EQ(issue.problem, "empty document; expected a KubeSchedulerConfiguration");

  issue = LoadIssue(std::string(kHeader) + "---\n" + kHeader);
  EXPECT_EQ(issue.problem,
            "found 2 YAML documents; expected exactly one KubeSchedulerConfiguration");
}

TEST(ErrorTest, ArgsLimits) {
  ConfigIssue issue = LoadIssue(std::string(kHeader) +
                                "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n"
                                "    args: {x: .inf}\n");
  EXPECT_EQ(issue.field, "profiles[0].pluginConfig[0].args.x");
  EXPECT_EQ(issue.problem, "number .inf cannot be represented in JSON");

  std::string deep = std::string(70, '[') + "0" + std::string(70, ']');
  std::vector<ConfigIssue> issues =
      LoadIssues(std::string(kHeader) +
                 "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args: " + deep + "\n");
  ASSERT_FALSE(issues.empty());
  EXPECT_THAT(issues[0].problem, HasSubstr("nested more than 64 levels deep"));

  // Aliases multiply: 10 levels of 10 references expand to 10^10 values.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 10; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    bomb += "      a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int j = 1; j < 10; ++j) {
      bomb += ", " + prev;
    }
    bomb += "]\n";
  }
  issues =
      LoadIssues(std::string(kHeader) +
                 "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      " + bomb);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_THAT(issues[0].problem, HasSubstr("plugin args have more than 100000 values"));
}

// Found by fuzzing (test/fuzz/corpus/config/crash-args-key-not-utf8): such a file loaded, and
// berth-scheduler then died serving its configuration as JSON.
TEST(ErrorTest, StringsMustBeUtf8) {
  std::vector<ConfigIssue> issues =
      LoadIssues(std::string(kHeader) +
                 "clientConnection: {kubeconfig: \"/etc/k\xff\"}\n"
                 "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n"
                 "    args: {\"def\xff\": 1, ok: [\"\xc3\xa9\", \"\xed\xa0\x80\"]}\n");
  EXPECT_THAT(
      issues,
      ElementsAre(
          ConfigIssue{"clientConnection.kubeconfig", "not valid UTF-8"},
          ConfigIssue{"profiles[0].pluginConfig[0].args", "a mapping key is not valid UTF-8"},
          ConfigIssue{"profiles[0].pluginConfig[0].args.ok[1]", "not valid UTF-8"}));
}

TEST(ErrorTest, MissingFile) {
  EXPECT_EQ(FileError("pkg/config/testdata/does-not-exist.yaml"),
            "pkg/config/testdata/does-not-exist.yaml: cannot read: No such file or directory");
  EXPECT_EQ(FileError("pkg/config/testdata"), "pkg/config/testdata: cannot read: Is a directory");
}

TEST(ErrorTest, LongScalarsAreCut) {
  ConfigIssue issue =
      LoadIssue(std::string(kHeader) + "parallelism: " + std::string(500, 'x') + "\n");
  EXPECT_EQ(issue.problem, "expected an integer, got string \"" + std::string(100, 'x') + "...\"");
}

TEST(ValidateTest, DefaultConfigurationIsValid) {
  EXPECT_TRUE(Validate(DefaultConfiguration(), kKnown).empty());
  // A binary without one of the default plugins must say so rather than run without it.
  std::set<std::string> without_fit = kKnown;
  without_fit.erase("NodeResourcesFit");
  std::vector<ConfigIssue> issues = Validate(DefaultConfiguration(), without_fit);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].field, "profiles[0].plugins.multiPoint.enabled[7].name");
}

// ---- Other YAML documents (pods to simulate) ------------------------------------------------

// The first problem of YamlDocumentsToJson(text), as "path: problem".
std::string DocumentsError(const std::string& text, size_t max_values = 100'000) {
  try {
    YamlDocumentsToJson(text, "pod.yaml", max_values);
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.source(), "pod.yaml");
    EXPECT_EQ(e.issues().size(), 1u);
    return e.issues().empty() ? "" : e.issues()[0].field + ": " + e.issues()[0].problem;
  }
  ADD_FAILURE() << "converted without error:\n" << text;
  return "";
}

TEST(YamlDocumentsToJsonTest, ConvertsEachDocumentAndDropsEmptyOnes) {
  auto docs = YamlDocumentsToJson("---\nkind: Pod\nspec: {n: 1, ok: true, f: 1.5}\n---\n---\n[a]\n",
                                  "pod.yaml");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0], nlohmann::json::parse(R"({"kind":"Pod","spec":{"n":1,"ok":true,"f":1.5}})"));
  EXPECT_EQ(docs[1], nlohmann::json::parse(R"(["a"])"));
}

TEST(YamlDocumentsToJsonTest, NamesTheFirstProblemByDocumentAndPath) {
  EXPECT_EQ(DocumentsError("a: 1\n---\nb: {c: 1, c: 2}\n"), "document 2: b.c: duplicate key");
  EXPECT_EQ(DocumentsError(std::string("a: b\xff\n")), "a: not valid UTF-8");
  EXPECT_EQ(DocumentsError("a: [1, 2, 3]\n", 3), "a[1]: more than the allowed number of values");
  EXPECT_EQ(DocumentsError("? [k]\n: v\n"), ": mapping keys must be strings, got a list");
}

// A 1 MiB string anchored once and named by 50 aliases: a 51 MiB pod from a 1 MiB file.
TEST(YamlDocumentsToJsonTest, RefusesALongAnchoredStringRepeatedByAliases) {
  std::string text = "metadata:\n  annotations:\n    a: &s \"" + std::string(1 << 20, 'x') + "\"\n";
  text += "spec:\n  nodeSelector:\n";
  for (int i = 0; i < 50; i++) text += "    k" + std::to_string(i) + ": *s\n";
  // 16 MiB hold the keys, the anchor and 14 aliases; the 15th alias is one too many.
  EXPECT_EQ(DocumentsError(text),
            "spec.nodeSelector.k14: keys and values add up to more than 16777216 bytes (an alias "
            "counts the whole anchored value each time it is used)");
}

// Billion laughs with 1000-byte laughs: 9 levels of 9 aliases each, 9^9 strings. The value bound
// alone would let 100 MB of them through.
TEST(YamlDocumentsToJsonTest, RefusesBillionLaughsAtTheByteBound) {
  std::string text = "a0: &a0 \"" + std::string(1000, 'l') + "\"\n";
  for (int level = 1; level <= 9; level++) {
    const std::string prev = "*a" + std::to_string(level - 1);
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [" + prev;
    for (int i = 1; i < 9; i++) text += ", " + prev;
    text += "]\n";
  }
  EXPECT_THAT(DocumentsError(text), HasSubstr("add up to more than 16777216 bytes"));
}

TEST(YamlDocumentsToJsonTest, ConvertsAFewAliases) {
  auto docs = YamlDocumentsToJson(
      "metadata: {name: p, labels: &l {app: web, tier: \"1\"}}\n"
      "spec:\n  nodeSelector: *l\n  tolerations:\n  - &t {key: a, operator: Exists}\n  - *t\n",
      "pod.yaml");
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]["spec"]["nodeSelector"], docs[0]["metadata"]["labels"]);
  EXPECT_EQ(docs[0]["spec"]["nodeSelector"]["tier"], "1");
  EXPECT_EQ(docs[0]["spec"]["tolerations"][1], docs[0]["spec"]["tolerations"][0]);
}

TEST(YamlDocumentsToJsonTest, RefusesAliasesWhenAskedToNamingTheLine) {
  const std::string text =
      "metadata: {name: p, labels: &l {app: web}}\nspec:\n  nodeSelector: *l\n";
  try {
    YamlDocumentsToJson(text, "body", kMaxDocumentValues, Aliases::kRefuse);
    FAIL() << "an alias was accepted";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.issues().size(), 1u);
    EXPECT_EQ(e.issues()[0].problem,
              "line 3, column 17: YAML aliases (*name) are not accepted here; write the anchored "
              "value out in full");
  }
  // An anchor that nothing names is harmless, and the same text may use aliases by default.
  EXPECT_EQ(YamlDocumentsToJson("a: &x 1\n", "body", kMaxDocumentValues, Aliases::kRefuse).size(),
            1u);
  EXPECT_EQ(YamlDocumentsToJson(text, "pod.yaml").size(), 1u);
}

}  // namespace
}  // namespace berth::config
