// charts/berth as helm renders it, without a cluster: the schema rejects bad values naming the
// key, every ci/ values file lints and renders, the RBAC is exactly what the scheduler calls,
// the pod is locked down, the rendered configuration is one berth-scheduler accepts, and
// manifests/berth.yaml is a fresh render.

#include "test/packaging/chart.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "pkg/config/load.h"
#include "pkg/plugins/registry/registry.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth::packaging {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr char kNamespace[] = "berth-system";

std::string CiFile(const std::string& name) { return ChartDir() + "/ci/" + name; }

std::vector<json> Render(const std::vector<std::string>& files,
                         const std::vector<std::string>& sets = {}) {
  return ParseYamlDocuments(HelmTemplate("berth", kNamespace, files, sets));
}

std::string Basename(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

CommandResult Lint(const std::vector<std::string>& values_files) {
  std::vector<std::string> argv = {ToolPath("helm"), "lint", "--strict", ChartDir()};
  for (const std::string& file : values_files) {
    argv.push_back("--values");
    argv.push_back(file);
  }
  return RunCommand(argv);
}

// ---- Schema ------------------------------------------------------------------------------------

TEST(ChartLint, EveryCiValuesFilePasses) {
  std::vector<std::string> files = CiValuesFiles();
  ASSERT_GE(files.size(), 4u);
  for (const std::string& file : files) {
    CommandResult result = Lint({file});
    EXPECT_EQ(result.exit_code, 0) << Basename(file) << ":\n" << result.out << result.err;
  }
}

struct BadValues {
  std::string name;
  std::string yaml;
  std::vector<std::string> message_parts;  // Each must appear in helm's output.
};

class ChartLintRejects : public ::testing::TestWithParam<BadValues> {};

TEST_P(ChartLintRejects, NamingTheKey) {
  const BadValues& bad = GetParam();
  std::string file = testing::WriteTempFile(bad.name + ".yaml", bad.yaml);
  CommandResult result = Lint({file});
  EXPECT_NE(result.exit_code, 0) << "helm lint accepted:\n" << bad.yaml;
  for (const std::string& part : bad.message_parts) {
    EXPECT_THAT(result.out + result.err, HasSubstr(part));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Values, ChartLintRejects,
    ::testing::Values(
        BadValues{"WrongType", "replicas: two\n", {"'/replicas'", "got string, want integer"}},
        BadValues{"WrongNestedType",
                  "leaderElection:\n  enabled: \"yes\"\n",
                  {"'/leaderElection/enabled'", "got string"}},
        BadValues{"UnknownTopLevelKey", "replica: 2\n", {"additional properties 'replica'"}},
        BadValues{"UnknownNestedKey",
                  "image:\n  repository: berth\n  tagg: v1\n",
                  {"'/image'", "additional properties 'tagg'"}},
        BadValues{"UnknownExtensionPoint",
                  "profiles:\n  - schedulerName: berth-scheduler\n    plugins:\n"
                  "      multipoint: {enabled: [{name: NodeName}]}\n",
                  {"'/profiles/0/plugins'", "additional properties 'multipoint'"}},
        BadValues{"BadSchedulerName",
                  "profiles:\n  - schedulerName: Berth_Scheduler\n",
                  {"'/profiles/0/schedulerName'"}},
        BadValues{"BadDuration",
                  "leaderElection:\n  leaseDuration: 15\n",
                  {"'/leaderElection/leaseDuration'"}},
        BadValues{"DebugEndpointsNotABool",
                  "server:\n  debugEndpoints: \"yes\"\n",
                  {"'/server/debugEndpoints'", "got string, want boolean"}},
        // The secure port is always HTTPS now; an old values file says so rather than being
        // silently ignored.
        BadValues{"RemovedTlsEnabled",
                  "server:\n  tls:\n    enabled: true\n",
                  {"'/server/tls'", "additional properties 'enabled'"}},
        // Extenders are kube-scheduler's v1 entries, spelt exactly.
        BadValues{"ExtenderUnknownField",
                  "extenders:\n  - urlPrefix: http://127.0.0.1:9680\n    filterverb: filter\n",
                  {"'/extenders/0'", "additional properties 'filterverb'"}},
        BadValues{"ExtenderWithoutUrl",
                  "extenders:\n  - filterVerb: filter\n",
                  {"'/extenders/0'", "urlPrefix"}},
        BadValues{"ExtenderTlsSecretNotAName",
                  "extenderTLS:\n  secretNames: [Extender_TLS]\n",
                  {"'/extenderTLS/secretNames/0'"}},
        BadValues{"MetricsReaderWithoutNamespace",
                  "rbac:\n  metricsReader:\n    serviceAccounts: [{name: prometheus}]\n",
                  {"'/rbac/metricsReader/serviceAccounts/0'", "namespace"}}),
    [](const ::testing::TestParamInfo<BadValues>& info) { return info.param.name; });

// ---- Rendering ---------------------------------------------------------------------------------

std::multiset<std::string> Kinds(const std::vector<json>& objects) {
  std::multiset<std::string> kinds;
  for (const json& object : objects) kinds.insert(object.value("kind", "<none>"));
  return kinds;
}

TEST(ChartTemplate, EveryCiValuesFileRendersTheExpectedObjects) {
  // Three ClusterRoles: the scheduler's, the metrics reader's and the debug reader's.
  const std::multiset<std::string> base = {
      "ServiceAccount", "ConfigMap",   "ClusterRole",
      "ClusterRole",    "ClusterRole", "ClusterRoleBinding",
      "Service",        "Deployment",  "CustomResourceDefinition"};
  auto with = [&](std::initializer_list<std::string> extra) {
    std::multiset<std::string> kinds = base;
    kinds.insert(extra);
    return kinds;
  };
  const std::map<std::string, std::multiset<std::string>> expected = {
      {"defaults-values.yaml", base},
      {"two-profiles-values.yaml", base},
      {"ha-servicemonitor-values.yaml", with({"Role", "RoleBinding", "ServiceMonitor",
                                              "PodDisruptionBudget", "ClusterRoleBinding"})},
      {"tls-values.yaml", with({"ServiceMonitor"})},
      {"extenders-values.yaml", base},
  };
  std::set<std::string> seen;
  for (const std::string& file : CiValuesFiles()) {
    std::string name = Basename(file);
    seen.insert(name);
    std::vector<json> objects = Render({file});
    ASSERT_TRUE(expected.contains(name)) << name << " has no expectation here; add one";
    EXPECT_EQ(Kinds(objects), expected.at(name)) << name;
    for (const json& object : objects) {
      std::string kind = object["kind"];
      bool cluster_scoped = kind == "ClusterRole" || kind == "ClusterRoleBinding" ||
                            kind == "CustomResourceDefinition";
      EXPECT_EQ(object["metadata"].contains("namespace"), !cluster_scoped) << name << " " << kind;
      if (!cluster_scoped) {
        EXPECT_EQ(object["metadata"]["namespace"], kNamespace);
      }
      EXPECT_EQ(object["metadata"]["labels"]["app.kubernetes.io/name"], "berth");
    }
  }
  EXPECT_EQ(seen.size(), expected.size());
}

TEST(ChartTemplate, ImageDefaultsToTheProjectVersion) {
  std::string cmake = ReadFile(testing::RepoRoot() + "/CMakeLists.txt");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(cmake, match, std::regex(R"(project\(berth VERSION ([0-9.]+))")));
  std::string version = match[1];
  std::string chart = ReadFile(ChartDir() + "/Chart.yaml");
  EXPECT_THAT(chart, HasSubstr("appVersion: \"" + version + "\""));
  json deployment = OnlyOfKind(Render({}), "Deployment");
  EXPECT_EQ(deployment["spec"]["template"]["spec"]["containers"][0]["image"],
            "berth-scheduler:" + version);
  deployment =
      OnlyOfKind(Render({}, {"image.repository=example/berth", "image.tag=dev"}), "Deployment");
  EXPECT_EQ(deployment["spec"]["template"]["spec"]["containers"][0]["image"], "example/berth:dev");
}

// ---- RBAC --------------------------------------------------------------------------------------

// The scheduler's own ClusterRole and binding (named like the release), beside the metrics
// reader's.
json SchedulerRole(const std::vector<json>& objects) {
  return OfKind(objects, "ClusterRole", "berth").at(0);
}
json SchedulerRoleBinding(const std::vector<json>& objects) {
  return OfKind(objects, "ClusterRoleBinding", "berth").at(0);
}

// One (apiGroup, resource, verb, resourceName) per permission, whatever the rules' grouping.
using Grant = std::tuple<std::string, std::string, std::string, std::string>;

std::set<Grant> Grants(const json& role) {
  std::set<Grant> grants;
  for (const json& rule : role["rules"]) {
    EXPECT_FALSE(rule.contains("nonResourceURLs")) << rule.dump();
    std::vector<std::string> names = {""};
    if (rule.contains("resourceNames"))
      names = rule["resourceNames"].get<std::vector<std::string>>();
    for (const json& group : rule["apiGroups"])
      for (const json& resource : rule["resources"])
        for (const json& verb : rule["verbs"])
          for (const std::string& name : names) grants.insert({group, resource, verb, name});
  }
  return grants;
}

const std::set<Grant> kClusterGrants = {
    {"", "pods", "get", ""},
    {"", "pods", "list", ""},
    {"", "pods", "watch", ""},
    {"", "pods/binding", "create", ""},
    {"", "pods/status", "patch", ""},
    {"", "nodes", "get", ""},
    {"", "nodes", "list", ""},
    {"", "nodes", "watch", ""},
    {"", "namespaces", "get", ""},
    {"", "namespaces", "list", ""},
    {"", "namespaces", "watch", ""},
    {"", "services", "get", ""},
    {"", "services", "list", ""},
    {"", "services", "watch", ""},
    {"", "replicationcontrollers", "get", ""},
    {"", "replicationcontrollers", "list", ""},
    {"", "replicationcontrollers", "watch", ""},
    {"apps", "replicasets", "get", ""},
    {"apps", "replicasets", "list", ""},
    {"apps", "replicasets", "watch", ""},
    {"apps", "statefulsets", "get", ""},
    {"apps", "statefulsets", "list", ""},
    {"apps", "statefulsets", "watch", ""},
    {"events.k8s.io", "events", "create", ""},
    {"events.k8s.io", "events", "patch", ""},
    // The secure port's delegated authentication and authorization.
    {"authentication.k8s.io", "tokenreviews", "create", ""},
    {"authorization.k8s.io", "subjectaccessreviews", "create", ""},
    {"scheduling.x-k8s.io", "podgroups", "get", ""},
    {"scheduling.x-k8s.io", "podgroups", "list", ""},
    {"scheduling.x-k8s.io", "podgroups", "watch", ""},
    {"scheduling.x-k8s.io", "podgroups/status", "update", ""},
    {"scheduling.x-k8s.io", "podgroups/status", "patch", ""},
    {"scheduling.k8s.io", "podgroups", "get", ""},
    {"scheduling.k8s.io", "podgroups", "list", ""},
    {"scheduling.k8s.io", "podgroups", "watch", ""},
    {"scheduling.k8s.io", "podgroups/status", "patch", ""},
    // DefaultPreemption (rbac.preemption, on by default): evictions and disruption budgets.
    {"", "pods", "delete", ""},
    {"policy", "poddisruptionbudgets", "get", ""},
    {"policy", "poddisruptionbudgets", "list", ""},
    {"policy", "poddisruptionbudgets", "watch", ""},
    // The volume plugins (rbac.volumes, on by default): the storage objects they read, and
    // VolumeBinding's patches of a volume's claimRef or a claim's selected-node annotation.
    {"", "persistentvolumeclaims", "get", ""},
    {"", "persistentvolumeclaims", "list", ""},
    {"", "persistentvolumeclaims", "watch", ""},
    {"", "persistentvolumeclaims", "patch", ""},
    {"", "persistentvolumes", "get", ""},
    {"", "persistentvolumes", "list", ""},
    {"", "persistentvolumes", "watch", ""},
    {"", "persistentvolumes", "patch", ""},
    {"storage.k8s.io", "storageclasses", "get", ""},
    {"storage.k8s.io", "storageclasses", "list", ""},
    {"storage.k8s.io", "storageclasses", "watch", ""},
    {"storage.k8s.io", "csinodes", "get", ""},
    {"storage.k8s.io", "csinodes", "list", ""},
    {"storage.k8s.io", "csinodes", "watch", ""},
    {"storage.k8s.io", "csidrivers", "get", ""},
    {"storage.k8s.io", "csidrivers", "list", ""},
    {"storage.k8s.io", "csidrivers", "watch", ""},
    {"storage.k8s.io", "csistoragecapacities", "get", ""},
    {"storage.k8s.io", "csistoragecapacities", "list", ""},
    {"storage.k8s.io", "csistoragecapacities", "watch", ""},
    {"storage.k8s.io", "volumeattachments", "get", ""},
    {"storage.k8s.io", "volumeattachments", "list", ""},
    {"storage.k8s.io", "volumeattachments", "watch", ""},
    // DynamicResources (rbac.dynamicResources, on by default): the claims, devices, classes and
    // taint rules it reads; patches of a claim's finalizers and status, which (with granular
    // status authorization) also need the verb on the synthetic resourceclaims/binding; the claim
    // for a pod's extended resources served from devices, created and deleted.
    {"resource.k8s.io", "resourceclaims", "get", ""},
    {"resource.k8s.io", "resourceclaims", "create", ""},
    {"resource.k8s.io", "resourceclaims", "delete", ""},
    {"resource.k8s.io", "resourceclaims", "list", ""},
    {"resource.k8s.io", "resourceclaims", "watch", ""},
    {"resource.k8s.io", "resourceclaims", "patch", ""},
    {"resource.k8s.io", "resourceclaims/status", "patch", ""},
    {"resource.k8s.io", "resourceclaims/binding", "patch", ""},
    {"resource.k8s.io", "deviceclasses", "get", ""},
    {"resource.k8s.io", "deviceclasses", "list", ""},
    {"resource.k8s.io", "deviceclasses", "watch", ""},
    {"resource.k8s.io", "resourceslices", "get", ""},
    {"resource.k8s.io", "resourceslices", "list", ""},
    {"resource.k8s.io", "resourceslices", "watch", ""},
    {"resource.k8s.io", "devicetaintrules", "get", ""},
    {"resource.k8s.io", "devicetaintrules", "list", ""},
    {"resource.k8s.io", "devicetaintrules", "watch", ""},
};

TEST(ChartRbac, ClusterRoleGrantsExactlyWhatTheSchedulerCalls) {
  for (const std::string& file : CiValuesFiles()) {
    std::vector<json> objects = Render({file});
    EXPECT_EQ(Grants(SchedulerRole(objects)), kClusterGrants) << Basename(file);
    json binding = SchedulerRoleBinding(objects);
    EXPECT_EQ(binding["roleRef"]["name"], SchedulerRole(objects)["metadata"]["name"]);
    EXPECT_EQ(
        binding["subjects"],
        json::parse(R"([{"kind":"ServiceAccount","name":"berth","namespace":"berth-system"}])"));
  }
}

TEST(ChartRbac, WithoutPreemptionNeitherPodDeletionNorDisruptionBudgets) {
  std::set<Grant> expected = kClusterGrants;
  for (const Grant& grant : kClusterGrants) {
    if (std::get<1>(grant) == "poddisruptionbudgets" ||
        (std::get<1>(grant) == "pods" && std::get<2>(grant) == "delete")) {
      expected.erase(grant);
    }
  }
  ASSERT_EQ(expected.size() + 4, kClusterGrants.size());
  EXPECT_EQ(Grants(SchedulerRole(Render({}, {"rbac.preemption=false"}))), expected);
}

TEST(ChartRbac, WithoutVolumesNoStorageObjects) {
  std::set<Grant> expected = kClusterGrants;
  for (const Grant& grant : kClusterGrants) {
    const std::string& group = std::get<0>(grant);
    const std::string& resource = std::get<1>(grant);
    if (group == "storage.k8s.io" || resource == "persistentvolumeclaims" ||
        resource == "persistentvolumes") {
      expected.erase(grant);
    }
  }
  ASSERT_EQ(expected.size() + 23, kClusterGrants.size());
  EXPECT_EQ(Grants(SchedulerRole(Render({}, {"rbac.volumes=false"}))), expected);
}

TEST(ChartRbac, WithoutDynamicResourcesNoResourceObjects) {
  std::set<Grant> expected = kClusterGrants;
  for (const Grant& grant : kClusterGrants) {
    if (std::get<0>(grant) == "resource.k8s.io") expected.erase(grant);
  }
  ASSERT_EQ(expected.size() + 17, kClusterGrants.size());
  EXPECT_EQ(Grants(SchedulerRole(Render({}, {"rbac.dynamicResources=false"}))), expected);
}

TEST(ChartRbac, MetricsReaderMayGetMetricsAndNothingElse) {
  const json expected_rules = json::parse(R"([{"nonResourceURLs":["/metrics"],"verbs":["get"]}])");
  std::vector<json> objects = Render({});
  json reader = OfKind(objects, "ClusterRole", "berth-metrics-reader").at(0);
  EXPECT_EQ(reader["rules"], expected_rules);
  EXPECT_TRUE(OfKind(objects, "ClusterRoleBinding", "berth-metrics-reader").empty())
      << "bound only to the ServiceAccounts named";

  objects = Render({CiFile("ha-servicemonitor-values.yaml")});
  json binding = OfKind(objects, "ClusterRoleBinding", "berth-metrics-reader").at(0);
  EXPECT_EQ(binding["roleRef"], json({{"apiGroup", "rbac.authorization.k8s.io"},
                                      {"kind", "ClusterRole"},
                                      {"name", "berth-metrics-reader"}}));
  EXPECT_EQ(binding["subjects"], json::parse(R"([{"kind":"ServiceAccount","name":"prometheus-k8s",
                                                  "namespace":"monitoring"}])"));

  objects = Render({CiFile("ha-servicemonitor-values.yaml")}, {"rbac.metricsReader.create=false"});
  EXPECT_TRUE(OfKind(objects, "ClusterRole", "berth-metrics-reader").empty());
  EXPECT_TRUE(OfKind(objects, "ClusterRoleBinding", "berth-metrics-reader").empty());
  EXPECT_EQ(Grants(SchedulerRole(objects)), kClusterGrants);
}

