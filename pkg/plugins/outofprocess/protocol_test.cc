#include "pkg/plugins/outofprocess/protocol.h"

#include <gtest/gtest.h>

#include "pkg/api/object_encode.h"
#include "test/testing/objects.h"

namespace berth::plugins::outofprocess {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::string ErrorOf(std::string_view body) {
  try {
    ParseResponse(body);
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "";
}

TEST(ProtocolTest, ARequestCarriesTheVersionTheVerbAndThePod) {
  const api::PodPtr pod =
      testing::PodBuilder("web", "shop").Label("app", "web").Container("1", "1Gi").Build();
  const std::vector<std::string_view> nodes = {"n1", "n2"};
  const json filter = json::parse(
      RequestBody(Verb::kFilter, "gpu", "berth-scheduler", EndpointPod(*pod), nodes, "", true));
  EXPECT_EQ(filter["apiVersion"], "outofprocess.berth.dev/v1alpha1");
  EXPECT_EQ(filter["kind"], "Request");
  EXPECT_EQ(filter["verb"], "filter");
  EXPECT_EQ(filter["endpoint"], "gpu");
  EXPECT_EQ(filter["profile"], "berth-scheduler");
  EXPECT_EQ(filter["nodes"], json({"n1", "n2"}));
  EXPECT_EQ(filter["dryRun"], true);
  EXPECT_FALSE(filter.contains("node"));
  // The pod as the apiserver would serve it.
  EXPECT_EQ(filter["pod"], api::EncodePod(*pod));
  EXPECT_EQ(filter["pod"]["metadata"]["labels"]["app"], "web");
  EXPECT_EQ(filter["pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "1");

  const json permit =
      json::parse(RequestBody(Verb::kPermitStatus, "gpu", "p", EndpointPod(*pod), {}, "n2", false));
  EXPECT_EQ(permit["verb"], "permit-status");
  EXPECT_EQ(permit["node"], "n2");
  EXPECT_FALSE(permit.contains("nodes"));
  EXPECT_FALSE(permit.contains("dryRun"));
}

TEST(ProtocolTest, MalformedAnswersAreErrorsNotCrashes) {
  EXPECT_NE(ErrorOf("not json").find("not JSON"), std::string::npos);
  EXPECT_NE(ErrorOf("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({"apiVersion": "v2"})").find("is not outofprocess.berth.dev/v1alpha1"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"error": "database down"})").find("reported an error: database down"),
            std::string::npos);
  // Far deeper than any stack would take if the parse recursed.
  const std::string deep = "{\"a\":" + std::string(200000, '[') + std::string(200000, ']') + "}";
  EXPECT_NE(ErrorOf(deep).find("nested deeper than 16"), std::string::npos);
  EXPECT_EQ(ErrorOf(R"({"apiVersion": "outofprocess.berth.dev/v1alpha1"})"), "");
}

TEST(ProtocolTest, VerdictsFiltersAndScoresDecode) {
  EXPECT_EQ(DecodeVerdict(json::object()).code, framework::Code::kSuccess);
  const Verdict verdict =
      DecodeVerdict({{"code", "UnschedulableAndUnresolvable"}, {"reason", "x"}});
  EXPECT_EQ(verdict.code, framework::Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(verdict.reason, "x");
  EXPECT_THROW(DecodeVerdict({{"code", "Maybe"}}), ProtocolError);
  EXPECT_THROW(DecodeVerdict({{"reason", 7}}), ProtocolError);

  const FilterAnswer filter = DecodeFilter(json::parse(
      R"({"failedNodes": {"n1": "busy"}, "failedAndUnresolvableNodes": {"n2": "no GPU"}})"));
  ASSERT_EQ(filter.rejected.size(), 2u);
  EXPECT_EQ(filter.rejected[0].first, "n1");
  EXPECT_EQ(filter.rejected[0].second.code, framework::Code::kUnschedulable);
  EXPECT_EQ(filter.rejected[1].second.code, framework::Code::kUnschedulableAndUnresolvable);
  EXPECT_THROW(DecodeFilter({{"failedNodes", {{"n1", 1}}}}), ProtocolError);

  const auto scores = DecodeScores(json::parse(R"({"scores": {"n1": 0, "n2": 100}})"));
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_EQ(scores[1].second, 100);
  EXPECT_THROW(DecodeScores(json::parse(R"({"scores": {"n1": 101}})")), ProtocolError);
  EXPECT_THROW(DecodeScores(json::parse(R"({"scores": {"n1": -1}})")), ProtocolError);
  EXPECT_THROW(DecodeScores(json::parse(R"({"scores": {"n1": 18446744073709551615}})")),
               ProtocolError);
  EXPECT_THROW(DecodeScores(json::parse(R"({"scores": {"n1": 5.5}})")), ProtocolError);
}

TEST(ProtocolTest, PermitDecisionsDecode) {
  EXPECT_EQ(DecodePermit({{"decision", "allow"}}).decision, PermitAnswer::Decision::kAllow);
  const PermitAnswer wait = DecodePermit({{"decision", "wait"}, {"timeout", "1m30s"}});
  EXPECT_EQ(wait.decision, PermitAnswer::Decision::kWait);
  EXPECT_EQ(wait.timeout, 90s);
  const PermitAnswer reject = DecodePermit({{"decision", "reject"}, {"reason", "no quota"}});
  EXPECT_EQ(reject.reason, "no quota");
  EXPECT_THROW(DecodePermit(json::object()), ProtocolError);
  EXPECT_THROW(DecodePermit({{"decision", "later"}}), ProtocolError);
  EXPECT_THROW(DecodePermit({{"decision", "wait"}, {"timeout", "-1s"}}), ProtocolError);
}

}  // namespace
}  // namespace berth::plugins::outofprocess
