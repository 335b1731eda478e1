// The secure port's access control (pkg/server/auth): a request's Authorization header, method and
// decoded path, and the apiserver's answers to the TokenReview and the SubjectAccessReview asked
// about them, read by the delegating authenticator and authorizer behind their caches, as
// berth-scheduler wires them. The input is three lines (the header, the method, the path) and then
// the answer, one JSON document given to both reviews.
//
// Filter::Check runs on a worker thread that nothing above catches for, so it must not throw;
// every rejection it makes is 401, 403 or 500, and a JSON one is the metav1.Status of that code.
// 500 means no decision could be had: an answer that authenticates the token and grants or denies
// with booleans always gets a decision, whatever bytes the path holds. The request is then checked
// again as coming with a verified client certificate named by the header's bytes.

#include <spdlog/spdlog.h>

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "pkg/client/client.h"
#include "pkg/server/auth/delegating.h"
#include "pkg/server/auth/filter.h"
#include "pkg/util/clock.h"
#include "test/fuzz/fuzz.h"
#include "test/testing/unused_client.h"

namespace berth::fuzz {
namespace {

using json = nlohmann::json;

// Answers every review with `answer`, after encoding the review as the HTTP client does.
class ApiServer : public testing::UnusedClient {
 public:
  explicit ApiServer(std::string answer) : answer_(std::move(answer)) {}

  json Post(const std::string& path, const json& body) override {
    body.dump();
    json parsed = json::parse(answer_, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) {
      throw client::ApiError(client::ErrorReason::kUnknown, 201,
                             "cannot decode the JSON response of POST " + path);
    }
    return parsed;
  }

 private:
  std::string answer_;
};

std::string_view NextLine(std::string_view* input) {
  const size_t end = input->find('\n');
  const std::string_view line = input->substr(0, end);
  input->remove_prefix(end == std::string_view::npos ? input->size() : end + 1);
  return line;
}

// Whether the answer authenticates any token and then grants or denies, in the types the reviews'
// schemas give those fields.
bool Decides(const std::string& answer) {
  const json parsed = json::parse(answer, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return false;
  const auto status = parsed.find("status");
  if (status == parsed.end() || !status->is_object()) return false;
  const auto authenticated = status->find("authenticated");
  const auto user = status->find("user");
  if (authenticated == status->end() || *authenticated != true || user == status->end() ||
      !user->is_object()) {
    return false;
  }
  const auto username = user->find("username");
  if (username == user->end() || !username->is_string() || username->empty()) return false;
  for (const char* key : {"allowed", "denied"}) {
    const auto decision = status->find(key);
    if (decision != status->end() && !decision->is_boolean()) return false;
  }
  return true;
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  // The filter logs every failed review; millions of lines would only slow the run.
  [[maybe_unused]] static const bool quiet = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  const std::string authorization(NextLine(&input));
  const std::string method(NextLine(&input));
  const std::string path(NextLine(&input));
  const std::string answer(input);

  static const util::RealClock clock;
  auto api_server = std::make_shared<ApiServer>(answer);
  auto authenticator = std::make_shared<server::auth::CachedTokenAuthenticator>(
      std::make_unique<server::auth::TokenReviewAuthenticator>(api_server),
      server::auth::kDefaultCacheTtl, clock);
  auto authorizer = std::make_shared<server::auth::CachedAuthorizer>(
      std::make_unique<server::auth::SubjectAccessReviewAuthorizer>(api_server),
      server::auth::kDefaultCacheTtl, server::auth::kDefaultCacheTtl, clock);
  const server::auth::Filter filter(
      authenticator, authorizer,
      server::auth::PathMatcher(server::auth::DefaultAlwaysAllowPaths()));

  if (const std::optional<std::string> token = server::auth::BearerToken(authorization)) {
    Require(!token->empty() && token->find(' ') == std::string::npos,
            "a bearer token is one non-empty word");
  }
  // Twice: the second time the caches answer.
  for (int round = 0; round < 2; ++round) {
    const std::optional<server::auth::Rejection> rejection =
        filter.Check(method, path, authorization);
    if (!rejection) continue;
    Require(rejection->status == 401 || rejection->status == 403 || rejection->status == 500,
            "a rejection is 401, 403 or 500", rejection->body);
    Require(
        rejection->status != 500 || !server::auth::BearerToken(authorization) || !Decides(answer),
        "an answer that decides is never a 500", rejection->body);
    if (rejection->content_type == "application/json") {
      const json status = json::parse(rejection->body, nullptr, /*allow_exceptions=*/false);
      Require(status.is_object() && status.value("code", 0) == rejection->status,
              "a JSON rejection is the metav1.Status of its code", rejection->body);
    }
  }

  // The same request from a verified client certificate whose CommonName is the header's bytes:
  // with a name it is a user without any TokenReview, so never 401.
  const server::auth::ClientCertificate certificate{authorization, {method}, "00"};
  const std::optional<server::auth::Rejection> rejection =
      filter.Check(method, path, "", &certificate);
  if (rejection) {
    if (authorization.empty()) {
      Require(rejection->status == 401, "a certificate without a CommonName is no one",
              rejection->body);
    } else {
      Require(rejection->status == 403 || rejection->status == 500,
              "a certificate's user is authorized, not authenticated again", rejection->body);
    }
  }
}

}  // namespace berth::fuzz
