#ifndef BERTH_PKG_SERVER_CERTIFICATE_H_
#define BERTH_PKG_SERVER_CERTIFICATE_H_

// The certificate the secure port presents when the operator gave none: generated at start and
// held in memory only, as kube-scheduler does without --tls-cert-file (it writes its pair to
// --cert-dir; Berth runs on a read-only filesystem and writes nothing). Clients cannot verify it
// against any CA; it encrypts the traffic, and bearer tokens authenticate the clients.

#include <chrono>
#include <string>
#include <vector>

namespace berth::server {

struct CertificateKeyPair {
  std::string cert_pem;
  std::string key_pem;  // A secret: never logged, never written to disk.
};

// An ECDSA P-256 key and a self-signed serving certificate for it: subject CN "<host>@<unix
// time>", subjectAltName DNS:<host> plus `dns_names` and IP:`ips` (dotted IPv4 or IPv6 text),
// extendedKeyUsage serverAuth, valid from an hour ago (clock skew) for `validity`. Throws
// std::runtime_error when OpenSSL fails or an IP does not parse.
CertificateKeyPair GenerateSelfSigned(const std::string& host,
                                      const std::vector<std::string>& dns_names,
                                      const std::vector<std::string>& ips,
                                      std::chrono::hours validity = std::chrono::hours(24 * 365));

// "AB:CD:..." SHA-256 fingerprint of a PEM certificate, what an operator pins or compares with
// `openssl x509 -fingerprint -sha256`.
std::string Sha256Fingerprint(const std::string& cert_pem);

}  // namespace berth::server

#endif  // BERTH_PKG_SERVER_CERTIFICATE_H_
