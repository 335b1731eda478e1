#include "pkg/client/curl_easy.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>
#include <string_view>

namespace berth::client::internal {
namespace {

// Dead connections are found by TCP keepalive within about this long: with HTTP/2 one connection
// carries every watch and request, so a peer that vanished without a FIN must not stall them
// until each one's own timeout (client-go pings its HTTP/2 connections for the same reason).
constexpr int kKeepaliveIdleSeconds = 30;
constexpr int kKeepaliveIntervalSeconds = 5;
constexpr unsigned kTcpUserTimeoutMs = 45000;
}  // namespace

}  // namespace berth::client::internal

// libcurl as Debian builds it links libldap and librtmp, which link GnuTLS, and GnuTLS
// initialises itself from a load-time constructor unless the program defines this hook: it reads
// its system priority file, loads p11-kit's trust modules and parses ASN.1 tables, about 1 MiB of
// resident memory for a library Berth never calls (the client allows only http and https, and
// TLS is OpenSSL's). Code that does use GnuTLS (libldap's and librtmp's TLS) calls
// gnutls_global_init itself, so nothing that could run here loses its initialisation. The
// executable exports the symbol (berth_client's link options) so that GnuTLS's call through its
// PLT finds this definition ahead of its own weak one.
extern "C" __attribute__((visibility("default"), used)) int _gnutls_global_init_skip() { return 1; }

namespace berth::client::internal {

void GlobalInitOnce() {
  static const CURLcode result = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (result != CURLE_OK) {
    throw ConfigError(std::string("client: libcurl cannot be initialised: ") +
                      curl_easy_strerror(result));
  }
}

bool Http2Available() {
  static const bool available =
      (curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_HTTP2) != 0;
  return available;
}

std::string OptionName(CURLoption option) {
  const curl_easyoption* found = curl_easy_option_by_id(option);
  return found != nullptr ? std::string("CURLOPT_") + found->name
                          : "option " + std::to_string(static_cast<int>(option));
}

std::string Bracketed(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

SlistPtr Append(SlistPtr list, const std::string& line) {
  curl_slist* grown = curl_slist_append(list.get(), line.c_str());
  if (grown == nullptr) {
    throw TransportError(ErrorReason::kUnknown, "client: out of memory building a request", true);
  }
  // curl_slist_append extended the list in place (or made `grown` its first node): one owner.
  static_cast<void>(list.release());
  return SlistPtr(grown);
}

std::string HeaderValue(CURL* easy, const char* name, size_t index) {
  curl_header* header = nullptr;
  if (curl_easy_header(easy, name, index, CURLH_HEADER, -1, &header) != CURLHE_OK) return "";
  return header->value;
}

size_t HeaderCount(CURL* easy, const char* name) {
  curl_header* header = nullptr;
  if (curl_easy_header(easy, name, 0, CURLH_HEADER, -1, &header) != CURLHE_OK) return 0;
  return header->amount;
}

int TuneSocket(void*, curl_socket_t fd, curlsocktype purpose) {
  if (purpose != CURLSOCKTYPE_IPCXN) return CURL_SOCKOPT_OK;
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepaliveIdleSeconds, sizeof(int));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepaliveIntervalSeconds, sizeof(int));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &kTcpUserTimeoutMs, sizeof(unsigned));
  return CURL_SOCKOPT_OK;
}

TransportError TransferError(CURLcode code, std::string_view error_text,
                             const FailedTransfer& failed) {
  std::string detail(error_text);
  while (!detail.empty() && detail.back() == ' ') detail.pop_back();
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_PROXY:
      return TransportError(ErrorReason::kTransport,
                            "cannot connect to " + failed.url + ": " + detail, true);
    case CURLE_OPERATION_TIMEDOUT:
      return TransportError(ErrorReason::kTimeout,
                            "request to " + failed.url + " timed out (" + detail + ")",
                            failed.unsent);
    case CURLE_PEER_FAILED_VERIFICATION:
      return TransportError(ErrorReason::kTLS,
                            "TLS certificate verification failed for " + failed.url + " (" +
                                detail +
                                "): the server certificate is not signed by the configured "
                                "certificate authority or does not name " +
                                failed.verify_name,
                            true);
    case CURLE_SSL_CONNECT_ERROR:
      // Closed or reset without a TLS alert: the connection failed, TLS did not. A load balancer
      // in front of apiservers that are all down (or restarting) accepts the connection and then
      // closes it just like this; the next attempt may well succeed. libcurl reports no more than
      // its text for these.
      // A reset that arrives before the handshake's first byte fails libcurl's own look at the
      // socket instead ("getpeername() failed with errno 107: Transport endpoint is not
      // connected").
      if (detail.find("SSL_ERROR_SYSCALL") != std::string::npos ||
          detail.find("unexpected eof") != std::string::npos ||
          detail.find("Connection reset by peer") != std::string::npos ||
          detail.find("Transport endpoint is not connected") != std::string::npos ||
          detail.find("Broken pipe") != std::string::npos) {
        return TransportError(ErrorReason::kTransport,
                              "cannot connect to " + failed.url +
                                  ": the connection was closed during the TLS handshake (" +
                                  detail + ")",
                              true);
      }
      [[fallthrough]];
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
      return TransportError(ErrorReason::kTLS,
                            "TLS handshake with " + failed.url + " failed (" + detail + ")", true);
    case CURLE_SEND_FAIL_REWIND:
      return TransportError(ErrorReason::kTransport,
                            "the connection to " + failed.url +
                                " closed after the request was sent and before its response "
                                "arrived; it is not sent again, since the server may have acted "
                                "on it",
                            false);
    case CURLE_GOT_NOTHING:
      return TransportError(ErrorReason::kTransport,
                            "server " + failed.url + " closed the connection before responding",
                            failed.unsent);
    case CURLE_PARTIAL_FILE:
      return TransportError(ErrorReason::kTransport,
                            "response body from " + failed.url + " ended early (" + detail + ")",
                            false);
    case CURLE_WRITE_ERROR:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_RECURSIVE_API_CALL:
      return TransportError(ErrorReason::kTransport,
                            "malformed response from " + failed.url + ": " +
                                (failed.malformed.empty() ? detail : failed.malformed),
                            failed.unsent);
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
      // A TLS alert after the handshake, such as TLS 1.3's "certificate required".
      if (detail.find("SSL") != std::string::npos) {
        return TransportError(ErrorReason::kTLS,
                              "TLS error from " + failed.url + " (" + detail + ")", failed.unsent);
      }
      break;
    default:
      break;
  }
  return TransportError(ErrorReason::kTransport, "request to " + failed.url + " failed: " + detail,
                        failed.unsent);
}

}  // namespace berth::client::internal
