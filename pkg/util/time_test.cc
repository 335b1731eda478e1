#include "pkg/util/time.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace berth::util {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// 2024-05-01T12:00:00Z.
constexpr int64_t kMay2024 = 1714564800;

SystemTime At(int64_t unix_seconds, nanoseconds fraction = nanoseconds(0)) {
  return SystemTime(seconds(unix_seconds)) + fraction;
}

// Nanoseconds since the epoch of a parse, or nullopt.
std::optional<int64_t> ParsedNanos(std::string_view text) {
  const std::optional<SystemTime> t = ParseRfc3339(text);
  if (!t) return std::nullopt;
  return std::chrono::duration_cast<nanoseconds>(t->time_since_epoch()).count();
}

TEST(Rfc3339FormatTest, EachPrecisionHasItsFixedForm) {
  const SystemTime t = At(kMay2024, nanoseconds(123'456'789));
  EXPECT_EQ(FormatRfc3339(t), "2024-05-01T12:00:00Z");
  EXPECT_EQ(FormatRfc3339Milli(t), "2024-05-01T12:00:00.123Z");
  EXPECT_EQ(FormatRfc3339Micro(t), "2024-05-01T12:00:00.123456Z");
  EXPECT_EQ(FormatRfc3339Nano(t), "2024-05-01T12:00:00.123456789Z");

  const SystemTime whole = At(kMay2024);
  EXPECT_EQ(FormatRfc3339Milli(whole), "2024-05-01T12:00:00.000Z");
  EXPECT_EQ(FormatRfc3339Micro(whole), "2024-05-01T12:00:00.000000Z");
}

TEST(Rfc3339FormatTest, NanoTrimsTrailingZerosAsGoDoes) {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "2024-05-01T12:00:00Z"},
      {500'000'000, "2024-05-01T12:00:00.5Z"},
      {120'000'000, "2024-05-01T12:00:00.12Z"},
      {1'000, "2024-05-01T12:00:00.000001Z"},
      {1, "2024-05-01T12:00:00.000000001Z"},
      {100, "2024-05-01T12:00:00.0000001Z"},
  };
  for (const auto& [nanos, text] : cases) {
    EXPECT_EQ(FormatRfc3339Nano(At(kMay2024, nanoseconds(nanos))), text) << nanos;
  }
}

// A time before 1970 floors its second and keeps a positive fraction, as Go's time does. The
// copies in klog's timestamp, the event recorder and the explain pages truncated toward zero and
// wrote "1970-01-01T00:00:00.-500000Z" here.
TEST(Rfc3339FormatTest, BeforeTheEpochTheSecondIsFloored) {
  const SystemTime half_before = SystemTime(-milliseconds(500));
  EXPECT_EQ(FormatRfc3339(half_before), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatRfc3339Milli(half_before), "1969-12-31T23:59:59.500Z");
  EXPECT_EQ(FormatRfc3339Micro(half_before), "1969-12-31T23:59:59.500000Z");
  EXPECT_EQ(FormatRfc3339Nano(half_before), "1969-12-31T23:59:59.5Z");
  EXPECT_EQ(FormatRfc3339Micro(SystemTime(-microseconds(1))), "1969-12-31T23:59:59.999999Z");
}

// The earliest and latest times the clock holds (what ParseRfc3339 saturates to) format without
// overflow: flooring the earliest to a whole second leaves the range of nanoseconds.
TEST(Rfc3339FormatTest, TheClocksEndsFormatWithoutOverflow) {
  EXPECT_EQ(FormatRfc3339Nano(SystemTime::min()), "1677-09-21T00:12:43.145224192Z");
  EXPECT_EQ(FormatRfc3339(SystemTime::min()), "1677-09-21T00:12:43Z");
  EXPECT_EQ(FormatRfc3339Nano(SystemTime::max()), "2262-04-11T23:47:16.854775807Z");
}

TEST(Rfc3339FormatTest, CivilDatesAcrossLeapYears) {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "1970-01-01T00:00:00Z"},
      {951782400, "2000-02-29T00:00:00Z"},  // divisible by 400: a leap year
      {951868800, "2000-03-01T00:00:00Z"},
      {1709164800, "2024-02-29T00:00:00Z"},  // divisible by 4
      {1677542400, "2023-02-28T00:00:00Z"},
      {1677628800, "2023-03-01T00:00:00Z"},  // no 29 February in 2023
      {4107542400, "2100-03-01T00:00:00Z"},  // 2100 is divisible by 100, not a leap year
      {1735689599, "2024-12-31T23:59:59Z"},
      {-2208988800, "1900-01-01T00:00:00Z"},
  };
  for (const auto& [unix_seconds, text] : cases) {
    EXPECT_EQ(FormatRfc3339(At(unix_seconds)), text) << unix_seconds;
    EXPECT_EQ(FormatUnixSecondsRfc3339(unix_seconds), text) << unix_seconds;
  }
}