TEST(ChartRbac, LeaseRoleOnlyWithLeaderElectionAndOnlyForItsLease) {
  EXPECT_TRUE(OfKind(Render({CiFile("defaults-values.yaml")}), "Role").empty());
  EXPECT_TRUE(OfKind(Render({CiFile("defaults-values.yaml")}), "RoleBinding").empty());

  std::vector<json> objects = Render({CiFile("ha-servicemonitor-values.yaml")});
  json role = OnlyOfKind(objects, "Role");
  EXPECT_EQ(role["metadata"]["namespace"], kNamespace);
  const std::set<Grant> expected = {
      {"coordination.k8s.io", "leases", "create", ""},
      {"coordination.k8s.io", "leases", "get", "berth-leader"},
      {"coordination.k8s.io", "leases", "list", "berth-leader"},
      {"coordination.k8s.io", "leases", "watch", "berth-leader"},
      {"coordination.k8s.io", "leases", "update", "berth-leader"},
  };
  EXPECT_EQ(Grants(role), expected);
  json binding = OnlyOfKind(objects, "RoleBinding");
  EXPECT_EQ(binding["roleRef"]["kind"], "Role");
  EXPECT_EQ(binding["roleRef"]["name"], role["metadata"]["name"]);
  EXPECT_EQ(binding["subjects"][0]["name"], "berth");
}

