#ifndef BERTH_TEST_PACKAGING_CHART_H_
#define BERTH_TEST_PACKAGING_CHART_H_

// Helpers for the packaging tests: run a command, run the pinned helm on charts/berth, and turn
// rendered YAML into JSON objects the way the apiserver would read them.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace berth::client {
class Client;
}  // namespace berth::client

namespace berth::packaging {

struct CommandResult {
  int exit_code = -1;  // 128+signal when killed.
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH) with the repository root as working directory and waits.
CommandResult RunCommand(const std::vector<std::string>& argv);

// A tool deploy/build-tools.sh links into _output/tools/ ("helm", "servicemonitor-crd.yaml");
// throws, naming the command that provides it, when it is missing.
std::string ToolPath(const std::string& name);

// charts/berth and its ci/ values files (absolute paths, sorted).
std::string ChartDir();
std::vector<std::string> CiValuesFiles();

// `helm template <release> charts/berth -n <ns> -f <each file> --set <each set>`; throws with
// helm's message when it fails.
std::string HelmTemplate(const std::string& release, const std::string& ns,
                         const std::vector<std::string>& values_files,
                         const std::vector<std::string>& sets = {});

// Every non-empty document of a multi-document YAML stream, as JSON. Plain scalars resolve as in
// YAML 1.2's core schema (what sigs.k8s.io/yaml does for these files); quoted ones stay strings.
std::vector<nlohmann::json> ParseYamlDocuments(const std::string& text);

// The rendered objects with this kind ("Deployment"); `name` empty: any name.
std::vector<nlohmann::json> OfKind(const std::vector<nlohmann::json>& objects,
                                   const std::string& kind, const std::string& name = "");

// Exactly one object of `kind`; throws otherwise.
nlohmann::json OnlyOfKind(const std::vector<nlohmann::json>& objects, const std::string& kind);

std::string ReadFile(const std::string& path);

// Creates scheduler-plugins' PodGroup CRD from the chart's file (files/podgroups...yaml), or
// replaces the cluster's copy when its spec differs: the CRD is cluster-wide and outlives test
// runs, and one left by an older checkout would prune fields its schema lacks. Returns without
// waiting for it to be served; throws client::ApiError on other failures.
void ApplyPodGroupCrd(client::Client& client);

}  // namespace berth::packaging

#endif  // BERTH_TEST_PACKAGING_CHART_H_
