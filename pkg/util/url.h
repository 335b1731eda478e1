#ifndef BERTH_PKG_UTIL_URL_H_
#define BERTH_PKG_UTIL_URL_H_

// URLs as libcurl reads them (its URL API: curl_url_set / curl_url_get), the one parser for every
// URL Berth is given: the apiserver's address, proxies, the in-cluster server. libcurl is what
// then connects, so a URL accepted here is one it can use. Failures come back as a value with
// libcurl's reason, never as an exception. Pure and thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace berth::util {

// One absolute URL, split.
struct Url {
  std::string scheme;         // Lower case ("HTTPS://h" is https).
  bool has_user = false;      // Userinfo is present, even an empty one ("@h", ":pw@h").
  bool has_password = false;  // A ':' in the userinfo.
  // Percent-decoded; an IPv6 literal without brackets, with its zone after a bare '%'
  // ("fe80::1%eth0"). libcurl normalizes a numeric IPv4 address ("0x7f.1" is "127.0.0.1").
  std::string host;
  // The host as an authority spells it: an IPv6 literal in brackets, its zone as "%25eth0".
  std::string authority_host;
  // The explicit port, else the scheme's default (80, 443, ...); 0 when neither is known.
  uint16_t port = 0;
  bool explicit_port = false;
  std::string path;  // As written, not decoded; "/" when there is none.
  bool has_query = false;
  std::string query;  // Without the '?', as written.
  bool has_fragment = false;
  // libcurl's form of the whole URL, userinfo included, with a bare "/" path left out
  // ("HTTPS://h:1/" is "https://h:1"): what to hand to libcurl.
  std::string text;

  // authority_host, then ":port" when the URL names one: the Host header and client-go's
  // metrics "host" label.
  std::string Authority() const;
  // scheme://Authority(), without a path.
  std::string Origin() const;
};

// A Url, or why there is none.
struct UrlResult {
  std::optional<Url> url;
  std::string error;  // libcurl's reason ("Bad hostname", ...) when url is empty.

  explicit operator bool() const { return url.has_value(); }
};

struct UrlOptions {
  // Any scheme (socks5://, ...), not only those this libcurl has a protocol for.
  bool any_scheme = false;
  // When the text does not parse as an absolute URL, it is read again as default_scheme://text,
  // as Go reads a proxy variable ("proxy:3128" is http://proxy:3128). Empty: no second reading.
  std::string_view default_scheme;
};

// `text` split as libcurl reads it. Refused: no scheme (unless options.default_scheme), a scheme
// libcurl does not speak (unless options.any_scheme), no host, a malformed host or IPv6 literal,
// a port past 65535, whitespace or control characters, a NUL byte, input over libcurl's limit
// (8,000,000 bytes).
UrlResult ParseUrl(std::string_view text, const UrlOptions& options = {});

// scheme://host:port built through libcurl, which checks each part. An IPv6 literal may come with
// or without brackets (a host with a ':' gets them, as Go's net.JoinHostPort does); `port` is
// decimal, 1-65535.
UrlResult MakeUrl(std::string_view scheme, std::string_view host, std::string_view port);

// `text` without its userinfo (user, password and options), for logs and messages: secrets never
// reach them. Text in which libcurl finds no userinfo comes back unchanged; otherwise libcurl's
// form of the URL without it. A text without a scheme is read as http://text when it is all
// authority ("user:pw@proxy:3128" comes back as "http://proxy:3128/"). Anything else libcurl
// cannot read comes back as a placeholder, never as itself.
std::string RedactUrl(std::string_view text);

}  // namespace berth::util

#endif  // BERTH_PKG_UTIL_URL_H_
