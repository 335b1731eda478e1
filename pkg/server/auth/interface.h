#ifndef BERTH_PKG_SERVER_AUTH_INTERFACE_H_
#define BERTH_PKG_SERVER_AUTH_INTERFACE_H_

// The contract of the secure port's access control, as kube-apiserver delegates it to add-on
// servers: a bearer token names a user (authentication), and the user is allowed or denied a verb
// on a non-resource path (authorization). Implementations ask the apiserver (delegating.h) and
// cache its answers.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace berth::server::auth {

// Who sent a request, as the apiserver's TokenReview or a verified client certificate described
// them.
struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;

  bool operator==(const UserInfo&) const = default;
};

// The client certificate a connection presented, verified against the secure port's client CA by
// the TLS layer: its subject's CommonName and Organization values, and the SHA-256 of its DER.
struct ClientCertificate {
  std::string common_name;
  std::vector<std::string> organizations;
  std::string sha256;  // Lower-case hex.
};

// kube-apiserver's user for a verified client certificate: the CommonName, the Organizations as
// groups plus system:authenticated, and the certificate's fingerprint as the credential id.
// nullopt when the CommonName is empty: such a certificate authenticates no one.
std::optional<UserInfo> CertificateUser(const ClientCertificate& certificate);

// Maps a bearer token to its user. Thread-safe.
class TokenAuthenticator {
 public:
  virtual ~TokenAuthenticator() = default;
  // nullopt: the token is not valid. Throws when no answer could be had (the apiserver is
  // unreachable or refused the review); the caller then treats the request as unauthenticated.
  virtual std::optional<UserInfo> AuthenticateToken(const std::string& token) = 0;
  // The answer AuthenticateToken would give, when it can be had at once from what is remembered
  // (true, and *user set); false when only a review can tell. Never blocks, never throws. The
  // secure port answers such requests without queueing them behind reviews in flight.
  virtual bool AuthenticateCached(const std::string& /*token*/, std::optional<UserInfo>* /*user*/) {
    return false;
  }
};

// A request on a non-resource path: kube-apiserver's verb is the lower-case HTTP method ("get",
// "post", "put", "head"), not the resource verbs ("create", "update") RBAC uses for objects.
struct Attributes {
  UserInfo user;
  std::string verb;
  std::string path;
};

struct Decision {
  bool allowed = false;
  // Why, when the authorizer said; appended to the 403 message as kube-apiserver does.
  std::string reason;
};

// Decides whether a user may do a verb on a path. Thread-safe.
class Authorizer {
 public:
  virtual ~Authorizer() = default;
  // Throws when no decision could be had; the caller answers 500 rather than guessing.
  virtual Decision Authorize(const Attributes& attributes) = 0;
  // The decision Authorize would return, when remembered (true, and *decision set); false when
  // only a review can tell. Never blocks, never throws.
  virtual bool AuthorizeCached(const Attributes& /*attributes*/, Decision* /*decision*/) {
    return false;
  }
};

}  // namespace berth::server::auth

#endif  // BERTH_PKG_SERVER_AUTH_INTERFACE_H_
