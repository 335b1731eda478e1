#ifndef BERTH_PKG_CLIENT_PROXY_H_
#define BERTH_PKG_CLIENT_PROXY_H_

// Which proxy, if any, a client goes through: the kubeconfig's proxy-url, else the environment
// read the way client-go (Go's http.ProxyFromEnvironment) reads it. Internal to pkg/client and
// its unit tests.

#include <functional>
#include <string>

#include "pkg/client/curl_transport.h"

namespace berth::client::internal {

// Reads one environment variable; empty when unset.
using EnvLookup = std::function<std::string(const char* name)>;

// The proxy URL for requests to `endpoint`, in libcurl's form, or empty to connect directly.
// `proxy_url` (Config::proxy_url) wins when set; its scheme must be http, https or socks5 (sent
// to libcurl as socks5h, so that the proxy resolves the server's name as Go's dialer has it do).
// Otherwise HTTPS_PROXY/https_proxy applies to an https server and HTTP_PROXY/http_proxy to an
// http one (the upper-case name first; a value without a scheme means http://), unless
// NO_PROXY/no_proxy matches the server (`*`; a host, which matches its subdomains too, with an
// optional leading "." or "*."; an IP address; a CIDR; each optionally with :port) or the server
// is localhost or a loopback address. Throws ConfigError for a malformed `proxy_url`.
std::string ProxyFor(const Endpoint& endpoint, const std::string& proxy_url, const EnvLookup& env);

// `proxy_url` (a kubeconfig proxy-url) in libcurl's form; throws ConfigError saying what is
// wrong (without naming the field) unless its scheme is http, https or socks5 and it has a host.
std::string NormalizeProxyUrl(const std::string& proxy_url);

// `proxy_url` without its user info, for Describe() and messages.
std::string RedactProxyUrl(const std::string& proxy_url);

}  // namespace berth::client::internal

#endif  // BERTH_PKG_CLIENT_PROXY_H_
