
#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <string>
#include <utility>

#include "pkg/client/client.h"
#include "pkg/client/http_client.h"

namespace berth::client {
namespace {

// Long non-Status bodies (an HTML page from a proxy) are cut so error messages stay readable.
constexpr size_t kMaxBodyInMessage = 512;

std::optional<ErrorReason> ReasonFromStatusReason(const std::string& reason) {
  if (reason == "BadRequest") return ErrorReason::kBadRequest;
  if (reason == "Unauthorized") return ErrorReason::kUnauthorized;
  if (reason == "Forbidden") return ErrorReason::kForbidden;
  if (reason == "NotFound") return ErrorReason::kNotFound;
  if (reason == "AlreadyExists") return ErrorReason::kAlreadyExists;
  if (reason == "Conflict") return ErrorReason::kConflict;
  if (reason == "Gone" || reason == "Expired") return ErrorReason::kGone;
  if (reason == "Invalid") return ErrorReason::kInvalid;
  if (reason == "TooManyRequests") return ErrorReason::kTooManyRequests;
  if (reason == "InternalError") return ErrorReason::kInternalError;
  if (reason == "ServiceUnavailable") return ErrorReason::kServiceUnavailable;
  if (reason == "Timeout" || reason == "ServerTimeout") return ErrorReason::kTimeout;
  return std::nullopt;
}

ErrorReason ReasonFromHttpStatus(int status) {
  switch (status) {
    case 400:
      return ErrorReason::kBadRequest;
    case 401:
      return ErrorReason::kUnauthorized;
    case 403:
      return ErrorReason::kForbidden;
    case 404:
      return ErrorReason::kNotFound;
    case 409:
      return ErrorReason::kConflict;
    case 410:
      return ErrorReason::kGone;
    case 422:
      return ErrorReason::kInvalid;
    case 429:
      return ErrorReason::kTooManyRequests;
    case 500:
      return ErrorReason::kInternalError;
    case 502:
    case 503:
      return ErrorReason::kServiceUnavailable;
    case 504:
      return ErrorReason::kTimeout;
    default:
      return ErrorReason::kUnknown;
  }
}

std::string FormatWhat(ErrorReason reason, int http_status, const std::string& message) {
  std::string what = ErrorReasonName(reason);
  if (http_status > 0) what += " (" + std::to_string(http_status) + ")";
  what += ": " + message;
  return what;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

const char* ErrorReasonName(ErrorReason reason) {
  switch (reason) {
    case ErrorReason::kUnknown:
      return "Unknown";
    case ErrorReason::kBadRequest:
      return "BadRequest";
    case ErrorReason::kUnauthorized:
      return "Unauthorized";
    case ErrorReason::kForbidden:
      return "Forbidden";
    case ErrorReason::kNotFound:
      return "NotFound";
    case ErrorReason::kAlreadyExists:
      return "AlreadyExists";
    case ErrorReason::kConflict:
      return "Conflict";
    case ErrorReason::kGone:
      return "Gone";
    case ErrorReason::kInvalid:
      return "Invalid";
    case ErrorReason::kTooManyRequests:
      return "TooManyRequests";
    case ErrorReason::kInternalError:
      return "InternalError";
    case ErrorReason::kServiceUnavailable:
      return "ServiceUnavailable";
    case ErrorReason::kTimeout:
      return "Timeout";
    case ErrorReason::kTransport:
      return "Transport";
    case ErrorReason::kTLS:
      return "TLS";
  }
  return "Unknown";
}

ApiError::ApiError(ErrorReason reason, int http_status, std::string message,
                   std::optional<std::chrono::seconds> retry_after)
    : std::runtime_error(FormatWhat(reason, http_status, message)),
      reason_(reason),
      http_status_(http_status),
      message_(std::move(message)),
      retry_after_(retry_after) {}

bool ApiError::Transient() const {
  switch (reason_) {
    case ErrorReason::kTooManyRequests:
    case ErrorReason::kInternalError:
    case ErrorReason::kServiceUnavailable:
    case ErrorReason::kTimeout:
    case ErrorReason::kTransport:
      return true;
    case ErrorReason::kTLS:
      return false;
    default:
      break;
  }
  return http_status_ == 429 || http_status_ == 500 || http_status_ == 502 || http_status_ == 503 ||
         http_status_ == 504;
}

ApiError ErrorFromResponse(int http_status, const std::string& body,
                           std::optional<std::chrono::seconds> retry_after) {
  std::optional<ErrorReason> reason;
  std::string message;
  const nlohmann::json status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object()) {
    if (auto it = status.find("reason"); it != status.end() && it->is_string()) {
      reason = ReasonFromStatusReason(it->get<std::string>());
    }
    if (auto it = status.find("message"); it != status.end() && it->is_string()) {
      message = it->get<std::string>();
    }
    if (!retry_after) {
      if (auto details = status.find("details"); details != status.end() && details->is_object()) {
        if (auto secs = details->find("retryAfterSeconds");
            secs != details->end() && secs->is_number_integer() && secs->get<int64_t>() > 0) {
          retry_after = std::chrono::seconds(secs->get<int64_t>());
        }
      }
    }
  }
  if (message.empty() && !status.is_object()) {
    std::string_view text = Trim(body);
    if (text.size() > kMaxBodyInMessage) text = text.substr(0, kMaxBodyInMessage);
    message = std::string(text);
  }
  if (message.empty()) {
    message = "the server responded with HTTP status " + std::to_string(http_status);
  }
  return ApiError(reason.value_or(ReasonFromHttpStatus(http_status)), http_status,
                  std::move(message), retry_after);
}

namespace internal {

std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value,
                                                    std::chrono::system_clock::time_point now) {
  value = Trim(value);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (value.size() > 9) return kRetryAfterCap * 1000;  // Absurdly large: callers cap it.
    return std::chrono::seconds(std::stoll(std::string(value)));
  }
  // IMF-fixdate, the only date form senders may generate: "Sun, 06 Nov 1994 08:49:37 GMT".
  std::tm tm{};
  const std::string text(value);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const time_t when = timegm(&tm);
  if (when == static_cast<time_t>(-1)) return std::nullopt;
  // In whole seconds: the clock's nanoseconds overflow for dates past 2262 or before 1678, which
  // the header may name. `when` is whole, so rounding the difference up is flooring `now`.
  const std::chrono::seconds delta =
      std::chrono::seconds(when) - std::chrono::floor<std::chrono::seconds>(now.time_since_epoch());
  if (delta <= std::chrono::seconds(0)) return std::chrono::seconds(0);
  return delta;
}

std::chrono::milliseconds BackoffDelay(int failed_attempts, const ApiError& error, double jitter) {
  if (error.retry_after()) {
    // Capped in seconds: a Status may ask for more seconds than milliseconds can count.
    return std::min(*error.retry_after(), std::chrono::seconds(kRetryAfterCap));
  }
  jitter = std::clamp(jitter, 0.0, 1.0);
  const int doublings = std::clamp(failed_attempts - 1, 0, 16);
  const auto base =
      std::min<std::chrono::milliseconds>(kBackoffBase * (1LL << doublings), kBackoffCap);
  return std::chrono::milliseconds(std::llround(base.count() * (0.5 + 0.5 * jitter)));
}

bool ShouldRetry(const ApiError& error, bool idempotent, bool request_not_sent) {
  if (error.reason() == ErrorReason::kTLS || !error.Transient()) return false;
  if (idempotent) return true;
  return request_not_sent || error.http_status() == 429 || error.http_status() == 503;
}

}  // namespace internal
}  // namespace berth::client
