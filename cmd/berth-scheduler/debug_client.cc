#include "cmd/berth-scheduler/debug_client.h"

#include <curl/curl.h>

#include <climits>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "pkg/client/client.h"
#include "pkg/client/curl_transport.h"
#include "pkg/util/url.h"

namespace berth::cmd {
namespace {

namespace internal = client::internal;

// Beyond the exchange's own timeout, which libcurl enforces: only a stuck transport waits this.
constexpr std::chrono::seconds kDeadlineSlack{5};
constexpr std::chrono::seconds kConnectTimeout{30};

// pkg/client's messages start with "client: "; here the flag is the subject.
std::string WithoutClientPrefix(std::string_view message) {
  constexpr std::string_view kPrefix = "client: ";
  if (message.substr(0, kPrefix.size()) == kPrefix) message.remove_prefix(kPrefix.size());
  return std::string(message);
}

std::string ReadCaFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream pem;
  if (in) pem << in.rdbuf();
  if (!in || pem.str().empty()) {
    throw std::runtime_error("--certificate-authority: cannot read \"" + path + "\"");
  }
  return pem.str();
}

}  // namespace

DebugResponse DebugCall(const DebugServer& server, const std::string& method,
                        const std::string& path_and_query, const std::string& body,
                        const std::string& content_type) {
  client::Config config;
  config.server = server.url;
  // A path in --server (a proxy's, such as the one `kubectl proxy` serves for a service) goes in
  // front of every request's path. The rest of the URL is checked as the apiserver's is, so a URL
  // with userinfo, a query or a fragment is still refused there.
  std::string prefix;
  if (const util::UrlResult parsed = util::ParseUrl(server.url);
      parsed.url && parsed.url->path != "/" && !parsed.url->has_user && !parsed.url->has_query &&
      !parsed.url->has_fragment) {
    prefix = parsed.url->path;
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    config.server = parsed.url->Origin();
  }
  internal::Endpoint endpoint;
  try {
    endpoint = internal::ParseEndpoint(config);
  } catch (const client::ConfigError& e) {
    throw std::runtime_error("--server: " + WithoutClientPrefix(e.what()));
  }
  internal::TransportOptions options;
  if (!server.ca_file.empty()) options.ca_pem = ReadCaFile(server.ca_file);
  options.verify = !server.insecure;
  options.user_agent = std::string("berth-scheduler/") + client::BerthVersion();

  internal::Request request;
  request.method = method.c_str();
  request.target = prefix + path_and_query;
  request.accept = "*/*";
  if (method == "POST") {
    request.has_body = true;
    request.body = body;
    request.content_type = content_type;
    // A simulation the server ran must not be run again behind the caller's back.
    request.replayable = false;
  }
  if (!server.token.empty()) {
    auto credentials = std::make_shared<internal::Credentials>();
    credentials->token = server.token;
    request.credentials = std::move(credentials);
  }
  request.timeout = server.timeout;
  request.connect_timeout = std::min<std::chrono::milliseconds>(server.timeout, kConnectTimeout);
  // Streamed, so the body is held in libcurl's bounded buffer until read and capped below at
  // kMaxDebugResponseBytes, not collected whole up to pkg/client's far larger cap.
  request.stream = true;

  internal::IgnoreSigpipeOnce();
  std::shared_ptr<internal::Transport> transport;
  try {
    transport = internal::Transport::Create(std::move(endpoint), std::move(options));
  } catch (const client::ConfigError& e) {
    throw std::runtime_error(WithoutClientPrefix(e.what()));
  }
  const internal::Deadline deadline =
      std::chrono::steady_clock::now() + server.timeout + kDeadlineSlack;
  try {
    const std::shared_ptr<internal::Transfer> transfer = transport->Start(std::move(request));
    DebugResponse response;
    response.status = transfer->WaitHead(deadline).status;
    while (transfer->ReadSome(&response.body, deadline)) {
      if (response.body.size() > kMaxDebugResponseBytes) {
        transfer->Cancel();
        throw std::runtime_error("the response from " + server.url + " is over " +
                                 std::to_string(kMaxDebugResponseBytes >> 20) +
                                 " MiB: not the scheduler's serving port?");
      }
    }
    return response;
  } catch (const internal::TransportError& e) {
    std::string hint;
    if (e.reason() == client::ErrorReason::kTLS && !server.insecure &&
        std::string_view(e.what()).find("verification failed") != std::string_view::npos) {
      // Without --tls-cert-file the scheduler serves a certificate it made itself at start.
      hint =
          " (the scheduler's own self-signed certificate unless it was given one: "
          "--certificate-authority FILE, or --insecure-skip-tls-verify)";
    }
    throw std::runtime_error(std::string(e.what()) + hint);
  }
}

std::string EncodePathSegment(const std::string& segment) {
  // libcurl ignores the handle (since 7.82) and escapes all but RFC 3986 unreserved characters.
  if (segment.size() > static_cast<size_t>(INT_MAX)) throw std::length_error("path segment");
  std::unique_ptr<char, decltype(&curl_free)> escaped(
      curl_easy_escape(nullptr, segment.data(), static_cast<int>(segment.size())), curl_free);
  if (escaped == nullptr) throw std::bad_alloc();
  return escaped.get();
}

}  // namespace berth::cmd
