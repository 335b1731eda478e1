#include "pkg/client/transport.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>

namespace berth::client::internal {
namespace {

constexpr size_t kReadChunk = size_t{16} * 1024;
// A status line or header longer than this is not an apiserver talking.
constexpr size_t kMaxHeaderBytes = 1 << 20;

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

bool ContainsTokenNoCase(std::string_view value, std::string_view token) {
  for (size_t i = 0; i + token.size() <= value.size(); ++i) {
    if (StartsWithNoCase(value.substr(i), token)) return true;
  }
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsIpLiteral(const std::string& host) {
  in6_addr v6{};
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

// The OpenSSL error queue of this thread as text, emptied.
std::string DrainOpensslErrors() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    if (!text.empty()) text += "; ";
    const char* reason = ERR_reason_error_string(code);
    text += reason != nullptr ? reason : buf;
  }
  return text;
}

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Every certificate of a PEM bundle; throws ConfigError naming `what` when one is malformed or
// there is none.
std::vector<X509Ptr> ReadCertificates(const std::string& pem, const char* what) {
  BioPtr bio = MemoryBio(pem);
  std::vector<X509Ptr> certs;
  ERR_clear_error();
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  // Running out of input ends the loop with "no start line"; anything else is a bad block.
  const unsigned long last = ERR_peek_last_error();
  const bool clean_end = last == 0 || (ERR_GET_LIB(last) == ERR_LIB_PEM &&
                                       ERR_GET_REASON(last) == PEM_R_NO_START_LINE);
  const std::string detail = DrainOpensslErrors();
  if (!clean_end || certs.empty()) {
    throw ConfigError(std::string("client: unusable ") + what + ": " +
                      (certs.empty() && clean_end ? "no PEM certificate in it" : detail));
  }
  return certs;
}

}  // namespace

Endpoint ParseEndpoint(const Config& config) {
  const std::string& url = config.server;
  Endpoint endpoint;
  std::string_view rest;
  if (url.rfind("https://", 0) == 0) {
    endpoint.tls = true;
    rest = std::string_view(url).substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    endpoint.tls = false;
    rest = std::string_view(url).substr(7);
  } else {
    throw ConfigError("client: server \"" + url + "\" is not an https:// URL");
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty() || rest.find_first_of("/?#@ ") != std::string_view::npos) {
    throw ConfigError("client: server \"" + url +
                      "\" must be scheme://host[:port] without a path, query or user info");
  }
  endpoint.host_header = std::string(rest);
  std::string_view port;
  if (rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      throw ConfigError("client: server \"" + url + "\" has an unterminated IPv6 address");
    }
    endpoint.host = std::string(rest.substr(1, close - 1));
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') {
        throw ConfigError("client: server \"" + url + "\" has junk after the IPv6 address");
      }
      port = rest.substr(close + 2);
    }
  } else {
    const size_t colon = rest.rfind(':');
    endpoint.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (port.empty()) port = endpoint.tls ? "443" : "80";
  int port_number = 0;
  const auto parsed = std::from_chars(port.data(), port.data() + port.size(), port_number);
  if (parsed.ec != std::errc() || parsed.ptr != port.data() + port.size() || port_number <= 0 ||
      port_number > 65535 || endpoint.host.empty()) {
    throw ConfigError("client: server \"" + url + "\" needs a host and a port in 1-65535");
  }
  endpoint.port = std::string(port);
  endpoint.verify_name = config.tls_server_name.empty() ? endpoint.host : config.tls_server_name;
  endpoint.url = url;
  return endpoint;
}

