#ifndef BERTH_PKG_CLIENT_CURL_EASY_H_
#define BERTH_PKG_CLIENT_CURL_EASY_H_

// libcurl's C API made safe to hold and to check for the transport (curl_transport.cc): owners
// for its handles, option setters that throw when libcurl refuses one, response-header lookups,
// the tuning every socket gets, and what a failed transfer's CURLcode means to a caller.
// Internal to pkg/client.

#include <curl/curl.h>

#include <memory>
#include <string>
#include <string_view>

#include "pkg/client/client.h"
#include "pkg/client/curl_transport.h"

namespace berth::client::internal {

struct EasyCleanup {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
using EasyPtr = std::unique_ptr<CURL, EasyCleanup>;
struct MultiCleanup {
  void operator()(CURLM* multi) const { curl_multi_cleanup(multi); }
};
using MultiPtr = std::unique_ptr<CURLM, MultiCleanup>;
struct SlistFree {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using SlistPtr = std::unique_ptr<curl_slist, SlistFree>;

// curl_global_init, once per process; throws ConfigError when it fails.
void GlobalInitOnce();
// Whether this libcurl was built with HTTP/2.
bool Http2Available();
// "CURLOPT_<name>", for messages.
std::string OptionName(CURLoption option);

template <typename T>
void SetOpt(CURL* easy, CURLoption option, T value) {
  if (const CURLcode rc = curl_easy_setopt(easy, option, value); rc != CURLE_OK) {
    throw TransportError(
        ErrorReason::kUnknown,
        "client: libcurl rejected " + OptionName(option) + ": " + curl_easy_strerror(rc),
        /*request_not_sent=*/true);
  }
}

template <typename T>
void SetMultiOpt(CURLM* multi, CURLMoption option, T value) {
  if (const CURLMcode rc = curl_multi_setopt(multi, option, value); rc != CURLM_OK) {
    throw ConfigError(std::string("client: libcurl rejected a connection-sharing setting: ") +
                      curl_multi_strerror(rc));
  }
}

// `host` as a URL spells it: an IPv6 address in brackets.
std::string Bracketed(const std::string& host);
bool AllDigits(std::string_view s);
// `list` with `line` appended; throws TransportError when out of memory.
SlistPtr Append(SlistPtr list, const std::string& line);
// A response header's value as libcurl parsed it, or empty.
std::string HeaderValue(CURL* easy, const char* name, size_t index = 0);
// How many times the response carried header `name`.
size_t HeaderCount(CURL* easy, const char* name);
// CURLOPT_SOCKOPTFUNCTION: keepalive and a bound on unacknowledged data for every socket
// libcurl opens.
int TuneSocket(void*, curl_socket_t fd, curlsocktype purpose);

// What is known of a transfer that ended in an error, beside its CURLcode.
struct FailedTransfer {
  const std::string& url;          // Config::server, for messages.
  const std::string& verify_name;  // The name the server certificate had to carry.
  const std::string& malformed;    // Why a callback rejected the response; empty if none did.
  // Whether the server provably never received the whole request: the body of a POST or PATCH is
  // handed to libcurl only on an established connection (and TLS session), so a request whose
  // body it never asked for cannot have reached the server complete.
  bool unsent = false;
};

// The TransportError a transfer that ended with `code` (and libcurl's `error_text`) raises: its
// reason, a message naming the server, and whether it may be sent again.
TransportError TransferError(CURLcode code, std::string_view error_text,
                             const FailedTransfer& failed);

}  // namespace berth::client::internal

#endif  // BERTH_PKG_CLIENT_CURL_EASY_H_
