// A real Prometheus server scrapes a real berth-scheduler's secure port (HTTPS, with the token of a
// ServiceAccount allowed to get /metrics) while it binds pods on the local control plane; PromQL
// must see what an operator's dashboard would.

#include <gtest/gtest.h>

#include "e2e/harness.h"
#include "e2e/pods.h"
#include "test/testing/cluster.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;

TEST(PrometheusE2E, PromQLSeesEveryBoundPodAndEveryExtensionPoint) {
  auto client = testing::AdminClient();
  testing::TestNamespace ns(client, "e2e-prom");
  testing::TestNodes nodes(client);
  for (int i = 0; i < 3; i++) nodes.Add(std::to_string(i), "8", "16Gi");
  // A scheduler name of its own, so the counts cover exactly this test's pods.
  const std::string scheduler = "berth-e2e-" + testing::UniqueSuffix();
  BerthProcess berth("prom", SchedulerConfig(scheduler, false));
  ScrapeOptions scrape;
  scrape.bearer_token_file = testing::WriteTempFile("scraper-token", ScraperToken());
  Prometheus prometheus({berth.address()}, scrape);

  constexpr int kPods = 24;
  CreatePods(*client, ns.name(), "p", kPods, scheduler, nodes);
  ASSERT_TRUE(testing::Eventually([&] { return AllBound(*client, ns.name(), "p", kPods); }, 60s))
      << berth.Log();

  const std::string profile = "profile=\"" + scheduler + "\"";
  std::optional<double> scheduled;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        scheduled = prometheus.Query("scheduler_schedule_attempts_total{result=\"scheduled\"," +
                                     profile + "}");
        return scheduled && *scheduled == kPods;
      },
      30s))
      << "scheduled=" << (scheduled ? std::to_string(*scheduled) : "none") << "\n"
      << prometheus.Log();

  for (const char* point :
       {"Filter", "Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind"}) {
    std::optional<double> count;
    EXPECT_TRUE(testing::Eventually(
        [&] {
          count = prometheus.Query(
              "sum(scheduler_framework_extension_point_duration_seconds_count{extension_point=\"" +
              std::string(point) + "\"," + profile + "})");
          return count && *count > 0;
        },
        15s))
        << point;
  }
  // Every bound pod is in the SLI histogram, and the client metrics saw the bindings.
  auto sli = prometheus.Query("sum(scheduler_pod_scheduling_sli_duration_seconds_count)");
  ASSERT_TRUE(sli.has_value());
  EXPECT_EQ(*sli, kPods);
  auto posts = prometheus.Query("sum(rest_client_requests_total{method=\"POST\",code=\"201\"})");
  ASSERT_TRUE(posts.has_value());
  EXPECT_GE(*posts, kPods);
  auto build = prometheus.Query("berth_build_info");
  ASSERT_TRUE(build.has_value());
  EXPECT_EQ(*build, 1);
  // The target is up because it scraped with the token: the same target without it is refused.
  EXPECT_EQ(HttpGet(berth.url() + "/metrics").status, 401);
  EXPECT_EQ(prometheus.Query("up"), 1);
}

}  // namespace
}  // namespace berth::e2e
