// Every object charts/berth renders, for every ci/ values file, is accepted by the real
// kube-apiserver of the local control plane: a server-side dry run (admission and validation
// run, nothing is stored) with strict field validation, so a misspelt or misplaced field fails
// here rather than being dropped at install time. The ServiceMonitor is checked against
// prometheus-operator's own CRD, and the scheduler pod against the restricted Pod Security
// Standard.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "pkg/client/client.h"
#include "test/packaging/chart.h"
#include "test/testing/cluster.h"

namespace berth::packaging {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr char kDryRun[] = "?dryRun=All&fieldValidation=Strict";
constexpr char kServiceMonitorCrd[] = "servicemonitors.monitoring.coreos.com";

struct Collection {
  std::string prefix;  // "/api/v1" or "/apis/<group>/<version>"
  std::string plural;
  bool namespaced;
};

// Where each kind the chart renders is created. A new kind in the chart fails the test until it
// is added here (and so validated).
const std::map<std::string, Collection>& Collections() {
  static const std::map<std::string, Collection> collections = {
      {"Namespace", {"/api/v1", "namespaces", false}},
      {"ServiceAccount", {"/api/v1", "serviceaccounts", true}},
      {"ConfigMap", {"/api/v1", "configmaps", true}},
      {"Service", {"/api/v1", "services", true}},
      {"Pod", {"/api/v1", "pods", true}},
      {"ClusterRole", {"/apis/rbac.authorization.k8s.io/v1", "clusterroles", false}},
      {"ClusterRoleBinding", {"/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", false}},
      {"Role", {"/apis/rbac.authorization.k8s.io/v1", "roles", true}},
      {"RoleBinding", {"/apis/rbac.authorization.k8s.io/v1", "rolebindings", true}},
      {"Deployment", {"/apis/apps/v1", "deployments", true}},
      {"PodDisruptionBudget", {"/apis/policy/v1", "poddisruptionbudgets", true}},
      {"ServiceMonitor", {"/apis/monitoring.coreos.com/v1", "servicemonitors", true}},
      {"CustomResourceDefinition",
       {"/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", false}},
  };
  return collections;
}

std::string CollectionPath(const json& object) {
  std::string kind = object.value("kind", "");
  auto it = Collections().find(kind);
  if (it == Collections().end()) {
    throw std::runtime_error("no collection known for kind " + kind + "; add it to Collections()");
  }
  const Collection& c = it->second;
  std::string expected_prefix = c.prefix == "/api/v1" ? "v1" : c.prefix.substr(6);
  if (object.value("apiVersion", "") != expected_prefix) {
    throw std::runtime_error(kind + " has apiVersion " + object.value("apiVersion", "") +
                             ", expected " + expected_prefix);
  }
  if (!c.namespaced) return c.prefix + "/" + c.plural;
  return c.prefix + "/namespaces/" + object["metadata"]["namespace"].get<std::string>() + "/" +
         c.plural;
}

std::string Describe(const json& object) {
  return object.value("kind", "?") + " " + object["metadata"].value("name", "?");
}

class ChartApiserver : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The CRD is cluster-wide and shared by every run: create it once, never delete it.
    auto client = testing::AdminClient();
    std::vector<json> docs = ParseYamlDocuments(ReadFile(ToolPath("servicemonitor-crd.yaml")));
    ASSERT_EQ(docs.size(), 1u);
    ASSERT_EQ(docs[0]["metadata"]["name"], kServiceMonitorCrd);
    try {
      client->Post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", docs[0]);
    } catch (const client::ApiError& e) {
      ASSERT_EQ(e.reason(), client::ErrorReason::kAlreadyExists) << e.what();
    }
    bool established = testing::Eventually(
        [&] {
          json crd = client->Get(std::string("/apis/apiextensions.k8s.io/v1/"
                                             "customresourcedefinitions/") +
                                 kServiceMonitorCrd);
          for (const json& condition : crd["status"].value("conditions", json::array())) {
            if (condition["type"] == "Established" && condition["status"] == "True") return true;
          }
          return false;
        },
        30s);
    ASSERT_TRUE(established) << kServiceMonitorCrd << " never became Established";
  }

  void SetUp() override {
    client_ = testing::AdminClient();
    ns_ = std::make_unique<testing::TestNamespace>(client_, "berth-chart");
    // Pods in it are held to the restricted standard, enforced on create (dry run included).
    client_->Patch("/api/v1/namespaces/" + ns_->name(),
                   {{"metadata",
                     {{"labels",
                       {{"pod-security.kubernetes.io/enforce", "restricted"},
                        {"pod-security.kubernetes.io/enforce-version", "latest"}}}}}},
                   client::PatchType::kMerge);
  }

  // Dry-run creates `object`; returns the apiserver's message on failure, "" on success. A kind
  // whose CRD was just created may take a moment to be served. A cluster-scoped object that exists
  // already (the PodGroup CRD, shared by every test run) is dry-run replaced instead.
  std::string DryRunCreate(json object) {
    std::string path = CollectionPath(object) + kDryRun;
    if (object["kind"] == "CustomResourceDefinition") {
      const std::string item =
          CollectionPath(object) + "/" + object["metadata"]["name"].get<std::string>();
      try {
        object["metadata"]["resourceVersion"] = client_->Get(item)["metadata"]["resourceVersion"];
        client_->Put(item + kDryRun, object);
        return "";
      } catch (const client::ApiError& e) {
        if (e.reason() != client::ErrorReason::kNotFound) return e.what();
      }
    }
    std::string error;
    testing::Eventually(
        [&] {
          try {
            client_->Post(path, object);
            error.clear();
            return true;
          } catch (const client::ApiError& e) {
            error = e.what();
            return e.reason() != client::ErrorReason::kNotFound;
          }
        },
        20s);
    return error;
  }

  // The pod the Deployment would create, as its ReplicaSet would stamp it out.
  json PodFrom(const json& deployment) {
    const json& tmpl = deployment["spec"]["template"];
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", tmpl["metadata"]},
                {"spec", tmpl["spec"]}};
    pod["metadata"]["name"] = deployment["metadata"]["name"].get<std::string>() + "-pod";
    pod["metadata"]["namespace"] = deployment["metadata"]["namespace"];
    return pod;
  }

  std::shared_ptr<client::Client> client_;
  std::unique_ptr<testing::TestNamespace> ns_;
};

