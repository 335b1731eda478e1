#ifndef BERTH_PKG_SERVER_TLS_CONTEXT_H_
#define BERTH_PKG_SERVER_TLS_CONTEXT_H_

// Internal to the secure port: the TLS context an HTTPS listener's connections handshake with,
// and what a finished handshake proves about the client.

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pkg/server/auth/filter.h"
#include "pkg/server/server.h"

namespace berth::server {

// The context of one HTTPS listener, built from its Certificate (files or PEM text) and client
// CA bundle: TLS 1.2 or later, for 1.2 only ECDHE with AES-GCM or ChaCha20-Poly1305, no
// renegotiation, a client certificate asked for but never required.
//
// Invariants: after Load() succeeds there is always a context to serve, and it was built from
// files whose stamp (stat() of each) is the last one seen; files that changed but do not load
// leave the last good context in use until they change again.
//
// Thread-safe: Load and Current may be called from any thread; a context Current returned stays
// valid for as long as its holder keeps it, whatever reloads follow.
class TlsContextCache {
 public:
  // `flag` names the listener in errors, `url` in the reload log lines.
  TlsContextCache(Certificate certificate, std::string client_ca, std::string flag,
                  std::string url);
  TlsContextCache(const TlsContextCache&) = delete;
  TlsContextCache& operator=(const TlsContextCache&) = delete;

  // Loads everything once now, so a bad file or PEM fails start-up rather than the first scrape.
  // Throws ServerError naming the flag and the files.
  void Load();

  // The context new connections handshake with. Built at Load, and again when a file it was
  // built from changes: each call compares the files' stamp, a stat() per file, which costs little
  // next to a handshake, so a rotated pair or CA bundle reaches the very next connection. Throws
  // ServerError when no context was ever loaded.
  std::shared_ptr<boost::asio::ssl::context> Current();

 private:
  std::vector<std::string> Files() const;
  // A new context from the files (or PEM text). Throws what boost::asio::ssl throws, or
  // std::runtime_error.
  std::shared_ptr<boost::asio::ssl::context> Build() const;

  const Certificate certificate_;
  const std::string client_ca_;
  const std::string flag_;
  const std::string url_;
  std::mutex mu_;  // Guards stamp_ and context_.
  std::string stamp_;
  std::shared_ptr<boost::asio::ssl::context> context_;
};

// The subject of the certificate the client presented, when the handshake verified it against the
// client CA; nullopt when none was presented or it did not verify. As upstream's x509
// authenticator, a certificate that fails is no identity, not a refused connection: the request
// may still carry a token.
std::optional<auth::ClientCertificate> VerifiedClientCertificate(SSL* ssl);

}  // namespace berth::server

#endif  // BERTH_PKG_SERVER_TLS_CONTEXT_H_
