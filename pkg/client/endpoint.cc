#include "pkg/client/endpoint.h"

#include <string>

#include "pkg/util/url.h"

namespace berth::client::internal {

Endpoint ParseEndpoint(const Config& config) {
  const std::string& server = config.server;
  const util::UrlResult parsed = util::ParseUrl(server);
  if (!parsed) {
    throw ConfigError("client: server \"" + util::RedactUrl(server) +
                      "\" is not a URL: " + parsed.error);
  }
  const util::Url& url = *parsed.url;
  if (url.scheme != "https" && url.scheme != "http") {
    throw ConfigError("client: server \"" + util::RedactUrl(server) + "\" is not an https:// URL");
  }
  // Requests name their whole path, so the server URL may not add one; a trailing "/" (or
  // several) is no path.
  if (url.has_user || url.has_query || url.has_fragment ||
      url.path.find_first_not_of('/') != std::string::npos) {
    throw ConfigError("client: server \"" + util::RedactUrl(server) +
                      "\" must be scheme://host[:port] without a path, query or user info");
  }
  if (url.port == 0) {
    throw ConfigError("client: server \"" + util::RedactUrl(server) +
                      "\" needs a host and a port in 1-65535");
  }
  Endpoint endpoint;
  endpoint.tls = url.scheme == "https";
  endpoint.host = url.host;
  endpoint.port = std::to_string(url.port);
  endpoint.authority = url.Authority();
  endpoint.verify_name = config.tls_server_name.empty() ? endpoint.host : config.tls_server_name;
  endpoint.url = server;
  const bool remap = endpoint.tls && endpoint.verify_name != endpoint.host;
  const util::UrlResult base =
      util::MakeUrl(url.scheme, remap ? endpoint.verify_name : endpoint.host, endpoint.port);
  if (!base) {
    throw ConfigError(remap ? "client: tls-server-name \"" + endpoint.verify_name +
                                  "\" cannot stand for the host in a URL: " + base.error
                            : "client: server \"" + util::RedactUrl(server) +
                                  "\" has a host libcurl cannot use: " + base.error);
  }
  endpoint.base_url = base.url->Origin();
  return endpoint;
}

}  // namespace berth::client::internal