TlsContext::TlsContext(const Config& config) : verify_(!config.insecure_skip_tls_verify) {
  ctx_.reset(SSL_CTX_new(TLS_client_method()));
  if (ctx_ == nullptr) throw ConfigError("client: cannot create a TLS context");
  SSL_CTX* ctx = ctx_.get();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Bodies are delimited by HTTP framing, so a peer closing without close_notify is an ordinary
  // end of connection, and a truncated body is caught by that framing.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_verify(ctx, verify_ ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  if (!config.ca_pem.empty()) {
    // Like client-go, a configured CA replaces the system roots: the apiserver must chain to it.
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    for (const X509Ptr& cert : ReadCertificates(config.ca_pem, "CA bundle")) {
      X509_STORE_add_cert(store, cert.get());
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    DrainOpensslErrors();
  }
  if (!config.client_cert_pem.empty()) {
    std::vector<X509Ptr> chain = ReadCertificates(config.client_cert_pem, "client certificate");
    ERR_clear_error();
    if (SSL_CTX_use_certificate(ctx, chain.front().get()) != 1) {
      throw ConfigError("client: unusable client certificate: " + DrainOpensslErrors());
    }
    for (size_t i = 1; i < chain.size(); ++i) SSL_CTX_add1_chain_cert(ctx, chain[i].get());
    BioPtr bio = MemoryBio(config.client_key_pem);
    std::unique_ptr<EVP_PKEY, PkeyFree> key(
        PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    if (key == nullptr || SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      throw ConfigError("client: unusable client key, or it does not match the certificate: " +
                        DrainOpensslErrors());
    }
  }
}

Connection::Connection(Key, int fd) : fd_(fd) {}

Connection::~Connection() {
  if (ssl_ != nullptr) {
    // A best-effort close_notify; the socket is non-blocking so this never waits.
    if (!broken_ && !shut_down_.load()) SSL_shutdown(ssl_);
    SSL_free(ssl_);
  }
  close(fd_);
}

std::unique_ptr<Connection> Connection::Open(const Endpoint& endpoint, const TlsContext* tls,
                                             Deadline deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(endpoint.host.c_str(), endpoint.port.c_str(), &hints, &found);
      rc != 0) {
    throw TransportError(ErrorReason::kTransport,
                         "cannot connect to " + endpoint.url + ": cannot resolve \"" +
                             endpoint.host + "\": " + gai_strerror(rc),
                         true);
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, &freeaddrinfo);
  std::string last_error = "no address";
  bool timed_out = false;
  for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    // Owns fd until the Connection does.
    auto connection = std::make_unique<Connection>(Key(), fd);
    connection->peer_ = endpoint.url;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = std::strerror(errno);
        continue;
      }
      try {
        connection->Wait(/*for_write=*/true, deadline, "connecting");
      } catch (const TransportError& e) {
        last_error = e.what();
        timed_out = e.reason() == ErrorReason::kTimeout;
        if (timed_out) break;
        continue;
      }
      int error = 0;
      socklen_t length = sizeof(error);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) {
        last_error = std::strerror(error);
        continue;
      }
    }
    if (tls == nullptr) return connection;
    connection->broken_ = true;  // Until the handshake completes: no close_notify.
    connection->ssl_ = SSL_new(tls->get());
    if (connection->ssl_ == nullptr) {
      throw TransportError(ErrorReason::kTLS,
                           "cannot create a TLS session: " + DrainOpensslErrors(), true);
    }
    SSL* ssl = connection->ssl_;
    SSL_set_fd(ssl, fd);
    const bool ip = IsIpLiteral(endpoint.verify_name);
    if (!ip) SSL_set_tlsext_host_name(ssl, endpoint.verify_name.c_str());
    if (tls->verify()) {
      if (ip) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), endpoint.verify_name.c_str());
      } else {
        SSL_set1_host(ssl, endpoint.verify_name.c_str());
      }
    }
    for (;;) {
      ERR_clear_error();
      const int rc = SSL_connect(ssl);
      if (rc == 1) break;
      const int error = SSL_get_error(ssl, rc);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        try {
          connection->Wait(error == SSL_ERROR_WANT_WRITE, deadline, "the TLS handshake");
        } catch (const TransportError& e) {
          throw TransportError(e.reason(), e.what(), true);
        }
        continue;
      }
      if (const long verify = SSL_get_verify_result(ssl); verify != X509_V_OK) {
        DrainOpensslErrors();
        throw TransportError(ErrorReason::kTLS,
                             "TLS certificate verification failed for " + endpoint.url + " (" +
                                 X509_verify_cert_error_string(verify) +
                                 "): the server certificate is not signed by the configured "
                                 "certificate authority or does not name " +
                                 endpoint.verify_name,
                             true);
      }
      const int saved_errno = errno;
      // Closed or reset without a TLS alert: the connection failed, TLS did not. A load balancer
      // in front of apiservers that are all down (or restarting) accepts the connection and then
      // closes it just like this; the next attempt may well succeed.
      const unsigned long first = ERR_peek_error();
      if (error == SSL_ERROR_SYSCALL || error == SSL_ERROR_ZERO_RETURN ||
          (error == SSL_ERROR_SSL && ERR_GET_LIB(first) == ERR_LIB_SSL &&
           ERR_GET_REASON(first) == SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
        DrainOpensslErrors();
        throw TransportError(ErrorReason::kTransport,
                             "cannot connect to " + endpoint.url +
                                 ": the connection was closed during the TLS handshake (" +
                                 (saved_errno != 0 ? std::strerror(saved_errno) : "end of stream") +
                                 ")",
                             true);
      }
      std::string detail = DrainOpensslErrors();
      if (detail.empty()) detail = saved_errno != 0 ? std::strerror(saved_errno) : "closed";
      throw TransportError(ErrorReason::kTLS,
                           "TLS handshake with " + endpoint.url +
                               " failed, the server rejected the connection (" + detail + ")",
                           true);
    }
    connection->broken_ = false;
    return connection;
  }
  throw TransportError(timed_out ? ErrorReason::kTimeout : ErrorReason::kTransport,
                       "cannot connect to " + endpoint.url + ": " + last_error, true);
}

