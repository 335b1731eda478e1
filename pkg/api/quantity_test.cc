#include "pkg/api/quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "pkg/api/errors.h"

namespace berth::api {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

struct ValidCase {
  const char* text;
  int64_t value;
  int64_t milli;
};

// Expected numbers follow apimachinery: round away from zero, saturate at the int64 range.
const ValidCase kValidCases[] = {
    // Plain numbers and signs.
    {"0", 0, 0},
    {"-0", 0, 0},
    {"1", 1, 1000},
    {"+1", 1, 1000},
    {"-1", -1, -1000},
    {"42", 42, 42000},
    {"000000000000000000000000000000000000000000001", 1, 1000},
    // Fractions.
    {"0.1", 1, 100},
    {"1.5", 2, 1500},
    {"-1.5", -2, -1500},
    {".5", 1, 500},
    {"5.", 5, 5000},
    {"0.001", 1, 1},
    {"0.0011", 1, 2},
    {"-0.0011", -1, -2},
    {"12.0000", 12, 12000},
    // Decimal SI suffixes below one.
    {"1n", 1, 1},
    {"999n", 1, 1},
    {"1000000n", 1, 1},
    {"1000001n", 1, 2},
    {"1u", 1, 1},
    {"500u", 1, 1},
    {"1000u", 1, 1},
    {"2500u", 1, 3},
    {"1m", 1, 1},
    {"100m", 1, 100},
    {"1000m", 1, 1000},
    {"1500m", 2, 1500},
    {"-1500m", -2, -1500},
    {"0.5m", 1, 1},
    // Decimal SI suffixes above one.
    {"2k", 2000, 2000000},
    {"1.5k", 1500, 1500000},
    {"1M", 1000000, 1000000000},
    {"1G", 1000000000, 1000000000000},
    {"1.G", 1000000000, 1000000000000},
    {"1T", 1000000000000, 1000000000000000},
    {"1P", 1000000000000000, 1000000000000000000},
    {"1E", 1000000000000000000, kMax},
    {"9E", 9000000000000000000, kMax},
    {"10E", kMax, kMax},
    {"-10E", kMin, kMin},
    // Binary SI suffixes.
    {"1Ki", 1024, 1024000},
    {"0.5Ki", 512, 512000},
    {"1Mi", 1048576, 1048576000},
    {"200Mi", 209715200, 209715200000},
    {"1Gi", 1073741824, 1073741824000},
    {"1.5Gi", 1610612736, 1610612736000},
    {"0.3Ki", 308, 307200},  // 307.2 bytes rounds up.
    {"1Ti", 1099511627776, 1099511627776000},
    {"1Pi", 1125899906842624, 1125899906842624000},
    {"1Ei", 1152921504606846976, kMax},
    {"7Ei", 8070450532247928832, kMax},
    {"8Ei", kMax, kMax},
    {"-8Ei", kMin, kMin},
    {"-9Ei", kMin, kMin},
    {"0.000Gi", 0, 0},
    // Decimal exponents.
    {"1e3", 1000, 1000000},
    {"1E3", 1000, 1000000},
    {"5e+2", 500, 500000},
    {"1e0", 1, 1000},
    {"1E-3", 1, 1},
    {"1e-4", 1, 1},
    {"1.5e1", 15, 15000},
    {"12e-1", 2, 1200},
    {"1e18", 1000000000000000000, kMax},
    {"1e19", kMax, kMax},
    {"1e99999999999999", kMax, kMax},
    {"1e-100", 1, 1},
    {"-1e-100", -1, -1},
    {"0e99999999", 0, 0},
    // The int64 edges.
    {"9223372036854775807", kMax, kMax},
    {"9223372036854775808", kMax, kMax},
    {"-9223372036854775807", -9223372036854775807, kMin},
    {"-9223372036854775808", kMin, kMin},
    {"9223372036854775.807", 9223372036854776, kMax},
    {"9223372036854775.806", 9223372036854776, 9223372036854775806},
    {"123456789012345678901234567890123456789012345n", kMax, kMax},
    // More than 38 significant digits: the dropped tail still rounds away from zero.
    {"0.1000000000000000000000000000000000000000001", 1, 101},
    {"0.100000000000000000000000000000000000000000", 1, 100},
    // A long fraction with a binary suffix overflows 128 bits before the decimal division.
    {"1.0000000000000000000000000000000000001Ei", 1152921504606846977, kMax},
    {"1.0000000000000000000000000000000000000Ki", 1024, 1024000},
};

TEST(QuantityTest, ParsesEveryForm) {
  for (const ValidCase& c : kValidCases) {
    SCOPED_TRACE(c.text);
    Quantity q = Quantity::Parse(c.text);
    EXPECT_EQ(q.Value(), c.value);
    EXPECT_EQ(q.MilliValue(), c.milli);
    EXPECT_EQ(q.IsZero(), c.value == 0);
    EXPECT_EQ(q.Negative(), c.value < 0);

    Quantity tried;
    std::string error = "untouched";
    ASSERT_TRUE(Quantity::TryParse(c.text, &tried, &error));
    EXPECT_EQ(tried.MilliValue(), c.milli);
    EXPECT_EQ(error, "untouched");
  }
}

TEST(QuantityTest, ToStringRoundTrips) {
  for (const ValidCase& c : kValidCases) {
    Quantity q = Quantity::Parse(c.text);
    std::string text = q.ToString();
    SCOPED_TRACE(std::string(c.text) + " -> " + text);
    Quantity again = Quantity::Parse(text);
    EXPECT_EQ(again.Value(), c.value);
    EXPECT_EQ(again.MilliValue(), c.milli);
  }
}

TEST(QuantityTest, ToStringIsReadable) {
  EXPECT_EQ(Quantity::Parse("1500m").ToString(), "1500m");
  EXPECT_EQ(Quantity::Parse("1.5").ToString(), "1500m");
  EXPECT_EQ(Quantity::Parse("1000m").ToString(), "1");
  EXPECT_EQ(Quantity::Parse("2000").ToString(), "2k");
  EXPECT_EQ(Quantity::Parse("2Gi").ToString(), "2Gi");
  EXPECT_EQ(Quantity::Parse("1.5Gi").ToString(), "1.5Gi");
  EXPECT_EQ(Quantity::Parse("0.25Ki").ToString(), "0.25Ki");
  EXPECT_EQ(Quantity::Parse("-100m").ToString(), "-100m");
  EXPECT_EQ(Quantity::Parse("0").ToString(), "0");
  EXPECT_EQ(Quantity::Parse("-0").ToString(), "0");
  EXPECT_EQ(Quantity::Parse("1e-12").ToString(), "1e-12");
  EXPECT_EQ(Quantity::Parse("3e20").ToString(), "3e20");
  EXPECT_EQ(Quantity::Parse("1E").ToString(), "1E");
  EXPECT_EQ(Quantity::Parse("12u").ToString(), "12u");
  EXPECT_EQ(Quantity::Parse("0.0015").ToString(), "1500u");
}

// What apimachinery's Quantity.String() writes for each format, the text the scheduler puts into
// objects (a claim's consumed capacity).
TEST(QuantityTest, CanonicalIsApimachinerysTextInTheParsedFormat) {
  auto canonical = [](const char* text) { return Quantity::Parse(text).Canonical(); };
  EXPECT_EQ(canonical("30Gi"), "30Gi");
  EXPECT_EQ(canonical("1.5Gi"), "1536Mi");
  EXPECT_EQ(canonical("1536Ki"), "1536Ki");
  EXPECT_EQ(canonical("0.5Ki"), "512");
  EXPECT_EQ(canonical("1.5Ki"), "1536");
  EXPECT_EQ(canonical("0.3Ki"), "307200m");
  EXPECT_EQ(canonical("1500"), "1500");
  EXPECT_EQ(canonical("1.5k"), "1500");
  EXPECT_EQ(canonical("2000m"), "2");
  EXPECT_EQ(canonical("0.5"), "500m");
  EXPECT_EQ(canonical("1e3"), "1e3");
  EXPECT_EQ(canonical("1500e-3"), "1500e-3");
  EXPECT_EQ(canonical("-2Ki"), "-2Ki");
  EXPECT_EQ(canonical("0Gi"), "0");
  EXPECT_EQ(canonical("100E"), "100E");

  // Arithmetic keeps the first operand's format (the second's when the first is zero).
  const Quantity thirty = *Quantity::Add(Quantity::Parse("20Gi"), Quantity::Parse("10Gi"));
  EXPECT_EQ(thirty.format(), Quantity::Format::kBinarySI);
  EXPECT_EQ(thirty.Canonical(), "30Gi");
  EXPECT_EQ(Quantity::Add(Quantity(), Quantity::Parse("1Ki"))->Canonical(), "1Ki");
  EXPECT_EQ(Quantity::FromValue(32212254720, Quantity::Format::kBinarySI).Canonical(), "30Gi");
  EXPECT_EQ(Quantity::FromValue(32212254720).Canonical(), "32212254720");
  EXPECT_EQ(Quantity::FromMilli(1500, Quantity::Format::kBinarySI).Canonical(), "1500m");
}

TEST(QuantityTest, FromMilliAndFromValue) {
  EXPECT_EQ(Quantity::FromMilli(1500).Value(), 2);
  EXPECT_EQ(Quantity::FromMilli(1500).MilliValue(), 1500);
  EXPECT_EQ(Quantity::FromMilli(-1).Value(), -1);
  EXPECT_EQ(Quantity::FromMilli(0).IsZero(), true);
  EXPECT_EQ(Quantity::FromMilli(kMin).MilliValue(), kMin);
  EXPECT_EQ(Quantity::FromValue(5).MilliValue(), 5000);
  EXPECT_EQ(Quantity::FromValue(kMin).Value(), kMin);
  EXPECT_EQ(Quantity::FromValue(kMax).Value(), kMax);
  EXPECT_EQ(Quantity::FromValue(kMax).MilliValue(), kMax);
  EXPECT_EQ(Quantity::FromValue(kMin).MilliValue(), kMin);
  EXPECT_EQ(Quantity::Parse(Quantity::FromMilli(250).ToString()).MilliValue(), 250);
}

struct InvalidCase {
  const char* text;
  const char* why;  // A fragment of the reason.
};

const InvalidCase kInvalidCases[] = {
    {"", "empty"},
    {" ", "expected a number"},
    {" 1", "expected a number"},
    {"1 ", "unknown suffix \" \""},
    {"1 Gi", "unknown suffix"},
    {".", "expected a number"},
    {"-", "expected a number"},
    {"+", "expected a number"},
    {"--1", "expected a number"},
    {"abc", "expected a number"},
    {"Gi", "expected a number"},
    {"1K", "unknown suffix \"K\""},
    {"1ki", "unknown suffix"},
    {"1gi", "unknown suffix"},
    {"1Gix", "unknown suffix \"Gix\""},
    {"1Mi3", "unknown suffix"},
    {"1..5", "more than one decimal point"},
    {"1.2.3", "more than one decimal point"},
    {"1e", "missing exponent digits in suffix \"e\""},
    {"1E+", "missing exponent digits"},
    {"1e-", "missing exponent digits"},
    {"1e3.5", "malformed exponent"},
    {"1e3m", "malformed exponent"},
    {"1e1e1", "malformed exponent"},
    {"1%", "unknown suffix"},
    {"0x10", "unknown suffix"},
    {"1,5", "unknown suffix"},
};

TEST(QuantityTest, RejectsMalformedInput) {
  for (const InvalidCase& c : kInvalidCases) {
    SCOPED_TRACE(std::string("\"") + c.text + "\"");
    try {
      Quantity::Parse(c.text, "spec.containers[0].resources.requests.cpu");
      ADD_FAILURE() << "parsed";
    } catch (const DecodeError& e) {
      EXPECT_EQ(e.field(), "spec.containers[0].resources.requests.cpu");
      std::string prefix = "spec.containers[0].resources.requests.cpu: invalid quantity \"" +
                           std::string(c.text) + "\": ";
      EXPECT_EQ(std::string(e.what()).substr(0, prefix.size()), prefix) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.why), std::string::npos) << e.what();
    }

