#ifndef BERTH_PKG_CONFIG_DURATION_H_
#define BERTH_PKG_CONFIG_DURATION_H_

#include <chrono>
#include <optional>
#include <string_view>

namespace berth::config {

// Go's time.ParseDuration: "15s", "1m30s", "-1.5h", "500ms", "0". Nullopt when malformed or
// outside int64 nanoseconds.
std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view text);

}  // namespace berth::config

#endif  // BERTH_PKG_CONFIG_DURATION_H_
