#include "pkg/server/auth/delegating.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

#include "pkg/api/utf8.h"

namespace berth::server::auth {
namespace {

using json = nlohmann::json;

constexpr char kTokenReviews[] = "/apis/authentication.k8s.io/v1/tokenreviews";
constexpr char kSubjectAccessReviews[] = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

std::vector<std::string> Strings(const json& value) {
  std::vector<std::string> out;
  if (!value.is_array()) return out;
  for (const auto& item : value) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

std::string String(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

nlohmann::json SubjectAccessReviewSpec(const Attributes& attributes) {
  // The path and the verb are the client's bytes, any of them; the user comes from a TokenReview.
  json spec = {
      {"user", attributes.user.name},
      {"nonResourceAttributes",
       {{"path", api::ValidUtf8(attributes.path)}, {"verb", api::ValidUtf8(attributes.verb)}}}};
  if (!attributes.user.uid.empty()) spec["uid"] = attributes.user.uid;
  if (!attributes.user.groups.empty()) spec["groups"] = attributes.user.groups;
  if (!attributes.user.extra.empty()) spec["extra"] = attributes.user.extra;
  return spec;
}

std::optional<UserInfo> TokenReviewAuthenticator::AuthenticateToken(const std::string& token) {
  const json review = {{"apiVersion", "authentication.k8s.io/v1"},
                       {"kind", "TokenReview"},
                       {"spec", {{"token", api::ValidUtf8(token)}}}};
  const json answer = client_->Post(kTokenReviews, review);
  const json& status = answer.contains("status") ? answer["status"] : json::object();
  if (!status.is_object() || !status.value("authenticated", false)) return std::nullopt;
  const json& user = status.contains("user") ? status["user"] : json::object();
  UserInfo info;
  info.name = String(user, "username");
  if (info.name.empty()) return std::nullopt;
  info.uid = String(user, "uid");
  info.groups = Strings(user.value("groups", json::array()));
  if (auto extra = user.find("extra"); extra != user.end() && extra->is_object()) {
    for (const auto& [key, values] : extra->items()) info.extra[key] = Strings(values);
  }
  return info;
}

CachedTokenAuthenticator::CachedTokenAuthenticator(std::unique_ptr<TokenAuthenticator> delegate,
                                                   std::chrono::nanoseconds ttl,
                                                   const util::Clock& clock)
    : delegate_(std::move(delegate)), ttl_(ttl), cache_(clock, kCacheCapacity) {
  std::array<unsigned char, 32> key{};
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
    throw std::runtime_error("token cache: no random bytes for its key");
  }
  hmac_key_.assign(key.begin(), key.end());
}

std::string CachedTokenAuthenticator::Key(const std::string& token) const {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), hmac_key_.data(), static_cast<int>(hmac_key_.size()),
           reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data(),
           &length) == nullptr) {
    throw std::runtime_error("token cache: HMAC failed");
  }
  return std::string(reinterpret_cast<const char*>(digest.data()), length);
}

std::optional<UserInfo> CachedTokenAuthenticator::AuthenticateToken(const std::string& token) {
  const std::string key = Key(token);
  if (auto cached = cache_.Get(key)) return *cached;
  std::optional<UserInfo> user = delegate_->AuthenticateToken(token);
  cache_.Put(key, user, ttl_);
  return user;
}

Decision SubjectAccessReviewAuthorizer::Authorize(const Attributes& attributes) {
  const json review = {{"apiVersion", "authorization.k8s.io/v1"},
                       {"kind", "SubjectAccessReview"},
                       {"spec", SubjectAccessReviewSpec(attributes)}};
  const json answer = client_->Post(kSubjectAccessReviews, review);
  const json& status = answer.contains("status") ? answer["status"] : json::object();
  Decision decision;
  if (!status.is_object()) return decision;
  // An explicit denial wins over an allowance, as in kube-apiserver's webhook authorizer.
  decision.allowed = status.value("allowed", false) && !status.value("denied", false);
  decision.reason = String(status, "reason");
  return decision;
}

CachedAuthorizer::CachedAuthorizer(std::unique_ptr<Authorizer> delegate,
                                   std::chrono::nanoseconds allowed_ttl,
                                   std::chrono::nanoseconds denied_ttl, const util::Clock& clock)
    : delegate_(std::move(delegate)),
      allowed_ttl_(allowed_ttl),
      denied_ttl_(denied_ttl),
      cache_(clock, kCacheCapacity) {}

Decision CachedAuthorizer::Authorize(const Attributes& attributes) {
  const std::string key = SubjectAccessReviewSpec(attributes).dump();
  if (auto cached = cache_.Get(key)) return *cached;
  Decision decision = delegate_->Authorize(attributes);
  cache_.Put(key, decision, decision.allowed ? allowed_ttl_ : denied_ttl_);
  return decision;
}

}  // namespace berth::server::auth
