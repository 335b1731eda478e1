#include "pkg/plugins/coscheduling/informer_source.h"

#include <time.h>

#include <ctime>

namespace berth::plugins::coscheduling {

using Clock = std::chrono::system_clock;

Clock::time_point ParseTime(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') return Clock::time_point();
  return Clock::from_time_t(timegm(&tm));
}

std::string FormatTime(Clock::time_point t) {
  const std::time_t seconds = Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void PatchStatus(client::Client& client, const std::string& path, const nlohmann::json& body,
                 client::PatchType type) {
  try {
    client.Patch(path, body, type);
  } catch (const client::ApiError& e) {
    // Deleted meanwhile: nothing to keep current.
    if (e.reason() != client::ErrorReason::kNotFound) throw;
  }
}

}  // namespace berth::plugins::coscheduling