TEST(Rfc3339FormatTest, UnixSecondsOutsideFourDigitYearsHaveNoForm) {
  EXPECT_EQ(FormatUnixSecondsRfc3339(253402300799), "9999-12-31T23:59:59Z");
  EXPECT_EQ(FormatUnixSecondsRfc3339(-62135596800), "0001-01-01T00:00:00Z");
  EXPECT_EQ(FormatUnixSecondsRfc3339(-62167219200), "0000-01-01T00:00:00Z");
  EXPECT_EQ(FormatUnixSecondsRfc3339(253402300800), std::nullopt);
  EXPECT_EQ(FormatUnixSecondsRfc3339(-62167219201), std::nullopt);
  EXPECT_EQ(FormatUnixSecondsRfc3339(std::numeric_limits<int64_t>::max()), std::nullopt);
  EXPECT_EQ(FormatUnixSecondsRfc3339(std::numeric_limits<int64_t>::min()), std::nullopt);
}

TEST(Rfc3339ParseTest, OffsetsAndFractions) {
  const int64_t base = kMay2024 * 1'000'000'000;
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"2024-05-01T12:00:00Z", base},
      {"2024-05-01T14:00:00+02:00", base},
      {"2024-05-01T06:30:00-05:30", base},
      {"2024-05-01T12:00:00+00:00", base},
      {"2024-05-01T12:00:00-00:00", base},
      {"2024-05-02T11:59:00+23:59", base},
      {"2024-05-01T12:00:00.5Z", base + 500'000'000},
      {"2024-05-01T12:00:00.12Z", base + 120'000'000},
      {"2024-05-01T12:00:00.123Z", base + 123'000'000},
      {"2024-05-01T12:00:00.1234Z", base + 123'400'000},
      {"2024-05-01T12:00:00.12345Z", base + 123'450'000},
      {"2024-05-01T12:00:00.123456Z", base + 123'456'000},
      {"2024-05-01T12:00:00.1234567Z", base + 123'456'700},
      {"2024-05-01T12:00:00.12345678Z", base + 123'456'780},
      {"2024-05-01T12:00:00.123456789Z", base + 123'456'789},
      // Digits past the ninth are dropped, as Go does.
      {"2024-05-01T12:00:00.1234567899Z", base + 123'456'789},
      {"2024-05-01T14:00:00.25+02:00", base + 250'000'000},
      {"1969-12-31T23:59:59.5Z", -500'000'000},
      {"2000-02-29T00:00:00Z", int64_t{951782400} * 1'000'000'000},
  };
  for (const auto& [text, nanos] : cases) {
    EXPECT_EQ(ParsedNanos(text), nanos) << text;
  }
}

TEST(Rfc3339ParseTest, RoundTripsEveryFormatter) {
  const SystemTime t = At(kMay2024, nanoseconds(123'456'789));
  EXPECT_EQ(ParseRfc3339(FormatRfc3339Nano(t)), t);
  EXPECT_EQ(ParseRfc3339(FormatRfc3339Micro(t)), At(kMay2024, nanoseconds(123'456'000)));
  EXPECT_EQ(ParseRfc3339(FormatRfc3339Milli(t)), At(kMay2024, nanoseconds(123'000'000)));
  EXPECT_EQ(ParseRfc3339(FormatRfc3339(t)), At(kMay2024));
}

// Fields out of range are refused, not normalized into the next month or minute. The exec
// credential copy (through timegm) read 2023-02-29 as 1 March and accepted a leap second, which
// Go's time.Parse refuses.
TEST(Rfc3339ParseTest, RefusesFieldsOutOfRange) {
  for (const char* text : {
           "2023-02-29T00:00:00Z",  // not a leap year
           "1900-02-29T00:00:00Z",  // divisible by 100, not by 400
           "2024-02-30T00:00:00Z",
           "2024-04-31T00:00:00Z",
           "2024-00-10T00:00:00Z",
           "2024-13-10T00:00:00Z",
           "2024-05-00T00:00:00Z",
           "2024-05-32T00:00:00Z",
           "2024-05-01T24:00:00Z",
           "2024-05-01T12:60:00Z",
           "2024-05-01T12:00:60Z",  // leap second
           "2024-05-01T12:00:00+24:00",
           "2024-05-01T12:00:00+01:60",
       }) {
    EXPECT_EQ(ParseRfc3339(text), std::nullopt) << text;
  }
}

