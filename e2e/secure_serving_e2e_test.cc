// berth-scheduler's secure port against the local control plane, RBAC on: a bearer token is
// reviewed by the apiserver (TokenReview), a client certificate verified against
// --client-ca-file, and the user's access to the path is asked of the apiserver
// (SubjectAccessReview), so what RBAC says is what the endpoint does. The scraper's rights come
// from the chart's own metrics-reader ClusterRole.

#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "e2e/harness.h"
#include "test/packaging/chart.h"
#include "test/testing/cluster.h"
#include "test/testing/pki.h"
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

// --authentication-kubeconfig and --authorization-kubeconfig: each review goes through the
// identity its flag names, not the scheduler's. The RBAC-less user of kubeconfig-noperms may
// create neither review, so a scraper RBAC allows is refused all the same, and the log says why.
TEST(SecureServingE2E, ReviewsGoThroughTheKubeconfigsTheirFlagsName) {
  const std::string& token = ScraperToken();
  const std::string admin = testing::ClusterDir() + "/kubeconfig";
  const std::string noperms = testing::ClusterDir() + "/kubeconfig-noperms";
  const std::string config = SchedulerConfig("berth-e2e-" + testing::UniqueSuffix(), false);

  BerthProcess authz("authz-kubeconfig", config, admin, {"--authorization-kubeconfig", noperms});
  HttpReply undecided = HttpGet(authz.url() + "/metrics", token);
  EXPECT_EQ(undecided.status, 500) << undecided.body << authz.Log();
  EXPECT_NE(undecided.body.find("subjectaccessreviews"), std::string::npos) << undecided.body;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        const std::string log = authz.Log();
        return log.find("subject access review failed") != std::string::npos &&
               log.find("berth-test-noperms") != std::string::npos;
      },
      5s))
      << authz.Log();
  EXPECT_EQ(HttpGet(authz.url() + "/healthz").status, 200);

  BerthProcess authn("authn-kubeconfig", config, admin, {"--authentication-kubeconfig", noperms});
  EXPECT_EQ(HttpGet(authn.url() + "/metrics", token).status, 401) << authn.Log();
  EXPECT_TRUE(testing::Eventually(
      [&] {
        const std::string log = authn.Log();
        return log.find("token review failed") != std::string::npos &&
               log.find("berth-test-noperms") != std::string::npos;
      },
      5s))
      << authn.Log();

  // The other way round: the scheduler's own identity may review nothing, the flags' may.
  BerthProcess delegated(
      "delegated-kubeconfigs", config, noperms,
      {"--authentication-kubeconfig", admin, "--authorization-kubeconfig", admin});
  HttpReply scraped = HttpGet(delegated.url() + "/metrics", token);
  EXPECT_EQ(scraped.status, 200) << scraped.body << delegated.Log();
  EXPECT_NE(scraped.body.find("\nberth_build_info{"), std::string::npos);
}

// --client-ca-file: a client certificate the CA signed is its CommonName to RBAC, with no token
// and no TokenReview; one whose CommonName RBAC does not allow is 403; one from another CA is no
// one, so without a token it is 401 and with one the token decides, as in kube-apiserver.
TEST(SecureServingE2E, ClientCertificatesSignedByTheClientCaAreRbacUsers) {
  auto admin = testing::AdminClient();
  testing::Pki pki;
  const testing::CertificateFiles ca = pki.Ca("e2e-client-ca");
  const std::string reader = "berth-e2e-cert-reader-" + testing::UniqueSuffix();
  const std::string stranger = "berth-e2e-cert-stranger-" + testing::UniqueSuffix();
  const auto reader_cert = pki.Client(ca, "reader", "/O=berth-e2e/CN=" + reader);
  const auto stranger_cert = pki.Client(ca, "stranger", "/CN=" + stranger);
  const auto outsider_cert = pki.Client(pki.Ca("e2e-other-ca"), "outsider", "/CN=" + reader);
  testing::ClusterRoleGrant grant(
      admin, "berth-e2e-cert-metrics-reader-" + testing::UniqueSuffix(), ChartMetricsReaderRules(),
      {{"kind", "User"}, {"apiGroup", "rbac.authorization.k8s.io"}, {"name", reader}});
  ASSERT_TRUE(testing::WaitUntilAllowed(*admin, reader, "get", "/metrics"));

  BerthProcess berth("client-ca", SchedulerConfig("berth-e2e-" + testing::UniqueSuffix(), false),
                     "", {"--client-ca-file", ca.cert_file});
  const std::string metrics = berth.url() + "/metrics";
  HttpReply scraped = HttpGet(metrics, "", reader_cert.cert_file, reader_cert.key_file);
  EXPECT_EQ(scraped.status, 200) << scraped.body << berth.Log();
  EXPECT_NE(scraped.body.find("\nberth_build_info{"), std::string::npos);
  EXPECT_EQ(
      HttpGet(berth.url() + "/configz", "", reader_cert.cert_file, reader_cert.key_file).status,
      403);

  HttpReply forbidden = HttpGet(metrics, "", stranger_cert.cert_file, stranger_cert.key_file);
  EXPECT_EQ(forbidden.status, 403) << forbidden.body;
  EXPECT_EQ(json::parse(forbidden.body, nullptr, false).value("message", ""),
            "forbidden: User \"" + stranger + "\" cannot get path \"/metrics\"")
      << forbidden.body;

  HttpReply anonymous = HttpGet(metrics);
  EXPECT_EQ(anonymous.status, 401) << anonymous.body;
  EXPECT_EQ(json::parse(anonymous.body, nullptr, false).value("reason", ""), "Unauthorized");
  EXPECT_EQ(HttpGet(metrics, "", outsider_cert.cert_file, outsider_cert.key_file).status, 401);
  EXPECT_EQ(
      HttpGet(metrics, ScraperToken(), outsider_cert.cert_file, outsider_cert.key_file).status,
      200);
  EXPECT_EQ(
      HttpGet(berth.url() + "/healthz", "", outsider_cert.cert_file, outsider_cert.key_file).status,
      200);
  EXPECT_TRUE(berth.process().Running());
}

// A CA file that is not PEM certificates exits 1 naming the flag and the file, before any
// connection: the kubeconfig here does not even exist.
TEST(SecureServingE2E, AnUnusableClientCaFileExitsAtStartUp) {
  const std::string not_a_ca = testing::WriteTempFile("not-a-ca.crt", "not a certificate\n");
  testing::ChildProcess proc;
  const std::string log = testing::WriteTempFile("client-ca.log", "");
  proc.Start({testing::BinaryPath("berth-scheduler"), "--kubeconfig", "/nonexistent/kubeconfig",
              "--client-ca-file", not_a_ca},
             log);
  EXPECT_EQ(proc.WaitExit(10s), 1);
  EXPECT_NE(proc.Log().find("flag --client-ca-file: \"" + not_a_ca + "\" holds no PEM certificate"),
            std::string::npos)
      << proc.Log();
}

}  // namespace
}  // namespace berth::e2e
