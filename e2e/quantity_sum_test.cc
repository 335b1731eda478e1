#include "e2e/quantity_sum.h"

#include <gtest/gtest.h>

namespace berth::e2e {
namespace {

std::string Parsed(const std::string& text) {
  const auto n = ParseNanos(text);
  return n ? FormatNanos(*n) : "invalid";
}

TEST(QuantitySum, ParsesEveryFormExactly) {
  EXPECT_EQ(Parsed("100m"), "0.1");
  EXPECT_EQ(Parsed("1.5Gi"), "1610612736");
  EXPECT_EQ(Parsed("1E"), "1000000000000000000");
  EXPECT_EQ(Parsed("1e18"), "1000000000000000000");
  EXPECT_EQ(Parsed("1E3"), "1000");
  EXPECT_EQ(Parsed("8Ei"), "9223372036854775808");
  EXPECT_EQ(Parsed("9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(Parsed("9223372036854775807m"), "9223372036854775.807");
  EXPECT_EQ(Parsed("1n"), "0.000000001");
  EXPECT_EQ(Parsed("-2k"), "-2000");
  EXPECT_EQ(Parsed("1.0000000001"), "1.000000001") << "rounded up to a nano-unit";
  EXPECT_EQ(Parsed("1e40"), "invalid") << "beyond what a sum may hold";
  EXPECT_EQ(Parsed("1Qi"), "invalid");
  EXPECT_EQ(Parsed(""), "invalid");
}

TEST(QuantitySum, TwoRequestsOf2To62ExceedAnAllocatableOf2To63Minus1) {
  const nlohmann::json spec = nlohmann::json::parse(R"({"containers": [
      {"resources": {"requests": {"cpu": "4611686018427387904"}}},
      {"resources": {"requests": {"cpu": "4611686018427387904"}}}]})");
  ResourceSum used;
  std::string error;
  ASSERT_TRUE(AddPodRequests(spec, &used, &error)) << error;
  EXPECT_GT(used["cpu"], *ParseNanos("9223372036854775807"));
  EXPECT_EQ(FormatNanos(used["cpu"]), "9223372036854775808");
}

TEST(QuantitySum, APodCountsItsLargestInitContainerAndItsOverhead) {
  const nlohmann::json spec = nlohmann::json::parse(R"({
      "containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
      "initContainers": [{"resources": {"requests": {"cpu": "3"}}},
                         {"resources": {"requests": {"cpu": "2"}}}],
      "overhead": {"cpu": "250m"}})");
  ResourceSum used;
  std::string error;
  ASSERT_TRUE(AddPodRequests(spec, &used, &error)) << error;
  EXPECT_EQ(FormatNanos(used["cpu"]), "3.25");
  EXPECT_EQ(FormatNanos(used["memory"]), "1073741824");
}

}  // namespace
}  // namespace berth::e2e
