#include "pkg/plugins/outofprocess/args.h"

#include <gtest/gtest.h>

#include "pkg/framework/args.h"
#include "pkg/util/base64.h"

namespace berth::plugins::outofprocess {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// The field errors ParseArgs reports for `args`, as "field: detail".
std::vector<std::string> Errors(const json& args) {
  try {
    ParseArgs(args);
  } catch (const framework::InvalidArgs& e) {
    std::vector<std::string> out;
    for (const auto& error : e.errors()) out.push_back(error.ToString());
    return out;
  }
  return {};
}

bool HasError(const json& args, const std::string& part) {
  for (const std::string& error : Errors(args)) {
    if (error.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(ArgsTest, NoArgsMeansNoEndpoints) {
  EXPECT_TRUE(ParseArgs(nullptr).endpoints.empty());
  EXPECT_TRUE(ParseArgs(json::object()).endpoints.empty());
  EXPECT_TRUE(ParseArgs({{"apiVersion", "kubescheduler.config.k8s.io/v1"},
                         {"kind", "OutOfProcessArgs"},
                         {"endpoints", json::array()}})
                  .endpoints.empty());
}

TEST(ArgsTest, AFullEndpointIsRead) {
  const std::string ca = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
  const Args args = ParseArgs(json::parse(R"({"endpoints": [{
      "name": "gpu-check", "url": "https://gpu.example:8443/hooks",
      "extensionPoints": ["Filter", "Score", "Permit", "PreBind"],
      "timeout": "2s", "timeouts": {"PreBind": "30s"},
      "permit": {"maxWait": "90s", "pollInterval": "250ms"},
      "tls": {"serverName": "gpu", "caData": ")" +
                                          util::Base64Encode(ca) + R"("},
      "ignorable": true, "scoreWeight": 3}]})"));
  ASSERT_EQ(args.endpoints.size(), 1u);
  const EndpointArgs& e = args.endpoints[0];
  EXPECT_EQ(e.name, "gpu-check");
  EXPECT_EQ(e.url, "https://gpu.example:8443/hooks");
  EXPECT_TRUE(e.Serves(Point::kFilter));
  EXPECT_TRUE(e.Serves(Point::kScore));
  EXPECT_TRUE(e.Serves(Point::kPermit));
  EXPECT_TRUE(e.Serves(Point::kPreBind));
  EXPECT_FALSE(e.Serves(Point::kPreFilter));
  EXPECT_FALSE(e.Serves(Point::kReserve));
  EXPECT_EQ(e.TimeoutOf(Point::kFilter), 2s);
  EXPECT_EQ(e.TimeoutOf(Point::kPreBind), 30s);
  EXPECT_EQ(e.permit.max_wait, 90s);
  EXPECT_EQ(e.permit.poll_interval, 250ms);
  EXPECT_EQ(e.tls.server_name, "gpu");
  EXPECT_EQ(e.tls.ca_pem, ca);
  EXPECT_TRUE(e.ignorable);
  EXPECT_EQ(e.score_weight, 3);
}

TEST(ArgsTest, DefaultsApply) {
  const Args args = ParseArgs(json::parse(
      R"({"endpoints": [{"name": "a", "url": "http://127.0.0.1:1", "extensionPoints": ["Permit"]}]})"));
  const EndpointArgs& e = args.endpoints.at(0);
  EXPECT_EQ(e.TimeoutOf(Point::kPermit), kDefaultTimeout);
  EXPECT_EQ(e.permit.max_wait, kDefaultMaxWait);
  EXPECT_EQ(e.permit.poll_interval, kDefaultPollInterval);
  EXPECT_FALSE(e.ignorable);
  EXPECT_EQ(e.score_weight, 1);
}

TEST(ArgsTest, EveryProblemIsNamedByItsField) {
  const json args = json::parse(R"({"endpoints": [
      {"url": "ftp://x", "extensionPoints": ["Filter", "Bind", "Filter"], "timeout": "soon"},
      {"name": "Bad_Name", "url": "http://x", "extensionPoints": []},
      {"name": "dup", "url": "http://x", "extensionPoints": ["Score"],
       "timeouts": {"Permit": "1s"}, "permit": {"maxWait": "1h"},
       "tls": {"insecure": true}},
      {"name": "dup", "url": "https://x", "extensionPoints": ["Reserve"],
       "tls": {"certData": "bm90IGJhc2U2NA==", "caData": "***"}, "scoreWeight": 0,
       "colour": "blue"}]})");
  EXPECT_TRUE(HasError(args, "endpoints[0].name: Required value")) << json(Errors(args)).dump();
  EXPECT_TRUE(HasError(args, "endpoints[0].url: Invalid value: \"ftp://x\""));
  EXPECT_TRUE(HasError(args, "endpoints[0].extensionPoints[1]: Unsupported value: \"Bind\""));
  EXPECT_TRUE(HasError(args, "endpoints[0].extensionPoints[2]: Duplicate value: \"Filter\""));
  EXPECT_TRUE(HasError(args, "endpoints[0].timeout: Invalid value: \"soon\""));
  EXPECT_TRUE(HasError(args, "endpoints[1].name: Invalid value: \"Bad_Name\""));
  EXPECT_TRUE(HasError(args, "endpoints[1].extensionPoints: Required value"));
  EXPECT_TRUE(HasError(args, "endpoints[2].timeouts.Permit: Invalid value"));
  EXPECT_TRUE(HasError(args, "endpoints[2].permit: Forbidden"));
  EXPECT_TRUE(HasError(args, "endpoints[2].permit.maxWait: Invalid value: \"1h\""));
  EXPECT_TRUE(HasError(args, "endpoints[2].tls: Forbidden: applies to https:// URLs only"));
  EXPECT_TRUE(HasError(args, "endpoints[3].name: Duplicate value: \"dup\""));
  EXPECT_TRUE(HasError(args, "endpoints[3].tls.caData: Invalid value: must be base64"));
  EXPECT_TRUE(HasError(args, "endpoints[3].tls.keyData: Required value"));
  EXPECT_TRUE(HasError(args, "endpoints[3].scoreWeight"));
  EXPECT_TRUE(HasError(args, "endpoints[3].colour: unknown field"));
}

TEST(ArgsTest, AFileAndItsDataAreExclusive) {
  EXPECT_TRUE(HasError(json::parse(R"({"endpoints": [{"name": "a", "url": "https://x",
      "extensionPoints": ["Filter"], "tls": {"caFile": "/ca.pem", "caData": "Q0E="}}]})"),
                       "endpoints[0].tls.caData: Forbidden: caFile and caData are exclusive"));
}

}  // namespace
}  // namespace berth::plugins::outofprocess