TEST(Rfc3339ParseTest, RefusesGarbage) {
  for (const char* text : {
           "",
           "Z",
           "2024-05-01",
           "2024-05-01T12:00:00",       // no zone
           "2024-05-01 12:00:00Z",      // space for T
           "2024-05-01t12:00:00Z",      // Go wants an upper-case T
           "2024-05-01T12:00:00z",      // and an upper-case Z
           "2024-05-01T12:00:00.Z",     // a '.' without digits
           "2024-05-01T12:00:00,5Z",    // a comma
           "2024-05-01T12:00:00+0200",  // no colon in the offset
           "2024-05-01T12:00:00+02",    // no minutes in the offset
           "2024-05-01T12:00:00+02:00Z",
           "2024-05-01T12:00:00ZZ",
           "2024-05-01T12:00:00 Z",
           "24-05-01T12:00:00Z",
           "2024-5-01T12:00:00Z",
           "2024-05-01T1:00:00Z",
           "+024-05-01T12:00:00Z",
           "2024-05-01T12:00:0aZ",
           "2024/05/01T12:00:00Z",
           "2024-05-01T12:00:00.5",
           "2024-05-01T12:00:00.5x",
       }) {
    EXPECT_EQ(ParseRfc3339(text), std::nullopt) << text;
  }
}

// system_clock holds nanoseconds, so it ends in 2262 and begins in 1677; a valid time beyond
// saturates instead of overflowing.
TEST(Rfc3339ParseTest, SaturatesPastTheClocksRange) {
  EXPECT_EQ(ParseRfc3339("7663-01-01T00:00:00Z"), SystemTime::max());
  EXPECT_EQ(ParseRfc3339("9999-12-31T23:59:59.999999999Z"), SystemTime::max());
  EXPECT_EQ(ParseRfc3339("9999-12-31T23:59:59.999-23:59"), SystemTime::max());
  EXPECT_EQ(ParseRfc3339("0000-01-01T00:00:00Z"), SystemTime::min());
  EXPECT_EQ(ParseRfc3339("0001-01-01T00:00:00+23:59"), SystemTime::min());
  EXPECT_EQ(ParsedNanos("2262-01-01T00:00:00Z"), int64_t{9214646400} * 1'000'000'000);
}

TEST(GoDurationTest, Parses) {
  EXPECT_EQ(ParseGoDuration("15s"), nanoseconds(15'000'000'000));
  EXPECT_EQ(ParseGoDuration("1m30s"), nanoseconds(90'000'000'000));
  EXPECT_EQ(ParseGoDuration("500ms"), nanoseconds(500'000'000));
  EXPECT_EQ(ParseGoDuration("1.5h"), nanoseconds(5'400'000'000'000));
  EXPECT_EQ(ParseGoDuration(".5s"), nanoseconds(500'000'000));
  EXPECT_EQ(ParseGoDuration("-2m"), nanoseconds(-120'000'000'000));
  EXPECT_EQ(ParseGoDuration("+3us"), nanoseconds(3'000));
  EXPECT_EQ(ParseGoDuration("3\xC2\xB5s"), nanoseconds(3'000));
  EXPECT_EQ(ParseGoDuration("3\xCE\xBCs"), nanoseconds(3'000));
  EXPECT_EQ(ParseGoDuration("1h2m3s4ms5us6ns"), nanoseconds(3'723'004'005'006));
  EXPECT_EQ(ParseGoDuration("0"), nanoseconds(0));
  EXPECT_EQ(ParseGoDuration("2562047h47m16.854775807s"),
            nanoseconds(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(ParseGoDuration("-2562047h47m16.854775808s"),
            nanoseconds(std::numeric_limits<int64_t>::min()));
  for (const char* bad :
       {"", "s", "1", "15", "1x", "1.s.", ".s", "-", "--1s", "1 s", "1h-1m", "1e3s",
        "2562047h47m16.854775808s", "9223372036854775808ns", "9999999999999999999h"}) {
    EXPECT_EQ(ParseGoDuration(bad), std::nullopt) << bad;
  }
}

TEST(GoDurationTest, FormatsAsGoDoes) {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "0s"},
      {1, "1ns"},
      {999, "999ns"},
      {1'000, "1\xC2\xB5s"},
      {1'500, "1.5\xC2\xB5s"},
      {1'000'000, "1ms"},
      {500'000'000, "500ms"},
      {1'100'000, "1.1ms"},
      {15'000'000'000, "15s"},
      {90'000'000'000, "1m30s"},
      {1'500'000'000, "1.5s"},
      {61'050'000'000, "1m1.05s"},
      {3'600'000'000'000, "1h0m0s"},
      {3'723'004'005'006, "1h2m3.004005006s"},
      {-2'000'000'000, "-2s"},
      {-2'000'000'001, "-2.000000001s"},
      {std::numeric_limits<int64_t>::max(), "2562047h47m16.854775807s"},
      {std::numeric_limits<int64_t>::min(), "-2562047h47m16.854775808s"},
  };
  for (const auto& [nanos, text] : cases) {
    EXPECT_EQ(FormatGoDuration(nanoseconds(nanos)), text) << nanos;
    EXPECT_EQ(ParseGoDuration(text), nanoseconds(nanos)) << text;
  }
  // Whole milliseconds, as the configuration holds them, convert without loss.
  EXPECT_EQ(FormatGoDuration(milliseconds(61'050)), "1m1.05s");
}

}  // namespace
}  // namespace berth::util
