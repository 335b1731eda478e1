// /readyz tells an orchestrator whether the scheduler can work; /livez only whether it is alive.
// A scheduler whose credentials cannot list pods must be alive but not ready, say why, and become
// ready by itself once access is granted.

#include <gtest/gtest.h>

#include "e2e/harness.h"
#include "test/testing/cluster.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;

TEST(ProbesE2E, ReadyzWaitsForInformerSyncWhileLivezStaysUp) {
  const std::string scheduler = "berth-e2e-" + testing::UniqueSuffix();
  // The identity may not review the token the reasons are read with: the reviews go through
  // the admin kubeconfig.
  BerthProcess berth("probes", SchedulerConfig(scheduler, false),
                     testing::ClusterDir() + "/kubeconfig-noperms",
                     {"--authentication-kubeconfig", testing::ClusterDir() + "/kubeconfig",
                      "--authorization-kubeconfig", testing::ClusterDir() + "/kubeconfig"});
  ASSERT_EQ(HttpGet(berth.url() + "/livez").status, 200) << berth.Log();

  // Forbidden: not ready, and the probe body says which check fails and why to an authenticated
  // caller; an anonymous one (a kubelet's probe) gets the status and no reason.
  HttpReply not_ready;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        not_ready = HttpGet(berth.url() + "/readyz", ScraperToken());
        return not_ready.body.find("forbidden") != std::string::npos ||
               not_ready.body.find("Forbidden") != std::string::npos;
      },
      20s))
      << not_ready.body;
  EXPECT_EQ(not_ready.status, 500);
  EXPECT_NE(not_ready.body.find("[-]informer-pods failed"), std::string::npos) << not_ready.body;
  EXPECT_NE(not_ready.body.find("[-]informer-nodes failed"), std::string::npos) << not_ready.body;
  const HttpReply anonymous = HttpGet(berth.url() + "/readyz");
  EXPECT_EQ(anonymous.status, 500);
  EXPECT_EQ(anonymous.body.find("forbidden"), std::string::npos) << anonymous.body;
  EXPECT_EQ(anonymous.body.find("informer-pods"), std::string::npos) << anonymous.body;
  EXPECT_EQ(HttpGet(berth.url() + "/livez").status, 200);
  EXPECT_TRUE(berth.process().Running());

  // What the informers need, for the no-permissions user; removed at the end so other tests still
  // see that user forbidden.
  testing::ClusterRoleGrant grant(
      testing::AdminClient(), "berth-e2e-probes-" + testing::UniqueSuffix(),
      {{{"apiGroups", {""}},
        {"resources", {"pods", "nodes", "namespaces", "services", "replicationcontrollers"}},
        {"verbs", {"get", "list", "watch"}}},
       {{"apiGroups", {"apps"}},
        {"resources", {"replicasets", "statefulsets"}},
        {"verbs", {"get", "list", "watch"}}},
       {{"apiGroups", {"policy"}},
        {"resources", {"poddisruptionbudgets"}},
        {"verbs", {"get", "list", "watch"}}},
       // Coscheduling's, for whichever PodGroup APIs are served.
       {{"apiGroups", {"scheduling.x-k8s.io", "scheduling.k8s.io"}},
        {"resources", {"podgroups"}},
        {"verbs", {"get", "list", "watch"}}},
       // The volume plugins'.
       {{"apiGroups", {""}},
        {"resources", {"persistentvolumeclaims", "persistentvolumes"}},
        {"verbs", {"get", "list", "watch"}}},
       {{"apiGroups", {"storage.k8s.io"}},
        {"resources",
         {"storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments"}},
        {"verbs", {"get", "list", "watch"}}},
       // DynamicResources' (devicetaintrules only once discovery finds them served).
       {{"apiGroups", {"resource.k8s.io"}},
        {"resources", {"resourceclaims", "deviceclasses", "resourceslices", "devicetaintrules"}},
        {"verbs", {"get", "list", "watch"}}}},
      {{"apiGroup", "rbac.authorization.k8s.io"},
       {"kind", "User"},
       {"name", "berth-test-noperms"}});
  HttpReply ready;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        ready = HttpGet(berth.url() + "/readyz");
        return ready.status == 200;
      },
      60s))
      << ready.body << "\n"
      << berth.Log();
  EXPECT_EQ(HttpGet(berth.url() + "/livez").status, 200);
}

}  // namespace
}  // namespace berth::e2e
