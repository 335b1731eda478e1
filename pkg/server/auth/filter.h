#ifndef BERTH_PKG_SERVER_AUTH_FILTER_H_
#define BERTH_PKG_SERVER_AUTH_FILTER_H_

// What the secure port decides before it serves a request, kube-apiserver's filter chain in
// miniature:
//   1. A path on the always-allow list is served to anyone: no token is read, nothing is asked of
//      the apiserver (kubelet probes carry no credentials, and must not depend on the apiserver).
//   2. Any other path needs a user: the client certificate the connection presented, when the TLS
//      layer verified it against the client CA (no review is asked), else "Authorization: Bearer
//      <token>" that the authenticator accepts; without either the answer is 401. Anonymous
//      requests are not authorized.
//   3. The authenticated user must be allowed the verb (the lower-case HTTP method) on the path;
//      otherwise 403, with kube-apiserver's message. When no decision can be had: 500.
// Every path goes through 2 and 3, those that exist and those that do not, so a new endpoint
// (/debug/... included) is protected without being listed anywhere.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/server/auth/interface.h"

namespace berth::server::auth {

// kube-apiserver's --authorization-always-allow-paths defaults, which kube-scheduler keeps.
std::vector<std::string> DefaultAlwaysAllowPaths();

// Paths matched exactly, or by prefix when they end in "*" ("/debug/*"); a leading "/" is
// optional in both the pattern and the path, as upstream has it.
class PathMatcher {
 public:
  // Throws std::invalid_argument for a "*" anywhere but at the end.
  explicit PathMatcher(const std::vector<std::string>& patterns);
  bool Matches(std::string_view path) const;

 private:
  std::vector<std::string> exact_;
  std::vector<std::string> prefixes_;
};

// The token of an "Authorization: Bearer <token>" header value (scheme case-insensitive), or
// nullopt for any other or empty value.
std::optional<std::string> BearerToken(std::string_view authorization);

// What to answer instead of serving.
struct Rejection {
  int status = 0;  // 401, 403 or 500.
  std::string content_type;
  std::string body;
};

// Steps 1-3 above. Thread-safe if its authenticator and authorizer are.
class Filter {
 public:
  Filter(std::shared_ptr<TokenAuthenticator> authenticator, std::shared_ptr<Authorizer> authorizer,
         PathMatcher always_allow);

  bool AlwaysAllowed(std::string_view path) const { return always_allow_.Matches(path); }

  // nullopt: serve the request. `method` is the HTTP method as sent ("GET"); `authorization`
  // the Authorization header's value, empty when there is none; `certificate` the connection's
  // verified client certificate, null when there is none. Blocks while the apiserver is asked:
  // call it off any thread that must stay responsive.
  std::optional<Rejection> Check(const std::string& method, const std::string& path,
                                 const std::string& authorization,
                                 const ClientCertificate* certificate = nullptr) const;

  // Steps 2 and 3 alone, for any path, the always-allowed ones too: the secure port asks whether
  // a caller may read the reasons behind a failed health check. Blocks like Check.
  std::optional<Rejection> Review(const std::string& method, const std::string& path,
                                  const std::string& authorization,
                                  const ClientCertificate* certificate = nullptr) const;

  struct Verdict {
    bool decided = false;                // False: only Review can tell, and nothing was asked.
    std::optional<Rejection> rejection;  // When decided, Review's answer.
  };
  // Review's answer when it needs nobody asked: no credential, or the token's user and the
  // decision are remembered by the authenticator and authorizer. Never blocks, so the secure port
  // answers these at once, never queued behind reviews in flight.
  Verdict ReviewCached(const std::string& method, const std::string& path,
                       const std::string& authorization,
                       const ClientCertificate* certificate = nullptr) const;

 private:
  // Review, or with `cached_only` ReviewCached (*decided false when it cannot tell).
  std::optional<Rejection> Decide(const std::string& method, const std::string& path,
                                  const std::string& authorization,
                                  const ClientCertificate* certificate, bool cached_only,
                                  bool* decided) const;

  std::shared_ptr<TokenAuthenticator> authenticator_;
  std::shared_ptr<Authorizer> authorizer_;
  PathMatcher always_allow_;
};

}  // namespace berth::server::auth

#endif  // BERTH_PKG_SERVER_AUTH_FILTER_H_