    Quantity q;
    std::string error;
    EXPECT_FALSE(Quantity::TryParse(c.text, &q, &error));
    EXPECT_FALSE(error.empty());
    EXPECT_FALSE(Quantity::TryParse(c.text, &q, nullptr));
  }
}

TEST(QuantityTest, DefaultFieldName) {
  try {
    Quantity::Parse("1x");
    ADD_FAILURE() << "parsed";
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.field(), "quantity");
  }
}

Quantity Q(const char* text) { return Quantity::Parse(text); }

TEST(QuantityArithmeticTest, CompareIsExactAcrossForms) {
  struct Case {
    const char* a;
    const char* b;
    int want;
  };
  const Case cases[] = {
      {"0", "-0", 0},
      {"0", "0Ki", 0},
      {"1Ki", "1024", 0},
      {"1Ki", "1k", 1},
      {"1k", "1Ki", -1},
      {"0.5", "500m", 0},
      {"1m", "1000u", 0},
      {"1.000000000000000000000000000000000001", "1", 1},
      {"-1", "1", -1},
      {"-2", "-1", -1},
      {"-1Ki", "-1000", -1},
      {"1e100", "1e99", 1},
      {"1e-100", "1e100", -1},
      {"1Ei", "1152921504606846976", 0},
      {"1Ei", "1152921504606846975", 1},
      {"9223372036854775807", "9223372036854775808", -1},
      {"1e3", "1k", 0},
      {"200m", "0.2", 0},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Quantity::Compare(Q(c.a), Q(c.b)), c.want) << c.a << " vs " << c.b;
    EXPECT_EQ(Quantity::Compare(Q(c.b), Q(c.a)), -c.want) << c.b << " vs " << c.a;
    EXPECT_EQ(Q(c.a) == Q(c.b), c.want == 0) << c.a << " == " << c.b;
  }
}

