#include "pkg/server/auth/filter.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "pkg/api/utf8.h"
#include "pkg/log/log.h"

namespace berth::server::auth {
namespace {

std::string_view WithoutLeadingSlash(std::string_view path) {
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return path;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// kube-apiserver escapes these in error messages so a crafted path cannot inject markup.
std::string Sanitize(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out += c;
    }
  }
  return out;
}

// Go's %q for the printable names and paths this quotes: control bytes, and bytes that are not
// UTF-8 (a request path may hold any), become \xHH.
std::string Quote(const std::string& text) {
  std::string out = "\"";
  for (size_t pos = 0; pos < text.size();) {
    const auto byte = static_cast<unsigned char>(text[pos]);
    const size_t length = byte < 0x80 ? 1 : api::Utf8SequenceLength(text, pos);
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += text[pos];
    } else if (length == 0 || byte < 0x20 || byte == 0x7f) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out.append(text, pos, length);
    }
    pos += std::max<size_t>(length, 1);
  }
  return out + "\"";
}

// A metav1.Status as kube-apiserver writes it for a failed request.
Rejection StatusRejection(int code, const std::string& reason, const std::string& message,
                          bool with_details) {
  nlohmann::json status = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", code}};
  if (with_details) status["details"] = nlohmann::json::object();
  // The verb is the client's bytes; like Go's encoding/json, bytes that are not UTF-8 become
  // U+FFFD rather than fail the answer.
  return {code, "application/json",
          status.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

Rejection Unauthorized() { return StatusRejection(401, "Unauthorized", "Unauthorized", false); }

}  // namespace

std::optional<UserInfo> CertificateUser(const ClientCertificate& certificate) {
  if (certificate.common_name.empty()) return std::nullopt;
  UserInfo user;
  user.name = certificate.common_name;
  user.groups = certificate.organizations;
  // kube-apiserver adds it to every authenticated user; a TokenReview's answer already has it.
  if (std::find(user.groups.begin(), user.groups.end(), "system:authenticated") ==
      user.groups.end()) {
    user.groups.emplace_back("system:authenticated");
  }
  user.extra["authentication.kubernetes.io/credential-id"] = {"X509SHA256=" + certificate.sha256};
  return user;
}

std::vector<std::string> DefaultAlwaysAllowPaths() { return {"/healthz", "/readyz", "/livez"}; }

PathMatcher::PathMatcher(const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) {
    std::string_view p = WithoutLeadingSlash(pattern);
    if (p.empty()) {
      exact_.emplace_back();
      continue;
    }
    if (p.substr(0, p.size() - 1).find('*') != std::string_view::npos) {
      throw std::invalid_argument("only a trailing * is allowed, got \"" + pattern + "\"");
    }
    if (p.back() == '*') {
      prefixes_.emplace_back(p.substr(0, p.size() - 1));
    } else {
      exact_.emplace_back(p);
    }
  }
}

bool PathMatcher::Matches(std::string_view path) const {
  path = WithoutLeadingSlash(path);
  for (const std::string& exact : exact_) {
    if (path == exact) return true;
  }
  for (const std::string& prefix : prefixes_) {
    if (path.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

std::optional<std::string> BearerToken(std::string_view authorization) {
  // Trimmed, then "<scheme> <token>[ <ignored>]", as kube-apiserver reads it.
  const auto first = authorization.find_first_not_of(" \t");
  if (first == std::string_view::npos) return std::nullopt;
  authorization = authorization.substr(first);
  authorization = authorization.substr(0, authorization.find_last_not_of(" \t") + 1);
  const auto space = authorization.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  if (Lower(std::string(authorization.substr(0, space))) != "bearer") return std::nullopt;
  std::string_view token = authorization.substr(space + 1);
  token = token.substr(0, token.find(' '));
  if (token.empty()) return std::nullopt;
  return std::string(token);
}

Filter::Filter(std::shared_ptr<TokenAuthenticator> authenticator,
               std::shared_ptr<Authorizer> authorizer, PathMatcher always_allow)
    : authenticator_(std::move(authenticator)),
      authorizer_(std::move(authorizer)),
      always_allow_(std::move(always_allow)) {}

std::optional<Rejection> Filter::Check(const std::string& method, const std::string& path,
                                       const std::string& authorization,
                                       const ClientCertificate* certificate) const {
  if (AlwaysAllowed(path)) return std::nullopt;
  return Review(method, path, authorization, certificate);
}

std::optional<Rejection> Filter::Review(const std::string& method, const std::string& path,
                                        const std::string& authorization,
                                        const ClientCertificate* certificate) const {
  bool decided = false;
  return Decide(method, path, authorization, certificate, false, &decided);
}

Filter::Verdict Filter::ReviewCached(const std::string& method, const std::string& path,
                                     const std::string& authorization,
                                     const ClientCertificate* certificate) const {
  Verdict verdict;
  verdict.rejection = Decide(method, path, authorization, certificate, true, &verdict.decided);
  return verdict;
}

std::optional<Rejection> Filter::Decide(const std::string& method, const std::string& path,
                                        const std::string& authorization,
                                        const ClientCertificate* certificate, bool cached_only,
                                        bool* decided) const {
  *decided = false;
  // kube-apiserver's order: the certificate first; the token only when it names no one.
  std::optional<UserInfo> user;
  if (certificate) user = CertificateUser(*certificate);
  if (!user) {
    const std::optional<std::string> token = BearerToken(authorization);
    if (!token) {
      *decided = true;
      return Unauthorized();
    }
    if (cached_only) {
      if (!authenticator_->AuthenticateCached(*token, &user)) return std::nullopt;
    } else {
      try {
        user = authenticator_->AuthenticateToken(*token);
      } catch (const std::exception& e) {
        log::Warn("token review failed; answering 401", {{"path", path}, {"error", e.what()}});
        *decided = true;
        return Unauthorized();
      }
    }
    if (!user) {
      log::Verbose(4, "invalid bearer token", {{"path", path}});
      *decided = true;
      return Unauthorized();
    }
  }

  Attributes attributes{*user, Lower(method), path};
  Decision decision;
  if (cached_only) {
    if (!authorizer_->AuthorizeCached(attributes, &decision)) return std::nullopt;
  } else {
    try {
      decision = authorizer_->Authorize(attributes);
    } catch (const std::exception& e) {
      log::Warn("subject access review failed; answering 500",
                {{"path", path}, {"user", user->name}, {"error", e.what()}});
      *decided = true;
      return Rejection{500, "text/plain; charset=utf-8",
                       Sanitize("Internal Server Error: \"" + path + "\": " + e.what()) + "\n"};
    }
  }
  *decided = true;
  if (decision.allowed) return std::nullopt;
  log::Verbose(4, "forbidden", {{"path", path}, {"user", user->name}, {"verb", attributes.verb}});
  std::string message = "forbidden: " + Sanitize("User " + Quote(user->name) + " cannot " +
                                                 attributes.verb + " path " + Quote(path));
  if (!decision.reason.empty()) message += ": " + decision.reason;
  return StatusRejection(403, "Forbidden", message, true);
}

}  // namespace berth::server::auth
