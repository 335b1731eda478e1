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
    : delegate_(std::move(delegate)),
      ttl_(ttl),
      valid_(clock, kCacheCapacity),
      invalid_(clock, kNegativeCacheCapacity) {
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

bool CachedTokenAuthenticator::Lookup(const std::string& key, std::optional<UserInfo>* user) {
  if (auto valid = valid_.Get(key)) {
    *user = std::move(*valid);
    return true;
  }
  if (invalid_.Get(key)) {
    *user = std::nullopt;
    return true;
  }
  return false;
}

std::optional<UserInfo> CachedTokenAuthenticator::AuthenticateToken(const std::string& token) {
  const std::string key = Key(token);
  std::optional<UserInfo> user;
  if (Lookup(key, &user)) return user;
  user = delegate_->AuthenticateToken(token);
  if (user) {
    valid_.Put(key, *user, ttl_);
  } else {
    invalid_.Put(key, true, ttl_);
  }
  return user;
}

bool CachedTokenAuthenticator::AuthenticateCached(const std::string& token,
                                                  std::optional<UserInfo>* user) {
  try {
    return Lookup(Key(token), user);
  } catch (const std::exception&) {
    return false;  // No key: AuthenticateToken will say why.
  }
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
      allowed_(clock, kCacheCapacity),
      denied_(clock, kNegativeCacheCapacity) {}

bool CachedAuthorizer::Lookup(const std::string& key, Decision* decision) {
  if (auto allowed = allowed_.Get(key)) {
    *decision = std::move(*allowed);
    return true;
  }
  if (auto denied = denied_.Get(key)) {
    *decision = std::move(*denied);
    return true;
  }
  return false;
}

Decision CachedAuthorizer::Authorize(const Attributes& attributes) {
  const std::string key = SubjectAccessReviewSpec(attributes).dump();
  Decision decision;
  if (Lookup(key, &decision)) return decision;
  decision = delegate_->Authorize(attributes);
  if (decision.allowed) {
    allowed_.Put(key, decision, allowed_ttl_);
  } else {
    denied_.Put(key, decision, denied_ttl_);
  }
  return decision;
}

bool CachedAuthorizer::AuthorizeCached(const Attributes& attributes, Decision* decision) {
  try {
    return Lookup(SubjectAccessReviewSpec(attributes).dump(), decision);
  } catch (const std::exception&) {
    return false;  // Authorize will say why.
  }
}

std::shared_ptr<Filter> NewDelegatingFilter(const DelegatingOptions& options,
                                            PathMatcher always_allow, const util::Clock& clock) {
  auto authenticator = std::make_shared<CachedTokenAuthenticator>(
      std::make_unique<TokenReviewAuthenticator>(options.token_review_client), options.token_ttl,
      clock);
  auto authorizer = std::make_shared<CachedAuthorizer>(
      std::make_unique<SubjectAccessReviewAuthorizer>(options.subject_access_review_client),
      options.authorized_ttl, options.unauthorized_ttl, clock);
  return std::make_shared<Filter>(std::move(authenticator), std::move(authorizer),
                                  std::move(always_allow));
}

}  // namespace berth::server::auth
