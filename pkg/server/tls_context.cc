#include "pkg/server/tls_context.h"

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <array>
#include <fstream>
#include <stdexcept>

#include "pkg/log/log.h"

namespace berth::server {
namespace {

namespace net = boost::asio;

// TLS 1.2's suites: ECDHE for forward secrecy, AEAD only (no CBC, whose padding oracles keep
// coming back), as Go's crypto/tls defaults and the Mozilla "intermediate" profile have it.
constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

void RequireReadable(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ServerError(flag + ": cannot read \"" + path + "\"");
}

std::string Utf8(const ASN1_STRING* value) {
  unsigned char* utf8 = nullptr;
  const int length = ASN1_STRING_to_UTF8(&utf8, value);
  if (length < 0) return "";
  std::string out(reinterpret_cast<const char*>(utf8), static_cast<size_t>(length));
  OPENSSL_free(utf8);
  return out;
}

// The handshake asks for a certificate and never fails over it (Go's RequestClientCert); the
// verdict is read afterwards from SSL_get_verify_result.
int AcceptAnyCertificate(int /*preverify_ok*/, X509_STORE_CTX* /*ctx*/) { return 1; }

// The identity of the files a TLS context was built from: device, inode, size, modification and
// change times of each, as stat() reports them ("-" for a file that cannot be read).
std::string FilesStamp(const std::vector<std::string>& files) {
  std::string stamp;
  for (const std::string& file : files) {
    struct stat st {};
    if (stat(file.c_str(), &st) != 0) {
      stamp += "-;";
      continue;
    }
    stamp += std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
             std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
             std::to_string(st.st_ctim.tv_nsec) + ";";
  }
  return stamp;
}

}  // namespace

std::optional<auth::ClientCertificate> VerifiedClientCertificate(SSL* ssl) {
  // Without a client CA nothing was verified, and SSL_get_verify_result reports X509_V_OK for
  // a chain it never checked.
  if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) == 0) return std::nullopt;
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) return std::nullopt;
  const long result = SSL_get_verify_result(ssl);
  if (result != X509_V_OK) {
    log::Verbose(4, "client certificate not verified; it authenticates no one",
                 {{"error", X509_verify_cert_error_string(result)}});
    return std::nullopt;
  }
  auth::ClientCertificate out;
  const X509_NAME* subject = X509_get_subject_name(cert);
  for (int i = 0; i < X509_NAME_entry_count(subject); i++) {
    const X509_NAME_ENTRY* entry = X509_NAME_get_entry(subject, i);
    const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
    // Several CNs: the last wins, as Go's pkix.Name keeps it.
    if (nid == NID_commonName) out.common_name = Utf8(X509_NAME_ENTRY_get_data(entry));
    if (nid == NID_organizationName) {
      out.organizations.push_back(Utf8(X509_NAME_ENTRY_get_data(entry)));
    }
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (X509_digest(cert, EVP_sha256(), digest.data(), &length) == 1) {
    constexpr char kHex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < length; i++) {
      out.sha256 += kHex[digest[i] >> 4];
      out.sha256 += kHex[digest[i] & 0xf];
    }
  }
  return out;
}

void CheckClientCaFile(const std::string& path) {
  RequireReadable("--client-ca-file", path);
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(path.c_str());
  const int count = names == nullptr ? 0 : sk_X509_NAME_num(names);
  sk_X509_NAME_pop_free(names, X509_NAME_free);
  if (count == 0) {
    throw ServerError("--client-ca-file: \"" + path + "\" holds no PEM certificate");
  }
}

TlsContextCache::TlsContextCache(Certificate certificate, std::string client_ca, std::string flag,
                                 std::string url)
    : certificate_(std::move(certificate)),
      client_ca_(std::move(client_ca)),
      flag_(std::move(flag)),
      url_(std::move(url)) {}

void TlsContextCache::Load() {
  const Certificate& c = certificate_;
  const bool files = !c.cert_file.empty();
  if (files) {
    RequireReadable("--tls-cert-file", c.cert_file);
    RequireReadable("--tls-private-key-file", c.key_file);
  }
  if (!client_ca_.empty()) CheckClientCaFile(client_ca_);
  try {
    std::lock_guard lock(mu_);
    stamp_ = FilesStamp(Files());
    context_ = Build();
  } catch (const std::exception& e) {
    if (files) {
      throw ServerError("--tls-cert-file/--tls-private-key-file: cannot load \"" + c.cert_file +
                        "\" / \"" + c.key_file + "\": " + e.what());
    }
    throw ServerError(flag_ + ": cannot load the certificate: " + e.what());
  }
}

std::shared_ptr<net::ssl::context> TlsContextCache::Current() {
  const std::string stamp = FilesStamp(Files());
  std::lock_guard lock(mu_);
  if (stamp != stamp_) {
    stamp_ = stamp;
    try {
      context_ = Build();
      log::Info("serving certificate files changed; reloaded", {{"address", url_}});
    } catch (const std::exception& e) {
      log::Warn("serving certificate files changed but do not load; serving the previous ones",
                {{"address", url_}, {"error", e.what()}});
    }
  }
  if (!context_) throw ServerError(flag_ + ": no certificate loaded");
  return context_;
}

std::vector<std::string> TlsContextCache::Files() const {
  std::vector<std::string> files;
  if (!certificate_.cert_file.empty()) files = {certificate_.cert_file, certificate_.key_file};
  if (!client_ca_.empty()) files.push_back(client_ca_);
  return files;
}

std::shared_ptr<net::ssl::context> TlsContextCache::Build() const {
  auto ctx = std::make_shared<net::ssl::context>(net::ssl::context::tls_server);
  ctx->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                   net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                   net::ssl::context::no_tlsv1_1 | net::ssl::context::no_compression);
  SSL_CTX* native = ctx->native_handle();
  // Renegotiation lets a client make the server redo the expensive half of a handshake at
  // will, on a connection already admitted.
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // No session resumption: every connection makes a full handshake, as when each connection had
  // a context of its own. A shared context would otherwise offer resumption, which OpenSSL
  // refuses outright on a context that asks for client certificates without a session id
  // context, and which would let a client certificate that has expired since the first handshake
  // still name its user on a resumed one.
  SSL_CTX_set_options(native, SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(native, 0);
  if (SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1) {
    throw std::runtime_error("OpenSSL knows none of the TLS 1.2 cipher suites");
  }
  const Certificate& c = certificate_;
  if (!c.cert_file.empty()) {
    ctx->use_certificate_chain_file(c.cert_file);
    ctx->use_private_key_file(c.key_file, net::ssl::context::pem);
  } else {
    ctx->use_certificate_chain(net::buffer(c.cert_pem));
    ctx->use_private_key(net::buffer(c.key_pem), net::ssl::context::pem);
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    throw std::runtime_error("the key does not match the certificate");
  }
  if (!client_ca_.empty()) {
    ctx->load_verify_file(client_ca_);
    // Names the acceptable issuers in the CertificateRequest, as Go does with ClientCAs, so a
    // client holding several certificates picks the right one.
    SSL_CTX_set_client_CA_list(native, SSL_load_client_CA_file(client_ca_.c_str()));
    SSL_CTX_set_purpose(native, X509_PURPOSE_SSL_CLIENT);
    SSL_CTX_set_verify(native, SSL_VERIFY_PEER, AcceptAnyCertificate);
  }
  return ctx;
}

}  // namespace berth::server