TEST(QuantityArithmeticTest, AddAndSubAreExact) {
  struct Case {
    const char* a;
    const char* b;
    const char* sum;
    const char* difference;
  };
  const Case cases[] = {
      {"1", "2", "3", "-1"},
      {"1Ki", "1", "1025", "1023"},
      {"1Gi", "1Mi", "1025Mi", "1023Mi"},
      {"100m", "200m", "300m", "-100m"},
      {"0.1", "1Ki", "1024.1", "-1023.9"},
      {"0", "5", "5", "-5"},
      {"-3", "-4", "-7", "1"},
      {"9223372036854775807", "1", "9223372036854775808", "9223372036854775806"},
      {"1Ei", "1Ei", "2Ei", "0"},
      {"1e30", "1e-7", "1000000000000000000000000000000.0000001",
       "999999999999999999999999999999.9999999"},
  };
  for (const Case& c : cases) {
    std::optional<Quantity> sum = Quantity::Add(Q(c.a), Q(c.b));
    ASSERT_TRUE(sum.has_value()) << c.a << " + " << c.b;
    EXPECT_EQ(Quantity::Compare(*sum, Q(c.sum)), 0)
        << c.a << " + " << c.b << " = " << sum->ToString();
    std::optional<Quantity> difference = Quantity::Sub(Q(c.a), Q(c.b));
    ASSERT_TRUE(difference.has_value()) << c.a << " - " << c.b;
    EXPECT_EQ(Quantity::Compare(*difference, Q(c.difference)), 0)
        << c.a << " - " << c.b << " = " << difference->ToString();
  }
  // A zero difference is the canonical zero.
  std::optional<Quantity> zero = Quantity::Sub(Q("1Ki"), Q("1024"));
  ASSERT_TRUE(zero.has_value());
  EXPECT_TRUE(zero->IsZero());
  EXPECT_FALSE(zero->Negative());
  EXPECT_EQ(zero->Sign(), 0);
}

TEST(QuantityArithmeticTest, UnrepresentableResultsAreReportedNotRounded) {
  // The exact sums need more significant digits than a mantissa holds.
  EXPECT_FALSE(Quantity::Add(Q("1e60"), Q("1")).has_value());
  EXPECT_FALSE(Quantity::Add(Q("99999999999999999999999999999999999999"), Q("1e-10")).has_value());
  EXPECT_FALSE(Quantity::Sub(Q("1e-100"), Q("1e100")).has_value());
  // Large but exact: trailing zeros are folded into the exponent.
  std::optional<Quantity> big = Quantity::Add(Q("1e60"), Q("1e60"));
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(Quantity::Compare(*big, Q("2e60")), 0);
  // Saturation stays with Value(): the sum is exact, reading it as int64 saturates.
  std::optional<Quantity> over = Quantity::Add(Q("9223372036854775807"), Q("9223372036854775807"));
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->Value(), kMax);
  EXPECT_EQ(Quantity::Sub(Q("-9223372036854775808"), Q("1"))->Value(), kMin);
}

}  // namespace
}  // namespace berth::api
