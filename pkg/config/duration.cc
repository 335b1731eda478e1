#include "pkg/config/duration.h"

#include <cstdint>
#include <limits>

namespace berth::config {

std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view s) {
  // Mirrors Go's time.ParseDuration, including its overflow rules.
  constexpr uint64_t kMaxMagnitude = uint64_t{1} << 63;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") {
    return std::chrono::nanoseconds{0};
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
    return std::chrono::nanoseconds{static_cast<int64_t>(0 - total)};
  }
  if (total > kMaxMagnitude - 1) {
    return std::nullopt;
  }
  return std::chrono::nanoseconds{static_cast<int64_t>(total)};
}

}  // namespace berth::config