TEST_F(ChartApiserver, EveryRenderedObjectOfEveryCiValuesFileIsAccepted) {
  std::vector<std::string> files = CiValuesFiles();
  ASSERT_GE(files.size(), 4u);
  for (const std::string& file : files) {
    std::string name = std::filesystem::path(file).filename().string();
    SCOPED_TRACE(name);
    // A release name of its own keeps the cluster-scoped names clear of real installs.
    std::string release = "berth-" + testing::UniqueSuffix();
    std::vector<json> objects = ParseYamlDocuments(HelmTemplate(release, ns_->name(), {file}));
    ASSERT_FALSE(objects.empty());
    for (const json& object : objects) {
      EXPECT_EQ(DryRunCreate(object), "") << name << ": " << Describe(object);
      if (object["kind"] == "Deployment") {
        json pod = PodFrom(object);
        EXPECT_EQ(DryRunCreate(pod), "") << name << ": the Deployment's pod";
      }
    }
  }
}

TEST_F(ChartApiserver, ManifestsNamespaceIsAccepted) {
  // The rest of manifests/berth.yaml is the default render, checked above and by the drift test.
  std::vector<json> objects =
      ParseYamlDocuments(ReadFile(testing::RepoRoot() + "/manifests/berth.yaml"));
  ASSERT_FALSE(objects.empty());
  json ns = objects[0];
  ASSERT_EQ(ns["kind"], "Namespace");
  ns["metadata"]["name"] = "berth-manifests-" + testing::UniqueSuffix();
  EXPECT_EQ(DryRunCreate(ns), "");
}

// NOTES.txt as helm install prints it (a server-side dry run: nothing is installed): how to ask
// explain and simulate through the port-forward when the debug endpoints are on (the secure port,
// a token of an account bound to the debug reader); how to turn them on when they are off.
TEST_F(ChartApiserver, NotesTellHowToExplainAPendingPod) {
  auto notes = [&](const std::vector<std::string>& sets) {
    // The PodGroup CRD, shared by every test run, already exists: install would refuse it.
    std::vector<std::string> argv = {ToolPath("helm"),
                                     "install",
                                     "berth-" + testing::UniqueSuffix(),
                                     ChartDir(),
                                     "--namespace",
                                     ns_->name(),
                                     "--dry-run=server",
                                     "--kubeconfig",
                                     testing::ClusterDir() + "/kubeconfig",
                                     "--set",
                                     "podGroup.installCRD=false"};
    for (const std::string& set : sets) {
      argv.push_back("--set");
      argv.push_back(set);
    }
    CommandResult result = RunCommand(argv);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    const size_t at = result.out.find("NOTES:");
    return at == std::string::npos ? std::string() : result.out.substr(at);
  };
  const std::string on = notes({});
  const std::string flags =
      " --server https://127.0.0.1:10259 --token-file berth.token "
      "--insecure-skip-tls-verify\n";
  EXPECT_NE(on.find("berth-scheduler explain NAMESPACE/POD" + flags), std::string::npos) << on;
  EXPECT_NE(on.find("berth-scheduler simulate -f pod.yaml" + flags), std::string::npos) << on;
  EXPECT_NE(on.find("bind berth-"), std::string::npos) << on;

  const std::string off = notes({"server.debugEndpoints=false"});
  EXPECT_NE(off.find("install\nwith --set server.debugEndpoints=true"), std::string::npos) << off;
  EXPECT_EQ(off.find("berth-scheduler explain NAMESPACE/POD --server"), std::string::npos) << off;

  // A certificate of the operator's can be verified.
  const std::string tls = notes({"server.tls.secretName=berth-tls"});
  EXPECT_NE(tls.find("--certificate-authority CA.crt"), std::string::npos) << tls;
}

