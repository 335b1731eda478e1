// berth-scheduler's secure port against the local control plane, RBAC on: a bearer token is
// reviewed by the apiserver (TokenReview) and its user's access to the path is asked of it
// (SubjectAccessReview), so what RBAC says is what the endpoint does. The scraper's rights come
// from the chart's own metrics-reader ClusterRole.

#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "e2e/harness.h"
#include "test/packaging/chart.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth::e2e {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

// The rules of the chart's metrics-reader ClusterRole, as helm renders them.
json ChartMetricsReaderRules() {
  auto objects =
      packaging::ParseYamlDocuments(packaging::HelmTemplate("berth", "berth-system", {}));
  return packaging::OfKind(objects, "ClusterRole", "berth-metrics-reader").at(0)["rules"];
}

TEST(SecureServingE2E, RbacDecidesWhoReadsMetricsWhileProbesStayOpen) {
  auto admin = testing::AdminClient();
  testing::TestNamespace ns(admin, "e2e-secure");
  testing::ServiceAccountToken scraper(admin, ns.name(), "scraper");
  testing::ServiceAccountToken stranger(admin, ns.name(), "stranger");
  testing::ClusterRoleGrant grant(admin, "berth-e2e-metrics-reader-" + testing::UniqueSuffix(),
                                  ChartMetricsReaderRules(), scraper.Subject());
  ASSERT_TRUE(testing::WaitUntilAllowed(*admin, scraper.UserName(), "get", "/metrics"));

  BerthProcess berth("secure", SchedulerConfig("berth-e2e-" + testing::UniqueSuffix(), false));
  ASSERT_EQ(berth.url().rfind("https://", 0), 0u);

  // Probes: no token, no review.
  EXPECT_EQ(HttpGet(berth.url() + "/healthz").status, 200) << berth.Log();
  EXPECT_EQ(HttpGet(berth.url() + "/healthz").body, "ok");
  EXPECT_EQ(HttpGet(berth.url() + "/livez").status, 200);
  EXPECT_TRUE(
      testing::Eventually([&] { return HttpGet(berth.url() + "/readyz").status == 200; }, 30s))
      << berth.Log();

  // No token, a forged one: 401.
  HttpReply anonymous = HttpGet(berth.url() + "/metrics");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(json::parse(anonymous.body, nullptr, false).value("reason", ""), "Unauthorized")
      << anonymous.body;
  EXPECT_EQ(HttpGet(berth.url() + "/metrics", "not-a-token").status, 401);
  EXPECT_EQ(HttpGet(berth.url() + "/metrics", scraper.token() + "x").status, 401);

  // A real token whose user RBAC does not allow: 403, saying who and what.
  HttpReply forbidden = HttpGet(berth.url() + "/metrics", stranger.token());
  EXPECT_EQ(forbidden.status, 403) << forbidden.body;
  EXPECT_EQ(json::parse(forbidden.body, nullptr, false).value("message", ""),
            "forbidden: User \"" + stranger.UserName() + "\" cannot get path \"/metrics\"")
      << forbidden.body;

  // The metrics reader gets the metrics, and nothing else: /configz and any /debug/ path are
  // other non-resource URLs its role does not name.
  HttpReply scraped = HttpGet(berth.url() + "/metrics", scraper.token());
  EXPECT_EQ(scraped.status, 200) << scraped.body << berth.Log();
  EXPECT_NE(scraped.body.find("\nberth_build_info{"), std::string::npos);
  EXPECT_NE(scraped.body.find("\nscheduler_pending_pods{"), std::string::npos);
  EXPECT_EQ(HttpGet(berth.url() + "/configz", scraper.token()).status, 403);
  EXPECT_EQ(HttpGet(berth.url() + "/debug/pprof/", scraper.token()).status, 403);
  EXPECT_EQ(HttpGet(berth.url() + "/debug/pprof/").status, 401);

  // Revoked in RBAC: refused once the cached allowance (10 s) expires.
  grant.SetRules(json::array());
  ASSERT_TRUE(testing::WaitUntilAllowed(*admin, scraper.UserName(), "get", "/metrics", false));
  EXPECT_TRUE(testing::Eventually(
      [&] { return HttpGet(berth.url() + "/metrics", scraper.token()).status == 403; }, 20s));
  EXPECT_TRUE(berth.process().Running());
  // Tokens never reach the log.
  EXPECT_EQ(berth.Log().find(scraper.token()), std::string::npos);
  EXPECT_EQ(berth.Log().find(stranger.token()), std::string::npos);
}

TEST(SecureServingE2E, PlainHttpOnlyWhenAskedAndThenWithoutAuth) {
  const std::string port = std::to_string(testing::FreePort());
  BerthProcess berth("insecure", SchedulerConfig("berth-e2e-" + testing::UniqueSuffix(), false), "",
                     {"--port", port});
  const std::string insecure = "http://127.0.0.1:" + port;
  ASSERT_TRUE(testing::Eventually([&] { return HttpGet(insecure + "/livez").status == 200; }, 10s))
      << berth.Log();
  HttpReply metrics = HttpGet(insecure + "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("berth_build_info"), std::string::npos);
  // The secure port beside it still asks for a token.
  EXPECT_EQ(HttpGet(berth.url() + "/metrics").status, 401);
  EXPECT_NE(berth.Log().find("serving plain HTTP without authentication or authorization"),
            std::string::npos);
}

TEST(SecureServingE2E, ClientCaFileIsRefusedAtStartUp) {
  testing::ChildProcess proc;
  const std::string log = testing::WriteTempFile("client-ca.log", "");
  proc.Start({testing::BinaryPath("berth-scheduler"), "--kubeconfig",
              testing::ClusterDir() + "/kubeconfig", "--client-ca-file",
              testing::ClusterDir() + "/pki/ca.crt"},
             log);
  EXPECT_EQ(proc.WaitExit(10s), 1);
  EXPECT_NE(proc.Log().find("--client-ca-file: client-certificate authentication is not supported"),
            std::string::npos)
      << proc.Log();
}

}  // namespace
}  // namespace berth::e2e
