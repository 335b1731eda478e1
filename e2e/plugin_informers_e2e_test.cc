// A plugin that reads a resource the scheduler itself never watches (test/outoftree's
// NamespaceLabelGate lists Namespaces through the Handle) gets exactly that informer: it is
// started because the plugin asked, its events requeue the pods the plugin rejected, and an
// identity that may not list it is reported in /readyz. An informer no enabled plugin asks for is
// never started, so an identity with only the rights of the profile's plugins becomes ready.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e/harness.h"
#include "pkg/client/client.h"
#include "test/testing/cluster.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kGateLabel = "example.com/berth-allowed";

std::string GateConfig(const std::string& scheduler_name) {
  return "apiVersion: kubescheduler.config.k8s.io/v1\n"
         "kind: KubeSchedulerConfiguration\n"
         "leaderElection:\n  leaderElect: false\n"
         "profiles:\n"
         "- schedulerName: " +
         scheduler_name +
         "\n"
         "  plugins:\n"
         "    preFilter:\n"
         "      enabled: [{name: NamespaceLabelGate}]\n"
         "  pluginConfig:\n"
         "  - name: NamespaceLabelGate\n"
         "    args: {label: " +
         kGateLabel + "}\n";
}

bool HasFailedScheduling(client::Client& client, const std::string& ns, const std::string& pod,
                         const std::string& text) {
  auto events = client.Get(client::EventsResource().Path(ns));
  for (const auto& e : events["items"]) {
    if (e["regarding"]["name"] == pod && e["reason"] == "FailedScheduling" &&
        e.value("note", "").find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST(PluginInformersE2E, APluginsListerFiltersAndItsResourceEventsRequeuePods) {
  auto admin = testing::AdminClient();
  testing::TestNamespace ns(admin, "e2e-nsgate");
  testing::TestNodes nodes(admin);
  nodes.Add("0", "4", "8Gi");
  const std::string scheduler = "berth-nsgate-" + testing::UniqueSuffix();
  BerthProcess berth("nsgate", GateConfig(scheduler), "", {}, "berth-scheduler-example");
  ASSERT_TRUE(
      testing::Eventually([&] { return HttpGet(berth.url() + "/readyz").status == 200; }, 30s))
      << HttpGet(berth.url() + "/readyz?verbose", ScraperToken()).body << berth.Log();
  // The checks are listed to an authenticated caller only.
  EXPECT_NE(HttpGet(berth.url() + "/readyz?verbose", ScraperToken())
                .body.find("[+]informer-namespaces ok"),
            std::string::npos)
      << HttpGet(berth.url() + "/readyz?verbose", ScraperToken()).body;

  auto pod = testing::PodManifest(ns.name(), "gated", scheduler);
  pod["spec"]["nodeSelector"] = {{"berth-it", nodes.id()}};
  admin->Post(client::PodsResource().Path(ns.name()), pod);
  const std::string reason = "namespace " + ns.name() + " lacks label " + kGateLabel;
  ASSERT_TRUE(testing::Eventually(
      [&] { return HasFailedScheduling(*admin, ns.name(), "gated", reason); }, 30s))
      << berth.Log();
  const std::string pod_path = client::PodsResource().Path(ns.name(), "gated");
  EXPECT_EQ(admin->Get(pod_path)["spec"].value("nodeName", ""), "");

  // Only the Namespace event can bring the pod back this soon: an unschedulable pod otherwise
  // waits for the five-minute flush.
  admin->Patch(client::NamespacesResource().Path("", ns.name()),
               {{"metadata", {{"labels", {{kGateLabel, "true"}}}}}},
               client::PatchType::kStrategicMerge);
  EXPECT_TRUE(testing::Eventually(
      [&] { return !admin->Get(pod_path)["spec"].value("nodeName", "").empty(); }, 30s))
      << berth.Log();
}

// A ServiceAccount with the chart's rights except namespaces (InterPodAffinity's informer, which
// Allow adds), a ClusterRole and binding for it, and a kubeconfig with its token; all removed on
// destruction.
class MinimalIdentity {
 public:
  MinimalIdentity(std::shared_ptr<client::Client> admin, const std::string& ns)
      : name_("berth-min-" + testing::UniqueSuffix()),
        rules_(nlohmann::json::array({
            {{"apiGroups", {""}},
             {"resources", {"pods", "nodes", "services", "replicationcontrollers"}},
             {"verbs", {"get", "list", "watch"}}},
            {{"apiGroups", {"apps"}},
             {"resources", {"replicasets", "statefulsets"}},
             {"verbs", {"get", "list", "watch"}}},
            {{"apiGroups", {"policy"}},
             {"resources", {"poddisruptionbudgets"}},
             {"verbs", {"get", "list", "watch"}}},
            {{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"delete"}}},
            {{"apiGroups", {""}}, {"resources", {"pods/binding"}}, {"verbs", {"create"}}},
            {{"apiGroups", {""}}, {"resources", {"pods/status"}}, {"verbs", {"patch"}}},
            {{"apiGroups", {"events.k8s.io"}},
             {"resources", {"events"}},
             {"verbs", {"create", "patch"}}},
            {{"apiGroups", {"scheduling.x-k8s.io"}},
             {"resources", {"podgroups"}},
             {"verbs", {"get", "list", "watch"}}},
            {{"apiGroups", {"scheduling.x-k8s.io"}},
             {"resources", {"podgroups/status"}},
             {"verbs", {"update", "patch"}}},
            {{"apiGroups", {"scheduling.k8s.io"}},
             {"resources", {"podgroups"}},
             {"verbs", {"get", "list", "watch"}}},
            {{"apiGroups", {"scheduling.k8s.io"}},
             {"resources", {"podgroups/status"}},
             {"verbs", {"patch"}}},
            // DynamicResources' informers (no pod here has a claim, so it writes nothing).
            {{"apiGroups", {"resource.k8s.io"}},
             {"resources",
              {"resourceclaims", "deviceclasses", "resourceslices", "devicetaintrules"}},
             {"verbs", {"get", "list", "watch"}}},
        })) {
    admin->Post(
        "/api/v1/namespaces/" + ns + "/serviceaccounts",
        {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", name_}}}});
    grant_ = std::make_unique<testing::ClusterRoleGrant>(
        admin, name_, rules_,
        nlohmann::json{{"kind", "ServiceAccount"}, {"name", name_}, {"namespace", ns}});
    auto token = admin
                     ->Post("/api/v1/namespaces/" + ns + "/serviceaccounts/" + name_ + "/token",
                            {{"apiVersion", "authentication.k8s.io/v1"},
                             {"kind", "TokenRequest"},
                             {"spec", {{"expirationSeconds", 3600}}}})["status"]["token"]
                     .get<std::string>();
    kubeconfig_ = (fs::temp_directory_path() / (name_ + ".kubeconfig")).string();
    const nlohmann::json config = {
        {"apiVersion", "v1"},
        {"kind", "Config"},
        {"clusters",
         {{{"name", "local"},
           {"cluster",
            {{"server", testing::AdminConfig().server},
             {"certificate-authority", testing::ClusterDir() + "/pki/ca.crt"}}}}}},
        {"users", {{{"name", name_}, {"user", {{"token", token}}}}}},
        {"contexts", {{{"name", name_}, {"context", {{"cluster", "local"}, {"user", name_}}}}}},
        {"current-context", name_}};
    std::ofstream(kubeconfig_) << config.dump();
  }
  ~MinimalIdentity() { fs::remove(kubeconfig_); }

  void Allow(const std::string& group, const std::string& resource) {
    rules_.push_back(
        {{"apiGroups", {group}}, {"resources", {resource}}, {"verbs", {"get", "list", "watch"}}});
    grant_->SetRules(rules_);
  }

  const std::string& kubeconfig() const { return kubeconfig_; }

 private:
  std::string name_;
  nlohmann::json rules_;
  std::unique_ptr<testing::ClusterRoleGrant> grant_;
  std::string kubeconfig_;
};

bool Forbidden(client::Client& client, const client::Resource& resource) {
  try {
    client.ListPageRaw(resource.Path(), {}, "");
    return false;
  } catch (const client::ApiError& e) {
    return e.reason() == client::ErrorReason::kForbidden;
  }
}

TEST(PluginInformersE2E, OnlyInformersEnabledPluginsNeedStartAndForbiddenListsShowInReadyz) {
  auto admin = testing::AdminClient();
  testing::TestNamespace ns(admin, "e2e-min-rbac");
  MinimalIdentity identity(admin, ns.name());
  auto as_identity = client::NewClient(client::LoadConfig(identity.kubeconfig()));
  // The grant takes a moment to reach the authorizer's cache.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        try {
          as_identity->ListPageRaw(client::NodesResource().Path(), {}, "");
          return true;
        } catch (const std::exception&) {
          return false;
        }
      },
      30s));
  ASSERT_TRUE(Forbidden(*as_identity, client::PersistentVolumeClaimsResource()));
  ASSERT_TRUE(Forbidden(*as_identity, client::NamespacesResource()));

  // Default profile without the plugins that read claims: InterPodAffinity lists Namespaces,
  // which the identity may not yet; no enabled plugin needs PVCs, so nothing lists them.
  BerthProcess berth("min-rbac",
                     SchedulerConfig("berth-min-" + testing::UniqueSuffix(), false) +
                         "  plugins:\n    multiPoint:\n      disabled:\n"
                         "      - name: VolumeRestrictions\n      - name: NodeVolumeLimits\n"
                         "      - name: VolumeBinding\n      - name: VolumeZone\n",
                     identity.kubeconfig(),
                     // The identity may not review the token /readyz?verbose is read with.
                     {"--authentication-kubeconfig", testing::ClusterDir() + "/kubeconfig",
                      "--authorization-kubeconfig", testing::ClusterDir() + "/kubeconfig"});
  // Informers list concurrently: the forbidden one may be reported before the others synced.
  // DefaultPreemption lists disruption budgets, which the identity may.
  std::string report;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        report = HttpGet(berth.url() + "/readyz?verbose", ScraperToken()).body;
        bool all = report.find("[-]informer-namespaces failed:") != std::string::npos &&
                   report.find("forbidden") != std::string::npos;
        for (const char* ok :
             {"pods", "nodes", "replicasets.apps", "poddisruptionbudgets.policy"}) {
          all = all && report.find("[+]informer-" + std::string(ok) + " ok") != std::string::npos;
        }
        return all;
      },
      30s))
      << report << berth.Log();
  EXPECT_NE(HttpGet(berth.url() + "/readyz").status, 200);
  EXPECT_EQ(report.find("persistentvolumeclaims"), std::string::npos) << report;

  identity.Allow("", "namespaces");
  EXPECT_TRUE(
      testing::Eventually([&] { return HttpGet(berth.url() + "/readyz").status == 200; }, 60s))
      << HttpGet(berth.url() + "/readyz?verbose", ScraperToken()).body << berth.Log();
}

}  // namespace
}  // namespace berth::e2e
