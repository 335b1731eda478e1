// Error responses: the metav1.Status body of a failed request (JSON, or protobuf when the request
// preferred it) and the Retry-After header, which together decide whether and when a request is
// retried (pkg/client/client.h's ErrorFromResponse, http_client.h's ParseRetryAfter and
// BackoffDelay). The first byte picks the HTTP status; the rest is the body, and its first line is
// also read as a Retry-After value. Whatever the server says, the pause before a retry must stay
// within the client's caps.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "pkg/api/errors.h"
#include "pkg/api/protobuf.h"
#include "pkg/client/client.h"
#include "pkg/client/http_client.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

using client::internal::BackoffDelay;
using client::internal::kBackoffCap;
using client::internal::kRetryAfterCap;

constexpr int kStatuses[] = {400, 401, 403, 404, 409, 410, 422, 429, 500, 502, 503, 504, 0, 200};

void CheckError(const client::ApiError& error) {
  for (int attempts = 1; attempts <= client::internal::kMaxAttempts; ++attempts) {
    for (const double jitter : {0.0, 0.5, 1.0}) {
      const std::chrono::milliseconds delay = BackoffDelay(attempts, error, jitter);
      Require(delay.count() >= 0 &&
                  delay <= std::max<std::chrono::milliseconds>(kRetryAfterCap, kBackoffCap),
              "the pause before a retry stays within the caps");
    }
  }
  client::internal::ShouldRetry(error, true, false);
  client::internal::ShouldRetry(error, false, true);
  Require(client::ErrorReasonName(error.reason()) != nullptr, "every reason has a name");
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  if (input.empty()) return;
  const int status = kStatuses[static_cast<unsigned char>(input[0]) % std::size(kStatuses)];
  const std::string body(input.substr(1));

  const std::string header = body.substr(0, body.find('\n'));
  const std::optional<std::chrono::seconds> retry_after =
      client::internal::ParseRetryAfter(header, std::chrono::system_clock::now());
  Require(!retry_after || retry_after->count() >= 0, "Retry-After is never negative");

  CheckError(client::ErrorFromResponse(status, body, retry_after));
  CheckError(client::ErrorFromResponse(status, body, std::nullopt));
  try {
    const std::string status_json = api::DecodeProtobufObject(body).dump();
    CheckError(client::ErrorFromResponse(status, status_json, std::nullopt));
  } catch (const api::DecodeError&) {
  }
}

}  // namespace berth::fuzz
