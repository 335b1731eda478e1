#include "pkg/util/time.h"

#include <limits>

namespace berth::util {
namespace {

using std::chrono::days;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using std::chrono::sys_days;

constexpr int64_t kSecondsPerDay = 86400;
constexpr int64_t kNanosPerSecond = 1'000'000'000;
// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years RFC 3339 can write.
constexpr int64_t kFirstRfc3339Second = -62'167'219'200;
constexpr int64_t kLastRfc3339Second = 253'402'300'799;

// Seconds since the epoch and the nanoseconds within that second, the second floored, so a time
// before 1970 keeps a fraction in [0, 1e9) as Go's time does.
struct Split {
  int64_t seconds;
  int64_t nanos;
};

Split SplitTime(SystemTime t) {
  const auto since = std::chrono::duration_cast<nanoseconds>(t.time_since_epoch());
  // Truncated, then floored by hand: floor<seconds> of the earliest time_point is a second
  // before anything nanoseconds can hold, and the difference would overflow.
  int64_t whole = std::chrono::duration_cast<seconds>(since).count();
  int64_t nanos = (since % seconds(1)).count();
  if (nanos < 0) {
    nanos += 1'000'000'000;
    whole--;
  }
  return {whole, nanos};
}

// Writes `value` (non-negative, below 10^width) as `width` decimal digits, zero-padded, at `out`.
// By hand: snprintf cost more than the rest of decoding a timestamp, and every object the
// informers decode carries some.
void PutDigits(char* out, int64_t value, int width) {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

// The caller keeps `seconds` within the RFC 3339 years, so the civil date fits its fields.
std::string FormatSeconds(int64_t seconds) {
  int64_t day = seconds / kSecondsPerDay;
  int64_t rem = seconds % kSecondsPerDay;
  if (rem < 0) {
    rem += kSecondsPerDay;
    day--;
  }
  const std::chrono::year_month_day date{sys_days{days{day}}};
  std::string text = "0000-00-00T00:00:00";
  PutDigits(&text[0], static_cast<int>(date.year()), 4);
  PutDigits(&text[5], static_cast<unsigned>(date.month()), 2);
  PutDigits(&text[8], static_cast<unsigned>(date.day()), 2);
  PutDigits(&text[11], rem / 3600, 2);
  PutDigits(&text[14], rem / 60 % 60, 2);
  PutDigits(&text[17], rem % 60, 2);
  return text;
}

// `digits` fractional digits of `nanos` (0 <= nanos < 1e9), truncated.
std::string Fraction(int64_t nanos, int digits) {
  std::string text = ".000000000";
  PutDigits(&text[1], nanos, 9);
  text.resize(1 + static_cast<size_t>(digits));
  return text;
}

std::string FormatWithDigits(SystemTime t, int digits) {
  const Split split = SplitTime(t);
  std::string out = FormatSeconds(split.seconds);
  if (digits > 0) out += Fraction(split.nanos, digits);
  return out + "Z";
}

// The unsigned number of `count` decimal digits at text[at...]; false when any is not a digit.
bool Digits(std::string_view text, size_t at, size_t count, unsigned* out) {
  if (at + count > text.size()) return false;
  unsigned value = 0;
  for (size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + static_cast<unsigned>(text[i] - '0');
  }
  *out = value;
  return true;
}

}  // namespace

std::string FormatRfc3339(SystemTime t) { return FormatWithDigits(t, 0); }

std::string FormatRfc3339Milli(SystemTime t) { return FormatWithDigits(t, 3); }

std::string FormatRfc3339Micro(SystemTime t) { return FormatWithDigits(t, 6); }

std::string FormatRfc3339Nano(SystemTime t) {
  const Split split = SplitTime(t);
  std::string out = FormatSeconds(split.seconds);
  if (split.nanos != 0) {
    std::string fraction = Fraction(split.nanos, 9);
    while (fraction.back() == '0') fraction.pop_back();
    out += fraction;
  }
  return out + "Z";
}

std::optional<std::string> FormatUnixSecondsRfc3339(int64_t seconds) {
  if (seconds < kFirstRfc3339Second || seconds > kLastRfc3339Second) return std::nullopt;
  return FormatSeconds(seconds) + "Z";
}

std::optional<SystemTime> ParseRfc3339(std::string_view text) {
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':' || !Digits(text, 0, 4, &year) || !Digits(text, 5, 2, &month) ||
      !Digits(text, 8, 2, &day) || !Digits(text, 11, 2, &hour) || !Digits(text, 14, 2, &minute) ||
      !Digits(text, 17, 2, &second)) {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year(static_cast<int>(year)),
                                         std::chrono::month(month), std::chrono::day(day)};
  if (!date.ok() || hour > 23 || minute > 59 || second > 59) return std::nullopt;

  size_t at = 19;
  int64_t nanos = 0;
  if (text[at] == '.') {
    int64_t scale = kNanosPerSecond / 10;
    const size_t first = ++at;
    for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) {
      nanos += (text[at] - '0') * scale;
      scale /= 10;
    }
    if (at == first) return std::nullopt;
  }
  int64_t offset = 0;
  const std::string_view zone = text.substr(at);
  if (zone != "Z") {
    unsigned offset_hours = 0, offset_minutes = 0;
    if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-') || zone[3] != ':' ||
        !Digits(zone, 1, 2, &offset_hours) || !Digits(zone, 4, 2, &offset_minutes) ||
        offset_hours > 23 || offset_minutes > 59) {
      return std::nullopt;
    }
    offset = int64_t{offset_hours} * 3600 + int64_t{offset_minutes} * 60;
    if (zone[0] == '-') offset = -offset;
  }

  const int64_t total = int64_t{sys_days{date}.time_since_epoch().count()} * kSecondsPerDay +
                        int64_t{hour} * 3600 + int64_t{minute} * 60 + int64_t{second} - offset;
  using Clock = std::chrono::system_clock;
  // One second inside the clock's range, so adding the fraction cannot overflow.
  const int64_t limit = std::chrono::duration_cast<seconds>(Clock::duration::max()).count() - 1;
  if (total > limit) return Clock::time_point::max();
  if (total < -limit) return Clock::time_point::min();
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(seconds(total))) +
         std::chrono::duration_cast<Clock::duration>(nanoseconds(nanos));
}

