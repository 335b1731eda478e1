#ifndef BERTH_PKG_CLIENT_ENDPOINT_H_
#define BERTH_PKG_CLIENT_ENDPOINT_H_

// The apiserver address a client's requests go to, checked once when the client is made.

#include <string>

#include "pkg/client/client.h"

namespace berth::client::internal {

// Where the apiserver listens, parsed from Config::server.
struct Endpoint {
  bool tls = true;
  std::string host;  // Without IPv6 brackets.
  std::string port;
  std::string authority;  // "host:port" as the URL spells it (the Host header).
  // The name checked against the server certificate and sent as SNI (tls-server-name or host).
  std::string verify_name;
  std::string url;  // Config::server, for messages.
  // "scheme://host:port" that requests go to, built by libcurl: with verify_name in place of the
  // host when they differ over TLS, so that libcurl checks (and sends as SNI) that name.
  std::string base_url;
};

// Throws ConfigError unless `server` is an http(s)://host[:port] URL without a path.
Endpoint ParseEndpoint(const Config& config);

}  // namespace berth::client::internal

#endif  // BERTH_PKG_CLIENT_ENDPOINT_H_