void Connection::Wait(bool for_write, Deadline deadline, const char* doing) {
  for (;;) {
    if (shut_down_.load()) {
      throw TransportError(ErrorReason::kTransport, "connection to " + peer_ + " was shut down",
                           false);
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      throw TransportError(ErrorReason::kTimeout,
                           "request to " + peer_ + " timed out while " + doing, false);
    }
    // Sleeps at most a minute at a time so a far deadline cannot overflow poll's int.
    const auto wait = std::min<std::chrono::nanoseconds>(deadline - now, std::chrono::minutes(1));
    const int ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count());
    pollfd p{fd_, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
    const int rc = poll(&p, 1, ms);
    if (rc > 0) return;
    if (rc < 0 && errno != EINTR) FailIo(doing, SSL_ERROR_SYSCALL, errno);
  }
}

void Connection::FailIo(const char* doing, int ssl_error, int saved_errno) {
  broken_ = true;
  if (shut_down_.load()) {
    DrainOpensslErrors();
    throw TransportError(ErrorReason::kTransport, "connection to " + peer_ + " was shut down",
                         false);
  }
  if (ssl_error == SSL_ERROR_SSL) {
    // A TLS alert after the handshake, such as TLS 1.3's "certificate required".
    throw TransportError(
        ErrorReason::kTLS,
        "TLS error from " + peer_ + " while " + doing + " (" + DrainOpensslErrors() + ")", false);
  }
  DrainOpensslErrors();
  throw TransportError(ErrorReason::kTransport,
                       "request to " + peer_ + " failed while " + doing + ": " +
                           (saved_errno != 0 ? std::strerror(saved_errno) : "connection closed"),
                       false);
}

void Connection::Send(std::string_view request, Deadline deadline) {
  got_response_bytes_ = false;
  size_t sent = 0;
  try {
    while (sent < request.size()) {
      const size_t want = std::min<size_t>(request.size() - sent, INT_MAX);
      if (ssl_ != nullptr) {
        ERR_clear_error();
        const int n = SSL_write(ssl_, request.data() + sent, static_cast<int>(want));
        if (n > 0) {
          sent += static_cast<size_t>(n);
          continue;
        }
        const int error = SSL_get_error(ssl_, n);
        if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
          Wait(error == SSL_ERROR_WANT_WRITE, deadline, "sending the request");
          continue;
        }
        FailIo("sending the request", error, errno);
      }
      const ssize_t n = ::send(fd_, request.data() + sent, want, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        Wait(/*for_write=*/true, deadline, "sending the request");
      } else if (!(n < 0 && errno == EINTR)) {
        FailIo("sending the request", SSL_ERROR_SYSCALL, errno);
      }
    }
  } catch (const TransportError& e) {
    // An incomplete request is never acted upon, so it may be sent again.
    throw TransportError(e.reason(), e.what(), true);
  }
}