std::optional<nanoseconds> ParseGoDuration(std::string_view s) {
  // Mirrors Go's time.ParseDuration, including its overflow rules.
  constexpr uint64_t kMaxMagnitude = uint64_t{1} << 63;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") {
    return nanoseconds{0};
  }
  if (s.empty()) {
    return std::nullopt;
  }
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  uint64_t total = 0;
  while (!s.empty()) {
    if (s[0] != '.' && !is_digit(s[0])) {
      return std::nullopt;
    }
    // Integer part; overflow is an error.
    uint64_t whole = 0;
    size_t whole_digits = 0;
    while (!s.empty() && is_digit(s[0])) {
      if (whole > (kMaxMagnitude - 1) / 10) {
        return std::nullopt;
      }
      whole = whole * 10 + static_cast<uint64_t>(s[0] - '0');
      if (whole > kMaxMagnitude) {
        return std::nullopt;
      }
      s.remove_prefix(1);
      ++whole_digits;
    }
    // Fraction; digits past int64 precision are dropped, as Go does.
    uint64_t frac = 0;
    double scale = 1;
    size_t frac_digits = 0;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      bool overflow = false;
      while (!s.empty() && is_digit(s[0])) {
        if (!overflow) {
          if (frac > (kMaxMagnitude - 1) / 10) {
            overflow = true;
          } else {
            uint64_t next = frac * 10 + static_cast<uint64_t>(s[0] - '0');
            if (next > kMaxMagnitude) {
              overflow = true;
            } else {
              frac = next;
              scale *= 10;
            }
          }
        }
        s.remove_prefix(1);
        ++frac_digits;
      }
    }
    if (whole_digits == 0 && frac_digits == 0) {
      return std::nullopt;
    }
    size_t unit_len = 0;
    while (unit_len < s.size() && s[unit_len] != '.' && !is_digit(s[unit_len])) {
      ++unit_len;
    }
    if (unit_len == 0) {
      return std::nullopt;
    }
    std::string_view unit_name = s.substr(0, unit_len);
    s.remove_prefix(unit_len);
    uint64_t unit = 0;
    if (unit_name == "ns") {
      unit = 1;
    } else if (unit_name == "us" || unit_name == "\xC2\xB5s" || unit_name == "\xCE\xBCs") {
      unit = 1'000;
    } else if (unit_name == "ms") {
      unit = 1'000'000;
    } else if (unit_name == "s") {
      unit = 1'000'000'000;
    } else if (unit_name == "m") {
      unit = 60'000'000'000;
    } else if (unit_name == "h") {
      unit = 3'600'000'000'000;
    } else {
      return std::nullopt;
    }
    if (whole > kMaxMagnitude / unit) {
      return std::nullopt;
    }
    whole *= unit;
    if (frac > 0) {
      whole +=
          static_cast<uint64_t>(static_cast<double>(frac) * (static_cast<double>(unit) / scale));
      if (whole > kMaxMagnitude) {
        return std::nullopt;
      }
    }
    total += whole;
    if (total > kMaxMagnitude) {
      return std::nullopt;
    }
  }
  if (negative) {
    return nanoseconds{static_cast<int64_t>(0 - total)};
  }
  if (total > kMaxMagnitude - 1) {
    return std::nullopt;
  }
  return nanoseconds{static_cast<int64_t>(total)};
}

namespace {

// `value` / 10^precision as decimal text, the fraction's trailing zeros (and a bare '.') trimmed.
std::string WithFraction(uint64_t value, int precision) {
  uint64_t scale = 1;
  for (int i = 0; i < precision; ++i) scale *= 10;
  std::string out = std::to_string(value / scale);
  if (precision == 0) return out;
  std::string fraction = std::to_string(value % scale);
  fraction.insert(0, static_cast<size_t>(precision) - fraction.size(), '0');
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  if (!fraction.empty()) out += "." + fraction;
  return out;
}

}  // namespace

std::string FormatGoDuration(nanoseconds d) {
  const int64_t ns = d.count();
  if (ns == 0) return "0s";
  // The magnitude in unsigned, so INT64_MIN does not overflow.
  const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::string out = ns < 0 ? "-" : "";
  if (magnitude < 1'000) return out + std::to_string(magnitude) + "ns";
  if (magnitude < 1'000'000) return out + WithFraction(magnitude, 3) + "\xC2\xB5s";
  if (magnitude < 1'000'000'000) return out + WithFraction(magnitude, 6) + "ms";
  // Go writes hours and minutes whenever a larger unit is present: "1h0m0s".
  const uint64_t whole_seconds = magnitude / 1'000'000'000;
  const uint64_t hours = whole_seconds / 3600;
  const uint64_t minutes = whole_seconds / 60 % 60;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (hours > 0 || minutes > 0) out += std::to_string(minutes) + "m";
  return out + WithFraction(magnitude % 60'000'000'000, 9) + "s";
}

}  // namespace berth::util
