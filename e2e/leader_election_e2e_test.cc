// Two (then three) berth-scheduler replicas sharing one Lease with kube-scheduler's default
// timings: only the leader binds; SIGTERM hands over at once; kill -9 hands over once the lease
// expires; no pod is ever bound twice.

#include <gtest/gtest.h>
#include <signal.h>

#include "e2e/harness.h"
#include "e2e/pods.h"
#include "test/testing/cluster.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool Leading(const BerthProcess& p) {
  return p.Log().find("leading: scheduling starts") != std::string::npos;
}

double Scheduled(BerthProcess& p, const std::string& scheduler) {
  return p
      .Metric("scheduler_schedule_attempts_total{profile=\"" + scheduler +
              "\",result=\"scheduled\"}")
      .value_or(0);
}

// The count moves when the binding response is back, a moment after the apiserver shows the pod
// bound: wait for it to reach `pods` before comparing.
double ScheduledOnceSettled(BerthProcess& p, const std::string& scheduler, int pods) {
  testing::Eventually([&] { return Scheduled(p, scheduler) >= pods; }, 10s);
  return Scheduled(p, scheduler);
}

TEST(LeaderElectionE2E, OnlyTheLeaderBindsAndStandbysTakeOver) {
  auto client = testing::AdminClient();
  testing::TestNamespace ns(client, "e2e-le");
  testing::TestNodes nodes(client);
  for (int i = 0; i < 2; i++) nodes.Add(std::to_string(i), "16", "32Gi");
  const std::string suffix = testing::UniqueSuffix();
  const std::string scheduler = "berth-e2e-" + suffix;
  const std::string lease = "berth-e2e-" + suffix;
  const std::string config = SchedulerConfig(scheduler, true, lease);

  auto a = std::make_unique<BerthProcess>("le-a", config);
  ASSERT_TRUE(testing::Eventually([&] { return Leading(*a); }, 30s)) << a->Log();
  auto b = std::make_unique<BerthProcess>("le-b", config);
  // b is a ready standby: informers synced and the lease observed.
  ASSERT_TRUE(testing::Eventually([&] { return HttpGet(b->url() + "/readyz").status == 200; }, 30s))
      << b->Log();
  EXPECT_FALSE(Leading(*b));

  constexpr int kBatch = 10;
  CreatePods(*client, ns.name(), "first", kBatch, scheduler, nodes);
  ASSERT_TRUE(
      testing::Eventually([&] { return AllBound(*client, ns.name(), "first", kBatch); }, 60s));
  EXPECT_EQ(ScheduledOnceSettled(*a, scheduler, kBatch), kBatch);
  EXPECT_EQ(Scheduled(*b, scheduler), 0) << "a standby scheduled pods";

  // SIGTERM: a releases the lease on its way out and b takes over at once.
  auto lease_json =
      client->Get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/" + lease);
  const int transitions = lease_json["spec"].value("leaseTransitions", 0);
  const auto term_sent = Clock::now();
  EXPECT_EQ(a->process().Stop(SIGTERM, 30s), 0) << a->Log();
  EXPECT_NE(a->Log().find("released lease"), std::string::npos) << a->Log();
  ASSERT_TRUE(testing::Eventually([&] { return Leading(*b); }, 10s)) << b->Log();
  const double takeover = std::chrono::duration<double>(Clock::now() - term_sent).count();
  EXPECT_LT(takeover, 3.0) << "takeover after SIGTERM took " << takeover << "s";
  RecordProperty("sigterm_takeover_seconds", std::to_string(takeover));
  std::printf("takeover after SIGTERM: %.2fs\n", takeover);
  lease_json = client->Get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/" + lease);
  EXPECT_GT(lease_json["spec"].value("leaseTransitions", 0), transitions);

  CreatePods(*client, ns.name(), "second", kBatch, scheduler, nodes);
  ASSERT_TRUE(
      testing::Eventually([&] { return AllBound(*client, ns.name(), "second", kBatch); }, 60s))
      << b->Log();
  EXPECT_EQ(ScheduledOnceSettled(*b, scheduler, kBatch), kBatch);

  // kill -9: nobody releases the lease; a new standby c takes over once it expires (15 s).
  auto c = std::make_unique<BerthProcess>("le-c", config);
  ASSERT_TRUE(testing::Eventually([&] { return HttpGet(c->url() + "/readyz").status == 200; }, 30s))
      << c->Log();
  const auto killed = Clock::now();
  b->process().Stop(SIGKILL, 10s);
  CreatePods(*client, ns.name(), "third", kBatch, scheduler, nodes);
  ASSERT_TRUE(
      testing::Eventually([&] { return AllBound(*client, ns.name(), "third", kBatch); }, 45s))
      << c->Log();
  const double recovery = std::chrono::duration<double>(Clock::now() - killed).count();
  // leaseDuration (15 s) plus a retry period with jitter (up to 4.4 s) plus binding time.
  EXPECT_LT(recovery, 15.0 + 4.4 + 5.0) << "recovery after kill -9 took " << recovery << "s";
  std::printf("pods bound after kill -9 of the leader: %.2fs\n", recovery);
  EXPECT_EQ(ScheduledOnceSettled(*c, scheduler, kBatch), kBatch);

  // Every pod was bound exactly once: one Scheduled event each, never a series.
  ASSERT_TRUE(testing::Eventually(
      [&] { return ScheduledEvents(*client, ns.name()).size() == size_t{3} * kBatch; }, 20s));
  for (const auto& [pod, count] : ScheduledEvents(*client, ns.name())) {
    EXPECT_EQ(count, 1) << pod << " reported bound " << count << " times";
  }
  c.reset();
  try {
    client->Delete("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/" + lease);
  } catch (const std::exception&) {
    // The lease is unique to this run; a leftover harms nothing.
  }
}

}  // namespace
}  // namespace berth::e2e
