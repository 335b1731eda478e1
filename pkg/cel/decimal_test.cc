#include "pkg/cel/decimal.h"

#include <gtest/gtest.h>

#include "pkg/api/quantity.h"

namespace berth::cel {
namespace {

Decimal Q(const char* text) { return Decimal::FromQuantity(api::Quantity::Parse(text)); }

TEST(Decimal, ComparesAcrossSuffixes) {
  EXPECT_EQ(Q("1Ki").Compare(Q("1024")), 0);
  EXPECT_EQ(Q("1k").Compare(Q("1Ki")), -1);
  EXPECT_EQ(Q("500m").Compare(Q("0.5")), 0);
  EXPECT_EQ(Q("-1").Compare(Q("1n")), -1);
  EXPECT_EQ(Q("1e100").Compare(Q("1e99")), 1);
  EXPECT_EQ(Q("1Ei").Compare(Q("1152921504606846976")), 0);
}

TEST(Decimal, AddsAndSubtractsExactly) {
  EXPECT_EQ(Q("1.5").Add(Q("500m"))->Compare(Q("2")), 0);
  EXPECT_EQ(Q("1n").Add(Q("1E"))->Sub(Q("1E"))->Compare(Q("1n")), 0);
  EXPECT_EQ(Q("1").Sub(Q("3"))->AsInt64(), -2);
}

TEST(Decimal, RefusesResultsPastItsDigitBound) {
  EXPECT_FALSE(Q("1e5000").Add(Q("1")).has_value());
  EXPECT_TRUE(Q("1e5000").Compare(Q("1")) > 0);
}

// asInteger() answers from apimachinery's int64 form: at most 18 digits, a scale of at least
// zero, or a whole binary quantity with enough precision left.
TEST(Decimal, IntegersOnlyFromApimachinerysInt64Form) {
  EXPECT_EQ(Q("922337203685477580").AsInt64(), 922337203685477580);
  EXPECT_FALSE(Q("9223372036854775807").AsInt64().has_value());
  EXPECT_EQ(Q("9E").AsInt64(), 9000000000000000000);
  EXPECT_FALSE(Q("10E").AsInt64().has_value());
  EXPECT_FALSE(Q("1000m").AsInt64().has_value());
  EXPECT_EQ(Q("80Gi").AsInt64(), int64_t{80} << 30);
  EXPECT_FALSE(Q("1Pi").AsInt64().has_value());
  EXPECT_FALSE(Q("1.5Ki").AsInt64().has_value());
  EXPECT_EQ(Q("1k").Add(Q("1"))->AsInt64(), 1001);
  EXPECT_FALSE(Q("1").Add(Q("1000m"))->AsInt64().has_value());
  EXPECT_EQ(Decimal::FromInt(INT64_MIN).AsInt64(), INT64_MIN);
  EXPECT_FALSE(Q("1500m").AsInt64().has_value());
  EXPECT_DOUBLE_EQ(Q("1500m").AsApproximateDouble(), 1.5);
}

TEST(Decimal, DecimalFormsRoundUpToNano) {
  EXPECT_EQ(Q("1.0000000001").Compare(Q("1.000000001")), 0);
  EXPECT_EQ(Q("0.0000000000001").Compare(Q("1n")), 0);
  EXPECT_EQ(Q("-0.0000000000001").Compare(Q("-1n")), 0);
}

}  // namespace
}  // namespace berth::cel
