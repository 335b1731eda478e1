#include "pkg/plugins/registry/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "pkg/config/load.h"

namespace berth::plugins::registry {
namespace {

using config::ConfigIssue;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::set<std::string> KnownPlugins() {
  std::set<std::string> known;
  for (const auto& [name, factory] : InTree()) known.insert(name);
  return known;
}

constexpr char kHeader[] =
    "apiVersion: kubescheduler.config.k8s.io/v1\n"
    "kind: KubeSchedulerConfiguration\n";

// The issues loading `text` with the in-tree plugins' args checks reports (what berth-scheduler
// --config does); fails the test when the load succeeds.
std::vector<ConfigIssue> LoadIssues(const std::string& text) {
  try {
    config::LoadString(text, "cfg.yaml", KnownPlugins(), ValidateArgs);
  } catch (const config::ConfigError& e) {
    return e.issues();
  }
  ADD_FAILURE() << "loaded without error:\n" << text;
  return {};
}

// Every bad field of every plugin's args is reported, each under its full path, as kube-scheduler
// does; before, only the first plugin's first problem came out, when the framework was built.
TEST(ValidateArgsTest, BadFieldsInTwoPluginsArgsAreAllReportedByFullPath) {
  const std::vector<ConfigIssue> issues = LoadIssues(std::string(kHeader) + R"(profiles:
- schedulerName: berth-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: LeastAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 101}]
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}
      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Sometimes}
)");
  EXPECT_THAT(
      issues,
      ElementsAre(
          ConfigIssue{"profiles[0].pluginConfig[0].args.scoringStrategy.resources[1].weight",
                      "Invalid value: 101: resource weight of memory not in valid range (0, 100]"},
          ConfigIssue{"profiles[0].pluginConfig[1].args.defaultConstraints[0].maxSkew",
                      "Invalid value: 0: not in valid range (0, inf)"},
          ConfigIssue{"profiles[0].pluginConfig[1].args.defaultConstraints[1].whenUnsatisfiable",
                      "Unsupported value: \"Sometimes\": supported values: \"DoNotSchedule\", "
                      "\"ScheduleAnyway\""}));
}

// Upstream validates every pluginConfig entry, whether or not its plugin is enabled, in every
// profile; the args themselves are named when they are not an object.
TEST(ValidateArgsTest, ArgsOfDisabledPluginsAndLaterProfilesAreChecked) {
  const std::vector<ConfigIssue> issues = LoadIssues(std::string(kHeader) + R"(profiles:
- schedulerName: a
  plugins:
    multiPoint:
      disabled: [{name: InterPodAffinity}]
  pluginConfig:
  - name: InterPodAffinity
    args: {hardPodAffinityWeight: 101}
- schedulerName: b
  pluginConfig:
  - name: NodeName
    args: [1]
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0, extra: 1}
)");
  EXPECT_THAT(
      issues,
      ElementsAre(
          ConfigIssue{"profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
                      "Invalid value: 101: not in valid range [0, 100]"},
          ConfigIssue{"profiles[1].pluginConfig[0].args", "Invalid value: [1]: must be an object"},
          ConfigIssue{"profiles[1].pluginConfig[1].args.extra", "unknown field"},
          ConfigIssue{"profiles[1].pluginConfig[1].args.minCandidateNodesPercentage",
                      "Invalid value: 0: cannot be zero at the same time as "
                      "minCandidateNodesAbsolute"},
          ConfigIssue{"profiles[1].pluginConfig[1].args.minCandidateNodesAbsolute",
                      "Invalid value: 0: cannot be zero at the same time as "
                      "minCandidateNodesPercentage"}));
}

// OutOfProcess's endpoints are checked when the file is loaded, before any endpoint is called.
TEST(ValidateArgsTest, OutOfProcessEndpointsAreCheckedAtLoad) {
  const std::vector<ConfigIssue> issues = LoadIssues(std::string(kHeader) + R"(profiles:
- schedulerName: berth-scheduler
  plugins:
    multiPoint:
      enabled: [{name: OutOfProcess}]
  pluginConfig:
  - name: OutOfProcess
    args:
      endpoints:
      - {name: gang, url: "http://127.0.0.1:9000", extensionPoints: [Permit, Bind]}
)");
  EXPECT_THAT(issues, ElementsAre(ConfigIssue{
                          "profiles[0].pluginConfig[0].args.endpoints[0].extensionPoints[1]",
                          "Unsupported value: \"Bind\": supported values: \"PreFilter\", "
                          "\"Filter\", \"Score\", \"Reserve\", \"Permit\", \"PreBind\", "
                          "\"PostBind\""}));
}

TEST(ValidateArgsTest, EveryInTreePluginHasItsArgsChecked) {
  for (const auto& [name, factory] : InTree()) {
    EXPECT_THAT(ValidateArgs(name, nlohmann::json::array({1})),
                ElementsAre(ConfigIssue{"", "Invalid value: [1]: must be an object"}))
        << name;
    EXPECT_THAT(ValidateArgs(name, nullptr), IsEmpty()) << name;
    EXPECT_THAT(ValidateArgs(name, {{"apiVersion", "kubescheduler.config.k8s.io/v1"}}), IsEmpty())
        << name;
  }
  // Out-of-tree plugins check their own args when the framework builds them.
  EXPECT_THAT(ValidateArgs("NotInTree", {{"anything", 1}}), IsEmpty());
}

}  // namespace
}  // namespace berth::plugins::registry
