#include "cmd/berth-scheduler/debug_client.h"

#include <cpprest/http_client.h>

#include <boost/asio/ssl.hpp>
#include <chrono>
#include <memory>
#include <stdexcept>

namespace berth::cmd {

DebugResponse DebugCall(const DebugServer& server, const std::string& method,
                        const std::string& path_and_query, const std::string& body,
                        const std::string& content_type) {
  web::http::client::http_client_config config;
  // A dry run per hint over a large cluster takes a while; the scheduler answers one at a time.
  config.set_timeout(std::chrono::seconds(120));
  if (server.insecure) config.set_validate_certificates(false);
  if (!server.ca_file.empty()) {
    const std::string ca = server.ca_file;
    config.set_ssl_context_callback(
        [ca](boost::asio::ssl::context& ctx) { ctx.load_verify_file(ca); });
  }
  std::unique_ptr<web::http::client::http_client> client;
  try {
    client = std::make_unique<web::http::client::http_client>(web::uri(server.url), config);
  } catch (const std::exception& e) {
    throw std::runtime_error("--server: \"" + server.url + "\" is not a URL: " + e.what());
  }
  web::http::http_request request(method);
  request.set_request_uri(path_and_query);
  if (!server.token.empty()) request.headers().add("Authorization", "Bearer " + server.token);
  if (method == web::http::methods::POST) request.set_body(body, content_type);
  try {
    web::http::http_response response = client->request(request).get();
    return {response.status_code(), response.extract_utf8string(true).get()};
  } catch (const std::exception& e) {
    std::string hint;
    if (std::string(e.what()).find("certificate verify failed") != std::string::npos) {
      // Without --tls-cert-file the scheduler serves a certificate it made itself at start.
      hint =
          " (a self-signed certificate: --certificate-authority FILE, or "
          "--insecure-skip-tls-verify)";
    }
    throw std::runtime_error("cannot reach " + server.url + ": " + e.what() + hint);
  }
}

std::string EncodePathSegment(const std::string& segment) {
  return web::uri::encode_data_string(segment);
}

}  // namespace berth::cmd
