#include "pkg/client/proxy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "pkg/util/url.h"

namespace berth::client::internal {
namespace {

// An IPv4 or IPv6 address as 16 bytes (IPv4 mapped into ::ffff:0:0/96, as Go compares them).
using Address = std::array<unsigned char, 16>;

std::optional<Address> ParseIp(const std::string& text) {
  Address address{};
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    address[10] = 0xff;
    address[11] = 0xff;
    std::memcpy(address.data() + 12, &v4, 4);
    return address;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    std::memcpy(address.data(), &v6, 16);
    return address;
  }
  return std::nullopt;
}

bool IsV4(const Address& a) {
  return std::all_of(a.begin(), a.begin() + 10, [](unsigned char b) { return b == 0; }) &&
         a[10] == 0xff && a[11] == 0xff;
}

bool IsLoopback(const Address& a) {
  if (IsV4(a)) return a[12] == 127;
  Address one{};
  one[15] = 1;
  return a == one;
}

struct Cidr {
  Address base;
  int bits;  // Prefix length over the 16-byte form.
  bool Contains(const Address& a) const {
    for (int i = 0; i < bits; ++i) {
      const int byte = i / 8;
      const int mask = 0x80 >> (i % 8);
      if ((a[byte] & mask) != (base[byte] & mask)) return false;
    }
    return true;
  }
};

std::optional<Cidr> ParseCidr(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  const std::optional<Address> base = ParseIp(text.substr(0, slash));
  int bits = -1;
  const std::string_view length = std::string_view(text).substr(slash + 1);
  const auto parsed = std::from_chars(length.data(), length.data() + length.size(), bits);
  if (!base || parsed.ec != std::errc() || parsed.ptr != length.data() + length.size()) {
    return std::nullopt;
  }
  const int max = IsV4(*base) ? 32 : 128;
  if (bits < 0 || bits > max) return std::nullopt;
  return Cidr{*base, bits + (max == 32 ? 96 : 0)};
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "host:port" or "[v6]:port"; false when there is no port (as Go's net.SplitHostPort).
bool SplitHostPort(const std::string& entry, std::string* host, std::string* port) {
  if (!entry.empty() && entry.front() == '[') {
    const size_t close = entry.find(']');
    if (close == std::string::npos || close + 1 >= entry.size() || entry[close + 1] != ':') {
      return false;
    }
    *host = entry.substr(1, close - 1);
    *port = entry.substr(close + 2);
    return true;
  }
  const size_t colon = entry.find(':');
  if (colon == std::string::npos || entry.find(':', colon + 1) != std::string::npos) return false;
  *host = entry.substr(0, colon);
  *port = entry.substr(colon + 1);
  return true;
}

// Whether one NO_PROXY entry (lower-case, trimmed, not "*") exempts host:port.
bool Exempts(const std::string& entry, const std::string& host,
             const std::optional<Address>& host_ip, const std::string& port) {
  if (const std::optional<Cidr> cidr = ParseCidr(entry)) {
    return host_ip && cidr->Contains(*host_ip);
  }
  std::string entry_host;
  std::string entry_port;
  if (!SplitHostPort(entry, &entry_host, &entry_port)) {
    entry_host = entry;
    entry_port.clear();
  } else if (entry_host.empty()) {
    return false;  // ":80" names no host.
  }
  const bool port_matches = entry_port.empty() || entry_port == port;
  if (const std::optional<Address> ip = ParseIp(entry_host)) {
    return host_ip && *ip == *host_ip && port_matches;
  }
  if (entry_host.empty()) return false;
  if (entry_host.rfind("*.", 0) == 0) entry_host.erase(0, 1);
  // "example.com" matches itself and its subdomains; ".example.com" only the subdomains.
  const bool match_host = entry_host.front() != '.';
  if (match_host) entry_host.insert(0, ".");
  const bool suffix =
      host.size() >= entry_host.size() &&
      host.compare(host.size() - entry_host.size(), entry_host.size(), entry_host) == 0;
  return (suffix || (match_host && host == entry_host.substr(1))) && port_matches;
}

// Checks a proxy URL and returns it in libcurl's form. With `default_scheme`, a text that is not
// a URL is read as http://text, as Go reads the proxy variables.
std::string Normalize(const std::string& text, bool default_scheme) {
  const util::UrlResult parsed =
      util::ParseUrl(text, {.any_scheme = true, .default_scheme = default_scheme ? "http" : ""});
  if (!parsed) {
    const bool lacks_scheme =
        !default_scheme && util::ParseUrl(text, {.any_scheme = true, .default_scheme = "http"});
    throw ConfigError("proxy URL \"" + RedactProxyUrl(text) + "\" " +
                      (lacks_scheme ? "needs a scheme (http://, https:// or socks5://)"
                                    : "is not a URL: " + parsed.error));
  }
  const util::Url& url = *parsed.url;
  if (url.scheme == "http" || url.scheme == "https") return url.text;
  // Go's SOCKS5 dialer has the proxy resolve the server's name; in libcurl that is socks5h.
  if (url.scheme == "socks5") return "socks5h" + url.text.substr(url.scheme.size());
  throw ConfigError("proxy URL \"" + RedactProxyUrl(text) +
                    "\" has an unsupported scheme; use http, https or socks5");
}

}  // namespace

std::string NormalizeProxyUrl(const std::string& proxy_url) {
  return Normalize(proxy_url, /*default_scheme=*/false);
}

std::string ProxyFor(const Endpoint& endpoint, const std::string& proxy_url, const EnvLookup& env) {
  if (!proxy_url.empty()) {
    try {
      return NormalizeProxyUrl(proxy_url);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("client: proxy-url: ") + e.what());
    }
  }

  const char* upper = endpoint.tls ? "HTTPS_PROXY" : "HTTP_PROXY";
  const char* lower = endpoint.tls ? "https_proxy" : "http_proxy";
  const char* name = upper;
  std::string proxy = env(upper);
  if (proxy.empty()) {
    name = lower;
    proxy = env(lower);
  }
  if (proxy.empty()) return "";

  const std::string host = Lower(endpoint.host);
  const std::optional<Address> host_ip = ParseIp(host);
  if (host == "localhost" || (host_ip && IsLoopback(*host_ip))) return "";
  std::string no_proxy = env("NO_PROXY");
  if (no_proxy.empty()) no_proxy = env("no_proxy");
  std::stringstream entries(no_proxy);
  for (std::string raw; std::getline(entries, raw, ',');) {
    const std::string entry = Lower(TrimSpace(raw));
    if (entry.empty()) continue;
    if (entry == "*") return "";
    if (Exempts(entry, host, host_ip, endpoint.port)) return "";
  }
  try {
    return Normalize(proxy, /*default_scheme=*/true);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("client: $") + name + ": " + e.what());
  }
}

std::string RedactProxyUrl(const std::string& proxy_url) { return util::RedactUrl(proxy_url); }

}  // namespace berth::client::internal
