// Which proxy a client goes through (pkg/client's ProxyFor): the kubeconfig's proxy-url, or the
// environment's HTTPS_PROXY / HTTP_PROXY minus NO_PROXY (hosts, domains, IP addresses, CIDRs,
// ports). The input is five lines: the server's host, its port, the proxy-url, the proxy variable
// and NO_PROXY; the first byte picks https (bit 0) and lower-case variable names (bit 1). An
// answer is empty or a URL libcurl takes; a malformed proxy is a ConfigError; and the redacted
// form of any URL shows no user info.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/client/curl_transport.h"
#include "pkg/client/proxy.h"
#include "test/fuzz/fuzz.h"

namespace berth::fuzz {
namespace {

std::vector<std::string> Lines(std::string_view text, size_t count) {
  std::vector<std::string> lines;
  while (lines.size() + 1 < count) {
    const size_t end = text.find('\n');
    if (end == std::string_view::npos) break;
    lines.emplace_back(text.substr(0, end));
    text.remove_prefix(end + 1);
  }
  lines.emplace_back(text);
  lines.resize(count);
  return lines;
}

void CheckRedacted(const std::string& url) {
  const std::string redacted = client::internal::RedactProxyUrl(url);
  const size_t scheme_end = redacted.find("://");
  const size_t begin = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const size_t end = redacted.find_first_of("/?#", begin);
  const std::string_view authority =
      std::string_view(redacted).substr(begin, end == std::string::npos ? end : end - begin);
  Require(authority.find('@') == std::string_view::npos, "a redacted URL keeps no user info",
          redacted);
}

}  // namespace

void FuzzOneInput(std::string_view input) {
  if (input.empty()) return;
  const bool tls = (input.front() & 1) != 0;
  const bool lower = (input.front() & 2) != 0;
  const std::vector<std::string> lines = Lines(input.substr(1), 5);
  client::internal::Endpoint endpoint;
  endpoint.tls = tls;
  endpoint.host = lines[0];
  endpoint.port = lines[1];
  const client::internal::EnvLookup env = [&](const char* name) -> std::string {
    const std::string variable(name);
    const bool is_lower = variable.front() >= 'a' && variable.front() <= 'z';
    if (is_lower != lower) return "";
    if (variable == "NO_PROXY" || variable == "no_proxy") return lines[4];
    return lines[3];
  };
  for (const std::string& proxy_url : {lines[2], std::string()}) {
    try {
      const std::string proxy = client::internal::ProxyFor(endpoint, proxy_url, env);
      Require(proxy.empty() || proxy.find("://") != std::string::npos,
              "a proxy is a URL with a scheme", proxy);
    } catch (const client::ConfigError&) {
    }
  }
  CheckRedacted(lines[2]);
  CheckRedacted(lines[3]);
}

}  // namespace berth::fuzz
