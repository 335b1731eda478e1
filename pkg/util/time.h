#ifndef BERTH_PKG_UTIL_TIME_H_
#define BERTH_PKG_UTIL_TIME_H_

// The one home of wall-clock text: RFC 3339 timestamps as Kubernetes writes and reads them
// (metav1.Time, metav1.MicroTime, Go's RFC3339Nano) and Go's duration strings. Every function is
// pure, thread-safe and never throws on bad input: a malformed text is a nullopt.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace berth::util {

using SystemTime = std::chrono::system_clock::time_point;

// "2006-01-02T15:04:05Z": UTC, whole seconds (the fraction is dropped, rounding toward the past),
// which is metav1.Time's JSON form.
std::string FormatRfc3339(SystemTime t);
// "2006-01-02T15:04:05.000Z": UTC with exactly three fractional digits (the /debug explain pages).
std::string FormatRfc3339Milli(SystemTime t);
// "2006-01-02T15:04:05.000000Z": UTC with exactly six fractional digits, which is
// metav1.MicroTime's JSON form (Lease times, events.k8s.io eventTime) and klog's timestamp.
std::string FormatRfc3339Micro(SystemTime t);
// Go's time.RFC3339Nano in UTC: up to nine fractional digits with trailing zeros trimmed, and no
// '.' at all when the fraction is zero ("2006-01-02T15:04:05.5Z", "2006-01-02T15:04:05Z").
std::string FormatRfc3339Nano(SystemTime t);
// metav1.Time for a count of seconds since the Unix epoch that may lie outside what system_clock
// holds (protobuf's Timestamp runs to year 9999). Nullopt outside years 0000..9999, where Go's
// JSON encoding of a time fails too.
std::optional<std::string> FormatUnixSecondsRfc3339(int64_t seconds);

// RFC 3339 as Go's strict parser (time.Time's UnmarshalJSON) reads it:
//   YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm)
// with an upper-case 'T' and 'Z', a fraction of one or more digits (digits past the ninth are
// dropped), a day that exists in its month (leap years included), seconds 00..59 (no leap
// second, as Go) and an offset of at most 23:59. Nullopt on anything else. A valid time past
// system_clock's range (about 1677..2262) saturates to time_point::min() or max(): an expiry that
// far out never comes and one that far back has passed.
std::optional<SystemTime> ParseRfc3339(std::string_view text);

// Go's time.ParseDuration: "15s", "1m30s", "-1.5h", "500ms", "3µs", "0". Nullopt when malformed
// or outside int64 nanoseconds, with Go's overflow rules.
std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view text);
// Go's time.Duration.String(): "0s", "1.5µs", "500ms", "1m30s", "1h0m0s", "-2.000000001s".
// ParseGoDuration reads every output back to the same duration.
std::string FormatGoDuration(std::chrono::nanoseconds d);

}  // namespace berth::util

#endif  // BERTH_PKG_UTIL_TIME_H_