bool Connection::Fill(Deadline deadline) {
  if (in_pos_ > 0 && in_pos_ * 2 >= in_.size()) {
    in_.erase(0, in_pos_);
    in_pos_ = 0;
  }
  char buf[kReadChunk];
  for (;;) {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, buf, sizeof(buf));
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        got_response_bytes_ = true;
        return true;
      }
      const int error = SSL_get_error(ssl_, n);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        Wait(error == SSL_ERROR_WANT_WRITE, deadline, "reading the response");
        continue;
      }
      if (error == SSL_ERROR_ZERO_RETURN && !shut_down_.load()) {
        close_after_ = true;
        return false;
      }
      FailIo("reading the response", error, errno);
    }
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      got_response_bytes_ = true;
      return true;
    }
    if (n == 0 && !shut_down_.load()) {
      close_after_ = true;
      return false;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Wait(/*for_write=*/false, deadline, "reading the response");
    } else if (!(n < 0 && errno == EINTR)) {
      FailIo("reading the response", SSL_ERROR_SYSCALL, n < 0 ? errno : 0);
    }
  }
}

bool Connection::TakeLine(std::string* line) {
  const size_t newline = in_.find('\n', in_pos_);
  if (newline == std::string::npos) {
    if (Buffered() > kMaxHeaderBytes) {
      broken_ = true;
      throw TransportError(ErrorReason::kTransport,
                           "response from " + peer_ + " has a line over 1 MiB", false);
    }
    return false;
  }
  size_t end = newline;
  if (end > in_pos_ && in_[end - 1] == '\r') --end;
  line->assign(in_, in_pos_, end - in_pos_);
  in_pos_ = newline + 1;
  return true;
}

ResponseHead Connection::ReadHead(Deadline deadline) {
  auto next_line = [&](std::string* line) {
    while (!TakeLine(line)) {
      if (!Fill(deadline)) {
        broken_ = true;
        // A pooled connection the server closed while idle ends before the first byte; the
        // request never reached a live handler.
        throw TransportError(ErrorReason::kTransport,
                             "server " + peer_ + " closed the connection before responding",
                             reused_ && !got_response_bytes_);
      }
    }
  };
  auto malformed = [&](const std::string& what) {
    broken_ = true;
    return TransportError(ErrorReason::kTransport, "malformed response from " + peer_ + ": " + what,
                          false);
  };
  for (;;) {
    std::string line;
    next_line(&line);
    // "HTTP/1.1 200 OK"
    if (line.size() < 12 || line.rfind("HTTP/1.", 0) != 0 || line[8] != ' ') {
      throw malformed("status line \"" + line.substr(0, 64) + "\"");
    }
    int status = 0;
    const auto parsed = std::from_chars(line.data() + 9, line.data() + 12, status);
    if (parsed.ec != std::errc() || parsed.ptr != line.data() + 12 || status < 100) {
      throw malformed("status line \"" + line.substr(0, 64) + "\"");
    }
    const bool http10 = line[7] == '0';
    ResponseHead head;
    head.status = status;
    bool chunked = false;
    std::optional<uint64_t> length;
    bool close = http10;
    for (;;) {
      next_line(&line);
      if (line.empty()) break;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) throw malformed("header line without a colon");
      const std::string_view name = Trim(std::string_view(line).substr(0, colon));
      const std::string_view value = Trim(std::string_view(line).substr(colon + 1));
      auto is = [&](std::string_view want) {
        return name.size() == want.size() && StartsWithNoCase(name, want);
      };
      if (is("content-length")) {
        uint64_t n = 0;
        const auto r = std::from_chars(value.data(), value.data() + value.size(), n);
        if (r.ec != std::errc() || r.ptr != value.data() + value.size()) {
          throw malformed("Content-Length \"" + std::string(value) + "\"");
        }
        length = n;
      } else if (is("transfer-encoding")) {
        chunked = ContainsTokenNoCase(value, "chunked");
      } else if (is("connection")) {
        if (ContainsTokenNoCase(value, "close")) close = true;
        if (http10 && ContainsTokenNoCase(value, "keep-alive")) close = false;
      } else if (is("retry-after")) {
        head.retry_after = std::string(value);
      } else if (is("content-type")) {
        head.content_type = std::string(value);
      }
    }
    if (status < 200 && status != 101) continue;  // Interim response: the real one follows.
    close_after_ = close;
    if (status == 204 || status == 304 || status < 200) {
      body_mode_ = BodyMode::kNone;
    } else if (chunked) {
      body_mode_ = BodyMode::kChunked;
      chunk_state_ = ChunkState::kSize;
    } else if (length) {
      body_mode_ = *length == 0 ? BodyMode::kNone : BodyMode::kLength;
      remaining_ = *length;
    } else {
      body_mode_ = BodyMode::kUntilClose;
      close_after_ = true;
    }
    return head;
  }
}

