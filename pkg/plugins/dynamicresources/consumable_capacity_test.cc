#include "pkg/plugins/dynamicresources/consumable_capacity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "test/testing/dra_builders.h"

namespace berth::plugins::dynamicresources {
namespace {

using berth::testing::dra::Q;

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

api::CapacityRequestPolicy RangePolicy(std::optional<const char*> default_value, const char* min,
                                       std::optional<const char*> max,
                                       std::optional<const char*> step) {
  api::CapacityRequestPolicy policy;
  if (default_value) {
    policy.default_value = Q(*default_value);
  }
  api::CapacityRequestPolicyRange range;
  range.min = Q(min);
  if (max) {
    range.max = Q(*max);
  }
  if (step) {
    range.step = Q(*step);
  }
  policy.valid_range = range;
  return policy;
}

api::CapacityRequestPolicy ValuesPolicy(const char* default_value,
                                        const std::vector<const char*>& values) {
  api::CapacityRequestPolicy policy;
  policy.default_value = Q(default_value);
  for (const char* v : values) {
    policy.valid_values.push_back(Q(v));
  }
  return policy;
}

// Upstream's calculate-consumed-capacity cases.
TEST(ConsumableCapacityTest, ConsumedAmountRoundsUpToThePolicy) {
  struct Case {
    const char* name;
    std::optional<std::string> requested;
    std::string capacity;
    std::optional<api::CapacityRequestPolicy> policy;
    bool fractional;
    std::string want;  // Empty: an error.
  };
  const std::string max = std::to_string(kMaxInt64);
  const Case cases[] = {
      {"empty", std::nullopt, "1", api::CapacityRequestPolicy{}, false, "1"},
      {"no policy takes the request", "3", "4", std::nullopt, false, "3"},
      {"request-above-maxint64-is-rejected", "18446744073709551619", "18446744073709551619",
       RangePolicy("0", "0", std::nullopt, "3"), false, ""},
      {"rounded-value-above-maxint64-is-rejected", max, "9223372036854775808",
       RangePolicy("0", "0", std::nullopt, "2"), false, ""},
      {"max-safe-boundary-rounds-to-maxint64", std::to_string(kMaxInt64 - 1), max,
       RangePolicy("1", "1", std::nullopt, "2"), false, max},
      {"min in range", std::nullopt, "2", RangePolicy("1", "1", std::nullopt, std::nullopt), false,
       "1"},
      {"default in set", std::nullopt, "2", ValuesPolicy("1", {"1"}), false, "1"},
      {"more than min in range", "2", "2", RangePolicy("1", "1", std::nullopt, std::nullopt), false,
       "2"},
      {"less than min in range", "1", "2", RangePolicy("1", "2", std::nullopt, std::nullopt), false,
       "2"},
      {"with step (round up)", "2", "3", RangePolicy("1", "1", std::nullopt, "2"), false, "3"},
      {"with step (no remaining)", "2", "2", RangePolicy("1", "1", std::nullopt, "1"), false, "2"},
      {"fractional step round up (0.25 to 0.3)", "250m", "1",
       RangePolicy("200m", "200m", "1", "100m"), true, "300m"},
      {"fractional step already aligned (0.4)", "400m", "1",
       RangePolicy("200m", "200m", "1", "100m"), true, "400m"},
      {"fractional ranges off: whole units", "200m", "1", RangePolicy("200m", "200m", "1", "100m"),
       false, "1"},
      {"valid value in set", "2", "3", ValuesPolicy("1", {"1", "2", "3"}), false, "2"},
      {"set (round up)", "2", "3", ValuesPolicy("1", {"1", "3"}), false, "3"},
      {"larger than set", "3", "3", ValuesPolicy("1", {"1", "2"}), false, "3"},
      {"fractional-step-request-not-milli-representable-is-rejected", "9224372036854776E3",
       "9224372036854776E3", RangePolicy("1", "100m", std::nullopt, "100m"), true, ""},
      {"fractional-step-rounded-value-passes-milli-range-is-rejected",
       std::to_string(kMaxInt64 - 1) + "m", std::to_string(kMaxInt64) + "m",
       RangePolicy("100m", "100m", std::nullopt, "100m"), true, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    api::DeviceCapacity capacity{Q(c.capacity.c_str()), c.policy};
    std::optional<api::Quantity> requested;
    if (c.requested) {
      requested = Q(c.requested->c_str());
    }
    CapacityAmount amount =
        ConsumedAmount(requested ? &*requested : nullptr, capacity, c.fractional);
    if (c.want.empty()) {
      ASSERT_TRUE(amount.error.has_value());
      EXPECT_NE(amount.error->find("cannot be represented"), std::string::npos) << *amount.error;
      continue;
    }
    ASSERT_FALSE(amount.error.has_value()) << *amount.error;
    EXPECT_EQ(api::Quantity::Compare(amount.value, Q(c.want.c_str())), 0)
        << amount.value.ToString();
  }
}

// Upstream's violate-capacity-sharing cases.
TEST(ConsumableCapacityTest, ViolatesRequestPolicy) {
  struct Case {
    const char* name;
    const char* amount;
    std::optional<api::CapacityRequestPolicy> policy;
    bool fractional;
    bool want;
  };
  const Case cases[] = {
      {"no constraint", "1", std::nullopt, false, false},
      {"less than maximum", "1", RangePolicy("1", "1", "2", std::nullopt), false, false},
      {"more than maximum", "2", RangePolicy("1", "1", "1", std::nullopt), false, true},
      {"in set", "1", ValuesPolicy("1", {"1"}), false, false},
      {"not in set", "2", ValuesPolicy("1", {"1"}), false, true},
      {"default is always allowed", "5", ValuesPolicy("5", {"1"}), false, false},
      {"fractional step aligned (0.3 = min+1*step)", "300m",
       RangePolicy("200m", "200m", "1", "100m"), true, false},
      {"fractional step not aligned (0.25)", "250m", RangePolicy("200m", "200m", "1", "100m"), true,
       true},
      {"requested value overflows milli representation", "9223372036854775808",
       RangePolicy("1", "1", std::nullopt, "1"), true, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ViolatesRequestPolicy(Q(c.amount), c.policy, c.fractional), c.want) << c.name;
  }
}

// Upstream's safe-milli-value and use-milli cases.
TEST(ConsumableCapacityTest, MilliArithmeticOnlyWhenEveryBoundIsWholeThousandths) {
  EXPECT_EQ(ExactMilliValue(Q("1")), 1000);
  EXPECT_EQ(ExactMilliValue(Q("100m")), 100);
  EXPECT_EQ(ExactMilliValue(Q("9223372036854775808")), std::nullopt);
  EXPECT_EQ(ExactMilliValue(Q("1u")), std::nullopt);

  api::CapacityRequestPolicyRange fractional{Q("200m"), Q("1"), Q("100m")};
  EXPECT_FALSE(UseMilliArithmetic(fractional, false));
  EXPECT_TRUE(UseMilliArithmetic(fractional, true));
  EXPECT_TRUE(UseMilliArithmetic({Q("1"), Q("3"), Q("1")}, true));
  EXPECT_FALSE(UseMilliArithmetic({Q("9223372036854775808"), std::nullopt, Q("1")}, true));
  EXPECT_FALSE(UseMilliArithmetic({Q("1"), std::nullopt, Q("0")}, true));
}

TEST(ConsumableCapacityTest, ConsumedCapacityFromRequestsUsesRequestDefaultOrWholeCapacity) {
  DeviceCapacities capacities;
  capacities["capacity-0"] = {Q("2"), RangePolicy("2", "1", std::nullopt, std::nullopt)};
  capacities["capacity-1"] = {Q("2"), RangePolicy("1", "1", std::nullopt, std::nullopt)};
  capacities["dummy"] = {Q("1"), std::nullopt};
  CapacityRequests requests{{"capacity-0", Q("1")}, {"dummy", Q("1")}};
  ConsumedCapacity consumed;
  ASSERT_EQ(ConsumedCapacityFromRequests(requests, capacities, false, &consumed), std::nullopt);
  ASSERT_EQ(consumed.size(), 3u);
  for (const auto& [name, amount] : consumed) {
    EXPECT_EQ(api::Quantity::Compare(amount, Q("1")), 0) << name;
  }
}

TEST(ConsumableCapacityTest, UnrepresentableRequestIsAnErrorEvenWhenAnotherCapacityIsFull) {
  // capacity-0 is over-full (would only skip the device); capacity-1's rounding cannot be
  // represented, which must be reported rather than hidden behind the skip.
  DeviceCapacities capacities;
  capacities["capacity-0"] = {Q("1"), std::nullopt};
  capacities["capacity-1"] = {Q("9223372036854775808"),
                              RangePolicy(std::nullopt, "0", std::nullopt, "2")};
  CapacityRequests requests{{"capacity-0", Q("2")},
                            {"capacity-1", Q(std::to_string(kMaxInt64).c_str())}};
  CapacityFit fit = RequestFitsCapacity({}, requests, capacities, nullptr, false);
  EXPECT_FALSE(fit.fits);
  ASSERT_TRUE(fit.error.has_value());
  EXPECT_EQ(fit.error->rfind("capacity \"capacity-1\": capacity request cannot be represented", 0),
            0u)
      << *fit.error;
}

TEST(ConsumableCapacityTest, FitCountsAllocatedAndAllocatingShares) {
  DeviceCapacities capacities;
  capacities["memory"] = {Q("4Gi"), std::nullopt};
  CapacityRequests requests{{"memory", Q("1Gi")}};
  EXPECT_TRUE(RequestFitsCapacity({}, requests, capacities, nullptr, true).fits);
  const ConsumedCapacity two_gi{{"memory", Q("2Gi")}};
  const ConsumedCapacity one_gi{{"memory", Q("1Gi")}};
  EXPECT_TRUE(RequestFitsCapacity(two_gi, requests, capacities, &one_gi, true).fits);
  EXPECT_FALSE(RequestFitsCapacity(two_gi, requests, capacities, &two_gi, true).fits);
  // A request for a capacity the device does not have never fits.
  EXPECT_FALSE(RequestFitsCapacity({}, {{"cores", Q("1")}}, capacities, nullptr, true).fits);
  // Negative amounts are refused with an error (a stored object from before validation).
  CapacityFit negative = RequestFitsCapacity({}, {{"memory", Q("-1")}}, capacities, nullptr, true);
  EXPECT_FALSE(negative.fits);
  ASSERT_TRUE(negative.error.has_value());
  EXPECT_EQ(*negative.error, "capacity \"memory\": capacity value is negative");
}

}  // namespace
}  // namespace berth::plugins::dynamicresources
