#include "pkg/util/url.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace berth::util {
namespace {

const UrlOptions kAnyScheme = {.any_scheme = true, .default_scheme = ""};

// The URL `text` splits into; fails the test when it does not parse.
Url Parsed(const std::string& text, const UrlOptions& options = {}) {
  const UrlResult result = ParseUrl(text, options);
  EXPECT_TRUE(result) << text << ": " << result.error;
  return result.url.value_or(Url{});
}

TEST(ParseUrlTest, SplitsEveryPart) {
  const Url url = Parsed("HTTPS://admin:pw@Api.Example:6443/api/v1?watch=1#top");
  EXPECT_EQ(url.scheme, "https");
  EXPECT_TRUE(url.has_user);
  EXPECT_TRUE(url.has_password);
  EXPECT_EQ(url.host, "Api.Example");
  EXPECT_EQ(url.authority_host, "Api.Example");
  EXPECT_EQ(url.port, 6443);
  EXPECT_TRUE(url.explicit_port);
  EXPECT_EQ(url.path, "/api/v1");
  EXPECT_TRUE(url.has_query);
  EXPECT_EQ(url.query, "watch=1");
  EXPECT_TRUE(url.has_fragment);
  EXPECT_EQ(url.Authority(), "Api.Example:6443");
  EXPECT_EQ(url.Origin(), "https://Api.Example:6443");
  EXPECT_EQ(url.text, "https://admin:pw@Api.Example:6443/api/v1?watch=1#top");
  EXPECT_EQ(Parsed("HTTP://h:1/").text, "http://h:1");
}

TEST(ParseUrlTest, DefaultPorts) {
  EXPECT_EQ(Parsed("https://h").port, 443);
  EXPECT_EQ(Parsed("http://h").port, 80);
  EXPECT_EQ(Parsed("https://h:").port, 443);  // An empty port is none.
  EXPECT_FALSE(Parsed("https://h").explicit_port);
  EXPECT_EQ(Parsed("https://h").Authority(), "h");
  // An explicit default port stays explicit.
  EXPECT_TRUE(Parsed("https://h:443").explicit_port);
  EXPECT_EQ(Parsed("https://h:443").Authority(), "h:443");
  // A scheme libcurl has no protocol for has no default.
  EXPECT_EQ(Parsed("socks5://h", kAnyScheme).port, 0);
  EXPECT_EQ(Parsed("socks5://h:1080", kAnyScheme).port, 1080);
  EXPECT_EQ(Parsed("https://h/").path, "/");
  EXPECT_EQ(Parsed("https://h").path, "/");
  EXPECT_FALSE(Parsed("https://h").has_query);
  EXPECT_TRUE(Parsed("https://h?").has_query);
}

TEST(ParseUrlTest, Ipv6Literals) {
  const Url with_port = Parsed("https://[fd00::1]:6443");
  EXPECT_EQ(with_port.host, "fd00::1");
  EXPECT_EQ(with_port.authority_host, "[fd00::1]");
  EXPECT_EQ(with_port.port, 6443);
  EXPECT_EQ(with_port.Authority(), "[fd00::1]:6443");

  const Url without_port = Parsed("http://[::1]");
  EXPECT_EQ(without_port.host, "::1");
  EXPECT_EQ(without_port.port, 80);
  EXPECT_EQ(without_port.Origin(), "http://[::1]");

  const Url zoned = Parsed("https://[fe80::1%25eth0]:6443");
  EXPECT_EQ(zoned.host, "fe80::1%eth0");
  EXPECT_EQ(zoned.authority_host, "[fe80::1%25eth0]");

  EXPECT_FALSE(ParseUrl("https://[::1"));
  EXPECT_FALSE(ParseUrl("https://[zzz]:1"));
  EXPECT_FALSE(ParseUrl("https://::1:6443"));
}

TEST(ParseUrlTest, UserinfoWithSpecialCharacters) {
  const Url encoded = Parsed("http://us%40er:p%3Aw%2F@proxy:3128");
  EXPECT_TRUE(encoded.has_user);
  EXPECT_TRUE(encoded.has_password);
  EXPECT_EQ(encoded.host, "proxy");
  EXPECT_EQ(encoded.port, 3128);
  EXPECT_TRUE(Parsed("http://user@h").has_user);
  EXPECT_FALSE(Parsed("http://user@h").has_password);
  EXPECT_TRUE(Parsed("http://:pw@h").has_user);
  EXPECT_TRUE(Parsed("http://@h").has_user);
  EXPECT_FALSE(Parsed("http://h").has_user);
  // A second, unencoded '@' leaves a host libcurl refuses (Go would split at the last one).
  EXPECT_FALSE(ParseUrl("http://user:p@ss@proxy:3128"));
}

TEST(ParseUrlTest, PercentEncoding) {
  // The host is decoded; the path and query are kept as written.
  const Url url = Parsed("https://h%41st/a%2Fb/../c?q=%20");
  EXPECT_EQ(url.host, "hAst");
  EXPECT_EQ(url.path, "/a%2Fb/../c");
  EXPECT_EQ(url.query, "q=%20");
  EXPECT_FALSE(ParseUrl("https://h%00st"));
}

TEST(ParseUrlTest, MissingScheme) {
  const UrlResult result = ParseUrl("proxy.corp:3128");
  ASSERT_FALSE(result);
  EXPECT_FALSE(result.error.empty());
  EXPECT_FALSE(ParseUrl("//h:1"));
  EXPECT_FALSE(ParseUrl("h"));

  // A default scheme reads it again, as Go reads a proxy variable.
  const Url url = Parsed("proxy.corp:3128", {.any_scheme = true, .default_scheme = "http"});
  EXPECT_EQ(url.scheme, "http");
  EXPECT_EQ(url.host, "proxy.corp");
  EXPECT_EQ(url.port, 3128);
  EXPECT_EQ(Parsed("u:p@[::1]:3128", {.default_scheme = "http"}).host, "::1");
  // A URL that parses keeps its own scheme.
  EXPECT_EQ(Parsed("socks5://p:1", {.any_scheme = true, .default_scheme = "http"}).scheme,
            "socks5");
}

TEST(ParseUrlTest, SchemesLibcurlLacksNeedAnyScheme) {
  EXPECT_FALSE(ParseUrl("socks5://p:1080"));
  EXPECT_FALSE(ParseUrl("bogus://h"));
  EXPECT_EQ(Parsed("bogus://h", kAnyScheme).scheme, "bogus");
}

TEST(ParseUrlTest, Garbage) {
  for (const std::string& text : std::vector<std::string>{
           "", "https://", "https://:6443", "http://a b", "https://h:99999", "https://h:-1",
           "https://h:+80", "https://h:x", "https://h\r\n", "::::", "https://[]", "\x01\x02",
           std::string("https://h\0@evil", 15)}) {
    const UrlResult result = ParseUrl(text);
    EXPECT_FALSE(result) << text;
    EXPECT_FALSE(result.error.empty()) << text;
  }
}

TEST(ParseUrlTest, OverLongInput) {
  std::string huge = "https://h/";
  huge.resize(9'000'000, 'a');  // Past libcurl's 8,000,000 bytes.
  const UrlResult result = ParseUrl(huge);
  EXPECT_FALSE(result);
  EXPECT_FALSE(result.error.empty());
  // Long, within libcurl's limit.
  EXPECT_EQ(Parsed("https://h/" + std::string(100'000, 'a')).path.size(), 100'001u);
}

TEST(MakeUrlTest, BuildsAndChecksEachPart) {
  const UrlResult v4 = MakeUrl("https", "10.96.0.1", "443");
  ASSERT_TRUE(v4) << v4.error;
  EXPECT_EQ(v4.url->Origin(), "https://10.96.0.1:443");

  const UrlResult v6 = MakeUrl("https", "fd00::1", "6443");
  ASSERT_TRUE(v6) << v6.error;
  EXPECT_EQ(v6.url->Origin(), "https://[fd00::1]:6443");
  EXPECT_EQ(v6.url->host, "fd00::1");
  EXPECT_EQ(MakeUrl("https", "[fd00::1]", "6443").url->Origin(), "https://[fd00::1]:6443");
  // What ParseUrl gives as a zoned host goes back in.
  const UrlResult zoned = MakeUrl("https", "fe80::1%eth0", "6443");
  ASSERT_TRUE(zoned) << zoned.error;
  EXPECT_EQ(zoned.url->Origin(), "https://[fe80::1%25eth0]:6443");

  for (const auto& [host, port] :
       std::initializer_list<std::pair<const char*, const char*>>{{"", "443"},
                                                                  {"a b", "443"},
                                                                  {"h/x", "443"},
                                                                  {"h@x", "443"},
                                                                  {"h?x", "443"},
                                                                  {"fd00::zz", "443"},
                                                                  {"h", ""},
                                                                  {"h", "0"},
                                                                  {"h", "99999"},
                                                                  {"h", "https"}}) {
    const UrlResult result = MakeUrl("https", host, port);
    EXPECT_FALSE(result) << host << " " << port;
    EXPECT_FALSE(result.error.empty()) << host << " " << port;
  }
}

TEST(RedactUrlTest, RemovesUserinfo) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"http://user:pw@proxy:3128/x", "http://proxy:3128/x"},
      {"https://admin:pw@10.0.0.1:6443/", "https://10.0.0.1:6443/"},
      {"socks5://u:p%40ss@[::1]:1080", "socks5://[::1]:1080/"},
      {"http://user@h/a/../b?q", "http://h/a/../b?q"},
      // Nothing to remove: unchanged, as written.
      {"http://proxy:3128", "http://proxy:3128"},
      {"proxy:3128", "proxy:3128"},
      // Without a scheme it is read as http://.
      {"user:pw@proxy:3128", "http://proxy:3128/"},
  };
  for (const auto& [text, shown] : cases) EXPECT_EQ(RedactUrl(text), shown) << text;
}

TEST(RedactUrlTest, UnreadableTextIsNeverShown) {
  for (const std::string& text :
       std::vector<std::string>{"http://user:p@ss@proxy:3128", "http://u:secret@a b",
                                std::string("http://u:secret@h\0x", 19)}) {
    const std::string shown = RedactUrl(text);
    EXPECT_EQ(shown.find("secret"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("ss@"), std::string::npos) << shown;
  }
}

}  // namespace
}  // namespace berth::util