TEST(ChartRbac, NothingWhenDisabled) {
  std::vector<json> objects =
      Render({CiFile("ha-servicemonitor-values.yaml")},
             {"rbac.create=false", "serviceAccount.create=false", "serviceAccount.name=existing"});
  for (const char* kind :
       {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount"}) {
    EXPECT_TRUE(OfKind(objects, kind).empty()) << kind;
  }
  EXPECT_EQ(OnlyOfKind(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"],
            "existing");
}

// ---- The PodGroup CRD ---------------------------------------------------------------------------

TEST(ChartPodGroupCrd, InstalledAsTheChartsFileKeptOnUninstallAndOptional) {
  std::vector<json> file =
      ParseYamlDocuments(ReadFile(ChartDir() + "/files/podgroups.scheduling.x-k8s.io.yaml"));
  ASSERT_EQ(file.size(), 1u);
  json crd = OnlyOfKind(Render({}), "CustomResourceDefinition");
  EXPECT_EQ(crd["metadata"]["name"], "podgroups.scheduling.x-k8s.io");
  EXPECT_EQ(crd["spec"], file[0]["spec"]);
  EXPECT_EQ(crd["metadata"]["annotations"], json({{"helm.sh/resource-policy", "keep"}}));
  EXPECT_EQ(crd["spec"]["names"]["shortNames"], json({"pg", "pgs"}));
  EXPECT_EQ(crd["spec"]["scope"], "Namespaced");
  const json& version = crd["spec"]["versions"][0];
  EXPECT_EQ(version["name"], "v1alpha1");
  EXPECT_EQ(version["subresources"], json({{"status", json::object()}}));
  const json& spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
  for (const char* field :
       {"minMember", "minResources", "scheduleTimeoutSeconds", "schedulingConstraints"}) {
    EXPECT_TRUE(spec.contains(field)) << field;
  }
  const json& constraints = spec["schedulingConstraints"]["properties"];
  EXPECT_EQ(constraints["topology"]["maxItems"], 3);
  EXPECT_EQ(constraints["topology"]["items"]["required"], json({"key"}));
  EXPECT_EQ(constraints["topologyPolicy"]["enum"], json({"Required", "Preferred"}));
  const json& status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
  for (const char* field :
       {"phase", "occupiedBy", "running", "succeeded", "failed", "scheduleStartTime"}) {
    EXPECT_TRUE(status.contains(field)) << field;
  }

  EXPECT_TRUE(
      OfKind(Render({}, {"podGroup.installCRD=false"}), "CustomResourceDefinition").empty());
  // The rights to read PodGroups stay: the CRD may come from another owner.
  EXPECT_EQ(Grants(SchedulerRole(Render({}, {"podGroup.installCRD=false"}))), kClusterGrants);
}

// ---- Deployment --------------------------------------------------------------------------------

json PodSpec(const std::vector<json>& objects) {
  return OnlyOfKind(objects, "Deployment")["spec"]["template"]["spec"];
}

TEST(ChartDeployment, RunsLockedDownAsTheImageUser) {
  // The numeric user the image declares is the one the pod must run as.
  std::string dockerfile = ReadFile(testing::RepoRoot() + "/Dockerfile");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(dockerfile, match, std::regex(R"(\nUSER ([0-9]+):([0-9]+))")));
  int64_t uid = std::stoll(match[1]), gid = std::stoll(match[2]);

  for (const std::string& file : CiValuesFiles()) {
    SCOPED_TRACE(Basename(file));
    json spec = PodSpec(Render({file}));
    const json& pod = spec["securityContext"];
    EXPECT_EQ(pod["runAsNonRoot"], true);
    EXPECT_EQ(pod["runAsUser"], uid);
    EXPECT_EQ(pod["runAsGroup"], gid);
    EXPECT_EQ(pod["seccompProfile"]["type"], "RuntimeDefault");
    EXPECT_FALSE(spec.contains("hostNetwork") || spec.contains("hostPID") ||
                 spec.contains("hostIPC"));
    ASSERT_EQ(spec["containers"].size(), 1u);
    const json& container = spec["containers"][0];
    const json& sc = container["securityContext"];
    EXPECT_EQ(sc["runAsNonRoot"], true);
    EXPECT_EQ(sc["runAsUser"], uid);
    EXPECT_EQ(sc["readOnlyRootFilesystem"], true);
    EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
    EXPECT_EQ(sc["capabilities"], json::parse(R"({"drop":["ALL"]})"));
    EXPECT_EQ(sc["seccompProfile"]["type"], "RuntimeDefault");
    EXPECT_FALSE(sc.contains("privileged"));
    EXPECT_TRUE(container["resources"]["requests"].contains("cpu"));
    EXPECT_TRUE(container["resources"]["requests"].contains("memory"));
    EXPECT_TRUE(container["resources"]["limits"].contains("memory"));
    for (const json& mount : container["volumeMounts"]) EXPECT_EQ(mount["readOnly"], true);
  }
}

std::string ConfigChecksum(const std::vector<json>& objects) {
  return OnlyOfKind(objects, "Deployment")["spec"]["template"]["metadata"]["annotations"].value(
      "checksum/config", "");
}

TEST(ChartDeployment, ConfigChangeRollsThePods) {
  std::string base = ConfigChecksum(Render({}));
  EXPECT_THAT(base, ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_NE(ConfigChecksum(Render({}, {"parallelism=4"})), base);
  EXPECT_NE(ConfigChecksum(Render({}, {"profiles[0].schedulerName=other"})), base);
  EXPECT_NE(ConfigChecksum(Render({CiFile("two-profiles-values.yaml")})), base);
  EXPECT_NE(ConfigChecksum(Render({}, {"extenders[0].urlPrefix=http://127.0.0.1:9680",
                                       "extenders[0].filterVerb=filter"})),
            base);
  // Values outside the configuration leave the pods alone.
  EXPECT_EQ(ConfigChecksum(Render({}, {"resources.requests.cpu=1", "podLabels.team=a"})), base);
}

TEST(ChartDeployment, ProbesServiceAndScrapesUseTheSecurePortOverHttps) {
  for (const std::string& file : CiValuesFiles()) {
    SCOPED_TRACE(Basename(file));
    const bool own_certificate = Basename(file) == "tls-values.yaml";
    std::vector<json> objects = Render({file});
    json spec = PodSpec(objects);
    const json& container = spec["containers"][0];
    EXPECT_EQ(container["ports"],
              json::array({{{"name", "https"}, {"containerPort", 10259}, {"protocol", "TCP"}}}));
    EXPECT_EQ(container["livenessProbe"]["httpGet"],
              json({{"path", "/livez"}, {"port", "https"}, {"scheme", "HTTPS"}}));
    EXPECT_EQ(container["readinessProbe"]["httpGet"],
              json({{"path", "/readyz"}, {"port", "https"}, {"scheme", "HTTPS"}}));
    std::vector<std::string> args = container["args"];
    EXPECT_THAT(args, ::testing::Contains("--secure-port=10259"));
    EXPECT_THAT(args, ::testing::Contains("--bind-address=0.0.0.0"));
    EXPECT_THAT(args, ::testing::Contains("--config=/etc/berth/config/config.yaml"));
    for (const std::string& arg : args) {
      EXPECT_EQ(arg.rfind("--port", 0), std::string::npos) << "no plain-HTTP port: " << arg;
    }
    EXPECT_EQ(std::count(args.begin(), args.end(), "--tls-cert-file=/etc/berth/tls/tls.crt"),
              own_certificate ? 1 : 0);
    EXPECT_EQ(std::count(args.begin(), args.end(), "--tls-private-key-file=/etc/berth/tls/tls.key"),
              own_certificate ? 1 : 0);
    json tls;
    for (const json& volume : spec["volumes"]) {
      if (volume["name"] == "tls") tls = volume;
    }
    EXPECT_EQ(tls.is_null(), !own_certificate);
    if (own_certificate) {
      EXPECT_EQ(tls["secret"]["secretName"], "berth-tls");
    }

    json service = OnlyOfKind(objects, "Service");
    EXPECT_EQ(service["spec"]["ports"],
              json::parse(R"([{"name":"https","port":10259,"targetPort":"https",
                               "protocol":"TCP"}])"));
    EXPECT_EQ(service["spec"]["selector"],
              OnlyOfKind(objects, "Deployment")["spec"]["selector"]["matchLabels"]);
  }
}

// A client CA ConfigMap is mounted as a directory (so its updates reach the file) and passed as
// --client-ca-file; without one, neither.
TEST(ChartDeployment, AClientCaConfigMapIsMountedAndPassed) {
  const std::string flag = "--client-ca-file=/etc/berth/client-ca/ca.crt";
  for (const std::string& file : CiValuesFiles()) {
    SCOPED_TRACE(Basename(file));
    json plain = PodSpec(Render({file}));
    EXPECT_THAT(plain["containers"][0]["args"].get<std::vector<std::string>>(),
                ::testing::Not(::testing::Contains(flag)));
    json spec = PodSpec(Render(
        {file}, {"server.tls.clientCAConfigMap=scrapers-ca", "server.tls.clientCAKey=bundle.pem"}));
    const json& container = spec["containers"][0];
    EXPECT_THAT(container["args"].get<std::vector<std::string>>(), ::testing::Contains(flag));
    EXPECT_THAT(
        container["volumeMounts"],
        ::testing::Contains(json(
            {{"name", "client-ca"}, {"mountPath", "/etc/berth/client-ca"}, {"readOnly", true}})));
    EXPECT_THAT(spec["volumes"],
                ::testing::Contains(json::parse(R"({"name":"client-ca","configMap":{
                  "name":"scrapers-ca","items":[{"key":"bundle.pem","path":"ca.crt"}]}})")));
  }
}

// Each extenderTLS Secret is a read-only volume at /etc/berth/extenders/<name>/, readable by the
// scheduler's group only, where an extender's tlsConfig or an endpoint's tls files point; without
// any, no such volume.
TEST(ChartDeployment, ExtenderTlsSecretsAreMountedReadOnlyByName) {
  json spec = PodSpec(Render({CiFile("extenders-values.yaml")}));
  const json& container = spec["containers"][0];
  EXPECT_THAT(container["volumeMounts"],
              ::testing::IsSupersetOf({json::parse(R"({"name":"extender-tls-0",
                  "mountPath":"/etc/berth/extenders/gpu-extender-tls","readOnly":true})"),
                                       json::parse(R"({"name":"extender-tls-1",
                  "mountPath":"/etc/berth/extenders/gang-ca","readOnly":true})")}));
  // 0440: readable by the pod's fsGroup (the scheduler's group) only. Parsed as the chart's YAML
  // is.
  EXPECT_THAT(spec["volumes"], ::testing::IsSupersetOf(ParseYamlDocuments(R"(
name: extender-tls-0
secret: {secretName: gpu-extender-tls, defaultMode: 0440}
---
name: extender-tls-1
secret: {secretName: gang-ca, defaultMode: 0440}
)")));
  // Still the locked-down pod: nothing else changes.
  EXPECT_EQ(container["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(spec["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(spec["automountServiceAccountToken"], true);

  for (const std::string& file : CiValuesFiles()) {
    if (Basename(file) == "extenders-values.yaml") continue;
    SCOPED_TRACE(Basename(file));
    for (const json& volume : PodSpec(Render({file}))["volumes"]) {
      EXPECT_EQ(std::string(volume["name"]).rfind("extender-tls", 0), std::string::npos);
    }
  }
  // Set on its own, over the defaults.
  spec = PodSpec(Render({}, {"extenderTLS.secretNames={mtls}"}));
  EXPECT_THAT(spec["containers"][0]["volumeMounts"],
              ::testing::Contains(json::parse(R"({"name":"extender-tls-0",
                  "mountPath":"/etc/berth/extenders/mtls","readOnly":true})")));
}

// The /debug endpoints are on (behind the secure port's authorization) unless turned off, and
// then one flag, whatever else the server is set to.
TEST(ChartDeployment, DebugEndpointsOnUnlessTurnedOff) {
  const std::string flag = "--enable-debug-endpoints=false";
  auto args = [](const std::vector<json>& objects) {
    return PodSpec(objects)["containers"][0]["args"].get<std::vector<std::string>>();
  };
  for (const std::string& file : CiValuesFiles()) {
    SCOPED_TRACE(Basename(file));
    EXPECT_THAT(args(Render({file})), ::testing::Not(::testing::Contains(flag)));
    const std::vector<std::string> off = args(Render({file}, {"server.debugEndpoints=false"}));
    EXPECT_EQ(std::count(off.begin(), off.end(), flag), 1);
  }
  // A flag, not configuration: the config (and its checksum) is the same either way.
  EXPECT_EQ(ConfigChecksum(Render({}, {"server.debugEndpoints=false"})),
            ConfigChecksum(Render({})));
}

// Reading /debug/ takes a role of its own, apart from scraping /metrics, and only while the
// endpoints are served.
TEST(ChartRbac, DebugReaderRoleGrantsTheDebugPathsAndBindsTheListedServiceAccounts) {
  auto objects = Render({}, {"rbac.debugReader.serviceAccounts[0].name=sre",
                             "rbac.debugReader.serviceAccounts[0].namespace=ops"});
  json role, binding;
  for (const auto& o : objects) {
    if (o["metadata"]["name"] != "berth-debug-reader") continue;
    (o["kind"] == "ClusterRole" ? role : binding) = o;
  }
  EXPECT_EQ(role["rules"], json::parse(R"([
    {"nonResourceURLs": ["/debug/pods", "/debug/pods/*"], "verbs": ["get"]},
    {"nonResourceURLs": ["/debug/simulate"], "verbs": ["post"]}])"));
  EXPECT_EQ(binding["roleRef"]["name"], "berth-debug-reader");
  EXPECT_EQ(binding["subjects"], json::parse(R"([
    {"kind": "ServiceAccount", "name": "sre", "namespace": "ops"}])"));
  for (const auto& o : Render({}, {"server.debugEndpoints=false"})) {
    EXPECT_NE(o["metadata"]["name"], "berth-debug-reader") << o["kind"];
  }
}
TEST(ChartServiceMonitor, ScrapesHttpsWithPrometheusTokenSkippingVerifyOnlyForSelfSigned) {
  json endpoint = OnlyOfKind(Render({CiFile("ha-servicemonitor-values.yaml")}),
                             "ServiceMonitor")["spec"]["endpoints"][0];
  EXPECT_EQ(endpoint, json::parse(R"({"port":"https","path":"/metrics","scheme":"https",
    "interval":"15s","scrapeTimeout":"5s",
    "bearerTokenFile":"/var/run/secrets/kubernetes.io/serviceaccount/token",
    "tlsConfig":{"insecureSkipVerify":true}})"));

  // The operator's certificate: verified as tlsConfig says, never skipped.
  endpoint =
      OnlyOfKind(Render({CiFile("tls-values.yaml")}), "ServiceMonitor")["spec"]["endpoints"][0];
  EXPECT_EQ(endpoint["tlsConfig"], json::parse(R"({"serverName":"berth.berth-system.svc",
    "ca":{"secret":{"name":"berth-tls","key":"ca.crt"}}})"));

  // A token from a Secret instead of Prometheus's own.
  endpoint = OnlyOfKind(Render({}, {"serviceMonitor.enabled=true",
                                    "serviceMonitor.authorization.credentials.name=scraper",
                                    "serviceMonitor.authorization.credentials.key=token"}),
                        "ServiceMonitor")["spec"]["endpoints"][0];
  EXPECT_EQ(endpoint["authorization"],
            json::parse(R"({"credentials":{"name":"scraper","key":"token"}})"));
  EXPECT_FALSE(endpoint.contains("bearerTokenFile"));
}

// ---- Leader election ---------------------------------------------------------------------------

std::string ConfigText(const std::vector<json>& objects) {
  return OnlyOfKind(objects, "ConfigMap")["data"]["config.yaml"];
}

std::set<std::string> KnownPlugins() {
  std::set<std::string> known;
  for (const auto& [name, factory] : plugins::registry::InTree()) known.insert(name);
  return known;
}

TEST(ChartLeaderElection, OnExactlyWhenMoreThanOneReplica) {
  struct Case {
    std::vector<std::string> sets;
    bool leader_elect;
    std::string strategy;
  };
  for (const Case& c :
       {Case{{}, false, "Recreate"}, Case{{"replicas=2"}, true, "RollingUpdate"},
        Case{{"leaderElection.enabled=true"}, true, "RollingUpdate"},
        Case{{"replicas=3", "leaderElection.enabled=true"}, true, "RollingUpdate"}}) {
    SCOPED_TRACE(::testing::PrintToString(c.sets));
    std::vector<json> objects = Render({}, c.sets);
    config::Configuration cfg =
        config::LoadString(ConfigText(objects), "config.yaml", KnownPlugins());
    EXPECT_EQ(cfg.leader_election.leader_elect, c.leader_elect);
    EXPECT_EQ(cfg.leader_election.resource_namespace, kNamespace);
    EXPECT_EQ(cfg.leader_election.resource_name, "berth");
    EXPECT_EQ(OnlyOfKind(objects, "Deployment")["spec"]["strategy"]["type"], c.strategy);
    EXPECT_EQ(OfKind(objects, "Role").size(), c.leader_elect ? 1u : 0u);
  }
  EXPECT_THAT(
      [] {
        HelmTemplate("berth", kNamespace, {}, {"replicas=2", "leaderElection.enabled=false"});
      },
      ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("leaderElection.enabled")));
}

// ---- The configuration berth-scheduler reads ----------------------------------------------------

TEST(ChartConfig, EveryRenderedConfigLoadsInBerth) {
  for (const std::string& file : CiValuesFiles()) {
    SCOPED_TRACE(Basename(file));
    std::string text = ConfigText(Render({file}));
    EXPECT_NO_THROW(config::LoadString(text, Basename(file), KnownPlugins())) << text;
  }
}

TEST(ChartConfig, ValuesReachTheConfiguration) {
  config::Configuration cfg = config::LoadString(
      ConfigText(Render({CiFile("two-profiles-values.yaml")})), "two-profiles", KnownPlugins());
  EXPECT_EQ(cfg.parallelism, 8);
  EXPECT_EQ(cfg.percentage_of_nodes_to_score, 30);
  EXPECT_EQ(cfg.pod_initial_backoff_seconds, 2);
  EXPECT_EQ(cfg.pod_max_backoff_seconds, 20);
  EXPECT_EQ(cfg.client_connection.qps, 100.0);
  EXPECT_EQ(cfg.client_connection.burst, 200);
  ASSERT_EQ(cfg.profiles.size(), 2u);
  EXPECT_EQ(cfg.profiles[0].scheduler_name, "berth-scheduler");
  EXPECT_EQ(cfg.profiles[0].percentage_of_nodes_to_score, 50);
  ASSERT_EQ(cfg.profiles[0].plugins.score.enabled.size(), 2u);
  EXPECT_EQ(cfg.profiles[0].plugins.score.enabled[0], (config::PluginRef{"NodeResourcesFit", 10}));
  ASSERT_EQ(cfg.profiles[0].plugin_config.size(), 1u);
  EXPECT_EQ(cfg.profiles[0].plugin_config[0].args["scoringStrategy"]["type"], "MostAllocated");
  EXPECT_EQ(cfg.profiles[0].plugin_config[0].args["scoringStrategy"]["resources"][1]["weight"], 2);
  EXPECT_EQ(cfg.profiles[1].scheduler_name, "berth-batch");

  cfg = config::LoadString(ConfigText(Render({CiFile("ha-servicemonitor-values.yaml")})), "ha",
                           KnownPlugins());
  EXPECT_TRUE(cfg.leader_election.leader_elect);
  EXPECT_EQ(cfg.leader_election.resource_name, "berth-leader");
  EXPECT_EQ(cfg.leader_election.lease_duration, std::chrono::seconds(30));
  EXPECT_EQ(cfg.leader_election.renew_deadline, std::chrono::seconds(20));
  EXPECT_EQ(cfg.leader_election.retry_period, std::chrono::seconds(4));
}

// `extenders` reaches berth-scheduler's configuration field by field, as kube-scheduler would read
// it; the managed resource the extender takes over is left alone by NodeResourcesFit.
TEST(ChartConfig, ExtendersReachTheConfiguration) {
  config::Configuration cfg = config::LoadString(
      ConfigText(Render({CiFile("extenders-values.yaml")})), "extenders", KnownPlugins());
  ASSERT_EQ(cfg.extenders.size(), 1u);
  const config::Extender& e = cfg.extenders[0];
  EXPECT_EQ(e.url_prefix, "https://gpu-extender.gpu-system.svc:8443/scheduler");
  EXPECT_EQ(e.filter_verb, "filter");
  EXPECT_EQ(e.prioritize_verb, "prioritize");
  EXPECT_EQ(e.weight, 2);
  EXPECT_EQ(e.http_timeout, std::chrono::seconds(3));
  EXPECT_TRUE(e.node_cache_capable);
  EXPECT_FALSE(e.ignorable);
  ASSERT_TRUE(e.tls_config.has_value());
  EXPECT_EQ(e.tls_config->server_name, "gpu-extender.gpu-system.svc");
  EXPECT_EQ(e.tls_config->ca_file, "/etc/berth/extenders/gpu-extender-tls/ca.crt");
  EXPECT_EQ(e.tls_config->cert_file, "/etc/berth/extenders/gpu-extender-tls/tls.crt");
  EXPECT_EQ(e.tls_config->key_file, "/etc/berth/extenders/gpu-extender-tls/tls.key");
  EXPECT_EQ(e.managed_resources,
            (std::vector<config::ExtenderManagedResource>{{"example.com/gpu", true}}));
  ASSERT_EQ(cfg.profiles.size(), 1u);
  bool ignored = false;
  for (const config::PluginConfig& pc : cfg.profiles[0].plugin_config) {
    if (pc.name != "NodeResourcesFit") continue;
    ignored = pc.args["ignoredResources"] == json::array({"example.com/gpu"});
  }
  EXPECT_TRUE(ignored) << "NodeResourcesFit's ignoredResources";

  // Without the value, no `extenders` at all.
  EXPECT_THAT(ConfigText(Render({})), ::testing::Not(HasSubstr("extenders")));
}

TEST(ChartConfig, DuplicateSchedulerNamesFailClearly) {
  std::string file =
      testing::WriteTempFile("dup.yaml", "profiles:\n  - schedulerName: a\n  - schedulerName: a\n");
  EXPECT_THAT([&] { HelmTemplate("berth", kNamespace, {file}); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("\"a\" appears twice")));
}

// ---- manifests/berth.yaml -----------------------------------------------------------------------

TEST(Manifests, MatchAFreshRenderOfTheChart) {
  std::string committed = ReadFile(testing::RepoRoot() + "/manifests/berth.yaml");
  CommandResult fresh =
      RunCommand({"env", "HELM=" + ToolPath("helm"),
                  testing::RepoRoot() + "/deploy/render-manifests.sh", "--stdout"});
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_TRUE(committed == fresh.out)
      << "manifests/berth.yaml is stale: run deploy/render-manifests.sh";

  std::vector<json> objects = ParseYamlDocuments(committed);
  ASSERT_FALSE(objects.empty());
  EXPECT_EQ(objects[0]["kind"], "Namespace");
  EXPECT_EQ(objects[0]["metadata"]["name"], kNamespace);
  EXPECT_THAT(committed.substr(0, committed.find("\n---")),
              HasSubstr("Generated by deploy/render-manifests.sh"));
  // Everything else is the chart with its defaults.
  objects.erase(objects.begin());
  EXPECT_EQ(objects, Render({}));
}

}  // namespace
}  // namespace berth::packaging