bool Connection::ReadBodySome(std::string* out, Deadline deadline) {
  auto truncated = [&] {
    broken_ = true;
    return TransportError(ErrorReason::kTransport, "response body from " + peer_ + " ended early",
                          false);
  };
  auto need_more = [&] {
    if (!Fill(deadline)) throw truncated();
  };
  std::string line;
  for (;;) {
    switch (body_mode_) {
      case BodyMode::kNone:
        return false;
      case BodyMode::kUntilClose:
        if (Buffered() > 0) {
          out->append(in_, in_pos_);
          in_pos_ = in_.size();
          return true;
        }
        if (!Fill(deadline)) {
          body_mode_ = BodyMode::kNone;
          return false;
        }
        continue;
      case BodyMode::kLength:
      case BodyMode::kChunked:
        break;
    }
    if (body_mode_ == BodyMode::kLength || chunk_state_ == ChunkState::kData) {
      if (Buffered() == 0) {
        need_more();
        continue;
      }
      const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, Buffered()));
      out->append(in_, in_pos_, n);
      in_pos_ += n;
      remaining_ -= n;
      if (remaining_ == 0) {
        if (body_mode_ == BodyMode::kLength) {
          body_mode_ = BodyMode::kNone;
        } else {
          chunk_state_ = ChunkState::kDataEnd;
        }
      }
      return true;
    }
    if (!TakeLine(&line)) {
      need_more();
      continue;
    }
    switch (chunk_state_) {
      case ChunkState::kSize: {
        const std::string_view size_text = Trim(std::string_view(line).substr(0, line.find(';')));
        uint64_t size = 0;
        const auto r =
            std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
        if (size_text.empty() || r.ec != std::errc() ||
            r.ptr != size_text.data() + size_text.size()) {
          broken_ = true;
          throw TransportError(
              ErrorReason::kTransport,
              "malformed chunk size from " + peer_ + ": \"" + line.substr(0, 32) + "\"", false);
        }
        remaining_ = size;
        chunk_state_ = size == 0 ? ChunkState::kTrailers : ChunkState::kData;
        break;
      }
      case ChunkState::kDataEnd:
        if (!line.empty()) throw truncated();
        chunk_state_ = ChunkState::kSize;
        break;
      case ChunkState::kTrailers:
        if (line.empty()) {
          chunk_state_ = ChunkState::kDone;
          body_mode_ = BodyMode::kNone;
          return false;
        }
        break;
      case ChunkState::kData:
      case ChunkState::kDone:
        break;
    }
  }
}

void Connection::ReadBody(std::string* out, Deadline deadline) {
  while (ReadBodySome(out, deadline)) {
  }
}

bool Connection::Reusable() const {
  return !broken_ && !close_after_ && !shut_down_.load() && body_mode_ == BodyMode::kNone &&
         Buffered() == 0;
}

bool Connection::IdleAndOpen() {
  pollfd p{fd_, POLLIN, 0};
  const int rc = poll(&p, 1, 0);
  if (rc == 0) return true;
  if (rc < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0 || ssl_ == nullptr) return false;
  // TLS 1.3 session tickets may arrive after the response; they are not application data.
  ERR_clear_error();
  char byte = 0;
  const int n = SSL_peek(ssl_, &byte, 1);
  const bool alive = n <= 0 && SSL_get_error(ssl_, n) == SSL_ERROR_WANT_READ;
  DrainOpensslErrors();
  return alive;
}

void Connection::Shutdown() {
  shut_down_.store(true);
  ::shutdown(fd_, SHUT_RDWR);
}

std::unique_ptr<Connection> ConnectionPool::Acquire(Deadline deadline) {
  for (;;) {
    std::unique_ptr<Connection> connection;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_.empty()) break;
      connection = std::move(idle_.back());
      idle_.pop_back();
    }
    if (connection->IdleAndOpen()) {
      connection->set_reused(true);
      return connection;
    }
  }
  return Dial(deadline);
}

std::unique_ptr<Connection> ConnectionPool::Dial(Deadline deadline) {
  return Connection::Open(endpoint_, endpoint_.tls ? tls_.get() : nullptr, deadline);
}

void ConnectionPool::Release(std::unique_ptr<Connection> connection) {
  if (connection == nullptr || !connection->Reusable()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(connection));
}

void IgnoreSigpipeOnce() {
  static const bool done = [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
    return true;
  }();
  (void)done;
}

}  // namespace berth::client::internal
