#include "pkg/util/url.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <memory>

namespace berth::util {
namespace {

// Shown instead of a text libcurl cannot read: it may hold a secret in a place no parser finds.
constexpr char kUnreadable[] = "<a URL libcurl cannot read>";

struct UrlCleanup {
  void operator()(CURLU* handle) const { curl_url_cleanup(handle); }
};
using UrlHandle = std::unique_ptr<CURLU, UrlCleanup>;

struct CurlFree {
  void operator()(char* text) const { curl_free(text); }
};

// A handle holding `text`, or libcurl's reason for refusing it.
struct Parsed {
  UrlHandle handle;
  std::string error;
};

Parsed Parse(const std::string& text, unsigned int flags) {
  // libcurl reads a C string: past a NUL it would see a shorter URL than the caller holds.
  if (text.find('\0') != std::string::npos) return {nullptr, "NUL byte in the URL"};
  UrlHandle handle(curl_url());
  if (handle == nullptr) return {nullptr, "out of memory"};
  const CURLUcode code = curl_url_set(handle.get(), CURLUPART_URL, text.c_str(), flags);
  if (code != CURLUE_OK) return {nullptr, curl_url_strerror(code)};
  return {std::move(handle), ""};
}

// One part of the URL in `handle`; nullopt when the URL has none.
std::optional<std::string> Part(CURLU* handle, CURLUPart part, unsigned int flags = 0) {
  char* raw = nullptr;
  if (curl_url_get(handle, part, &raw, flags) != CURLUE_OK || raw == nullptr) return std::nullopt;
  const std::unique_ptr<char, CurlFree> owned(raw);
  return std::string(raw);
}

std::optional<uint16_t> PortNumber(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  uint16_t port = 0;
  const char* end = text->data() + text->size();
  const auto parsed = std::from_chars(text->data(), end, port);
  if (parsed.ec != std::errc() || parsed.ptr != end) return std::nullopt;
  return port;
}

Url Split(CURLU* handle) {
  Url url;
  url.scheme = Part(handle, CURLUPART_SCHEME).value_or("");
  std::transform(url.scheme.begin(), url.scheme.end(), url.scheme.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  url.has_password = Part(handle, CURLUPART_PASSWORD).has_value();
  url.has_user = url.has_password || Part(handle, CURLUPART_USER).has_value() ||
                 Part(handle, CURLUPART_OPTIONS).has_value();

  // libcurl gives an IPv6 literal in brackets and its zone apart.
  url.host = Part(handle, CURLUPART_HOST).value_or("");
  url.authority_host = url.host;
  const bool ipv6 = url.host.size() >= 2 && url.host.front() == '[' && url.host.back() == ']';
  if (ipv6) url.host = url.host.substr(1, url.host.size() - 2);
  if (const std::optional<std::string> zone = Part(handle, CURLUPART_ZONEID); ipv6 && zone) {
    url.host += "%" + *zone;
    url.authority_host.insert(url.authority_host.size() - 1, "%25" + *zone);
  }

  const std::optional<uint16_t> explicit_port = PortNumber(Part(handle, CURLUPART_PORT));
  url.explicit_port = explicit_port.has_value();
  url.port = explicit_port
                 ? *explicit_port
                 : PortNumber(Part(handle, CURLUPART_PORT, CURLU_DEFAULT_PORT)).value_or(0);

  url.path = Part(handle, CURLUPART_PATH).value_or("/");
  const std::optional<std::string> query = Part(handle, CURLUPART_QUERY);
  url.has_query = query.has_value();
  url.query = query.value_or("");
  url.has_fragment = Part(handle, CURLUPART_FRAGMENT).has_value();
  url.text = Part(handle, CURLUPART_URL).value_or("");
  // libcurl writes a "/" path when the URL has none.
  if (url.path == "/" && !url.has_query && !url.has_fragment && !url.text.empty() &&
      url.text.back() == '/') {
    url.text.pop_back();
  }
  return url;
}

}  // namespace

std::string Url::Authority() const {
  return explicit_port ? authority_host + ":" + std::to_string(port) : authority_host;
}

std::string Url::Origin() const { return scheme + "://" + Authority(); }

UrlResult ParseUrl(std::string_view text, const UrlOptions& options) {
  // As written: a path's "." and ".." segments are the caller's to judge, not to be resolved.
  unsigned int flags = CURLU_PATH_AS_IS;
  if (options.any_scheme) flags |= CURLU_NON_SUPPORT_SCHEME;
  Parsed parsed = Parse(std::string(text), flags);
  if (parsed.handle == nullptr && !options.default_scheme.empty()) {
    Parsed again = Parse(std::string(options.default_scheme) + "://" + std::string(text), flags);
    // As Go's proxy reading does, a failed second reading reports the first one's reason.
    if (again.handle != nullptr) parsed = std::move(again);
  }
  if (parsed.handle == nullptr) return {std::nullopt, std::move(parsed.error)};
  return {Split(parsed.handle.get()), ""};
}

UrlResult MakeUrl(std::string_view scheme, std::string_view host, std::string_view port) {
  for (const std::string_view part : {scheme, host, port}) {
    if (part.find('\0') != std::string_view::npos) return {std::nullopt, "NUL byte in the URL"};
  }
  UrlHandle handle(curl_url());
  if (handle == nullptr) return {std::nullopt, "out of memory"};
  std::string bracketed(host);
  if (!bracketed.empty() && bracketed.front() != '[' && bracketed.find(':') != std::string::npos) {
    bracketed = "[" + bracketed + "]";
  }
  const std::string scheme_text(scheme);
  const std::string port_text(port);
  const struct {
    CURLUPart part;
    const std::string& value;
    const char* name;
  } steps[] = {{CURLUPART_SCHEME, scheme_text, "scheme"},
               {CURLUPART_HOST, bracketed, "host"},
               {CURLUPART_PORT, port_text, "port"}};
  for (const auto& step : steps) {
    const CURLUcode code = curl_url_set(handle.get(), step.part, step.value.c_str(), 0);
    if (code != CURLUE_OK) {
      return {std::nullopt,
              std::string(step.name) + " \"" + step.value + "\": " + curl_url_strerror(code)};
    }
  }
  // Read back as any URL is, so that what it holds is exactly what ParseUrl would find.
  const std::optional<std::string> text = Part(handle.get(), CURLUPART_URL);
  if (!text) return {std::nullopt, "host \"" + bracketed + "\": No host part in the URL"};
  return ParseUrl(*text);
}

std::string RedactUrl(std::string_view text) {
  const unsigned int flags = CURLU_NON_SUPPORT_SCHEME | CURLU_PATH_AS_IS;
  Parsed parsed = Parse(std::string(text), flags);
  bool prefixed = false;
  if (parsed.handle == nullptr) {
    parsed = Parse("http://" + std::string(text), flags);
    prefixed = true;
  }
  if (parsed.handle == nullptr) return kUnreadable;
  CURLU* handle = parsed.handle.get();
  const Url url = Split(handle);
  // Read as http://, a text is only trusted when all of it went into the authority: otherwise
  // ("http://http://u:p@ss@h") the secret lands in a path that no one would redact.
  if (prefixed && (url.path != "/" || url.has_query || url.has_fragment)) return kUnreadable;
  if (!url.has_user) return std::string(text);
  for (const CURLUPart part : {CURLUPART_USER, CURLUPART_PASSWORD, CURLUPART_OPTIONS}) {
    if (curl_url_set(handle, part, nullptr, 0) != CURLUE_OK) return kUnreadable;
  }
  return Part(handle, CURLUPART_URL).value_or(kUnreadable);
}

}  // namespace berth::util