// The chart's PodGroup CRD (installed for real: it is shared, and this checkout's copy is the one
// to validate with) keeps a valid schedulingConstraints as written and refuses what Berth could
// not read: an unknown topologyPolicy, a fourth level, a key that is no label key, a key twice.
TEST_F(ChartApiserver, PodGroupCrdValidatesSchedulingConstraints) {
  packaging::ApplyPodGroupCrd(*client_);
  const std::string path =
      "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/" + ns_->name() + "/podgroups" + kDryRun;
  auto group = [&](const json& constraints) {
    return json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                {"kind", "PodGroup"},
                {"metadata", {{"name", "train"}, {"namespace", ns_->name()}}},
                {"spec", {{"minMember", 4}, {"schedulingConstraints", constraints}}}};
  };
  const json valid = {{"topology", json::array({{{"key", "topology.kubernetes.io/rack"}},
                                                {{"key", "topology.kubernetes.io/zone"}}})},
                      {"topologyPolicy", "Preferred"}};
  // A replaced CRD's schema takes a moment to be the one applied.
  json created;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        try {
          created = client_->Post(path, group(valid));
        } catch (const client::ApiError&) {
          return false;
        }
        return created["spec"].contains("schedulingConstraints");
      },
      30s))
      << created.dump();
  EXPECT_EQ(created["spec"]["schedulingConstraints"], valid);

  auto refused = [&](const json& constraints) {
    try {
      client_->Post(path, group(constraints));
    } catch (const client::ApiError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refused({{"topology", valid["topology"]}, {"topologyPolicy", "Sometimes"}})
                .find("Unsupported value: \"Sometimes\""),
            std::string::npos);
  json four = valid;
  four["topology"].push_back({{"key", "topology.kubernetes.io/region"}});
  four["topology"].push_back({{"key", "kubernetes.io/hostname"}});
  EXPECT_NE(refused(four).find("must have at most 3 items"), std::string::npos);
  EXPECT_NE(refused({{"topology", json::array({{{"key", "rack id"}}})}}).find("should match"),
            std::string::npos);
  EXPECT_NE(refused({{"topology", json::array({{{"key", "rack"}}, {{"key", "rack"}}})}})
                .find("Duplicate value"),
            std::string::npos);
  EXPECT_NE(refused({{"topology", json::array({json::object()})}}).find("Required value"),
            std::string::npos);
}

// The checks above would be worthless if the dry run accepted anything.
TEST_F(ChartApiserver, DryRunRejectsWhatIsWrong) {
  std::vector<json> objects =
      ParseYamlDocuments(HelmTemplate("berth-" + testing::UniqueSuffix(), ns_->name(),
                                      {ChartDir() + "/ci/ha-servicemonitor-values.yaml"}));
  json deployment = OnlyOfKind(objects, "Deployment");
  deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["paht"] =
      "/readyz";
  EXPECT_NE(DryRunCreate(deployment), "") << "an unknown field was accepted";

  json pod = PodFrom(OnlyOfKind(objects, "Deployment"));
  pod["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = true;
  EXPECT_NE(DryRunCreate(pod), "") << "the restricted Pod Security Standard was not enforced";

  json monitor = OnlyOfKind(objects, "ServiceMonitor");
  monitor["spec"]["endpoints"][0]["scheme"] = "gopher";
  EXPECT_NE(DryRunCreate(monitor), "") << "the ServiceMonitor CRD's schema was not applied";
}

}  // namespace
}  // namespace berth::packaging
