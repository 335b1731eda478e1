#include "pkg/util/base64.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace berth::util {
namespace {

TEST(Base64Test, EncodesWithPadding) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"h", "aA=="},
      {"he", "aGU="},
      {"hel", "aGVs"},
      {"hello", "aGVsbG8="},
      {"hello!", "aGVsbG8h"},
      {"\xFB\xFF", "+/8="},  // the two symbols past the letters and digits
      {std::string("\0\0\0", 3), "AAAA"},
  };
  for (const auto& [bytes, text] : cases) {
    EXPECT_EQ(Base64Encode(bytes), text) << text;
    EXPECT_EQ(Base64Decode(text), bytes) << text;
  }
}

TEST(Base64Test, RoundTripsEveryByteAndLength) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (size_t n = 0; n <= bytes.size(); ++n) {
    const std::string prefix = bytes.substr(0, n);
    const std::string text = Base64Encode(prefix);
    EXPECT_EQ(text.size(), (n + 2) / 3 * 4);
    EXPECT_EQ(Base64Decode(text), prefix) << n;
  }
  // Larger than one OpenSSL piece (3 MiB in, 4 MiB out), so the pieces join without a seam.
  std::string large(3 * (1 << 20) + 7, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 131 % 251);
  EXPECT_EQ(Base64Decode(Base64Encode(large)), large);
}

// As Go's StdEncoding: line breaks are skipped anywhere, other whitespace is refused. The
// kubeconfig copy this replaces skipped spaces and tabs as well, which client-go refuses.
TEST(Base64Test, SkipsLineBreaksButNotOtherWhitespace) {
  EXPECT_EQ(Base64Decode("aGVs\nbG8h"), "hello!");
  EXPECT_EQ(Base64Decode("aGVs\r\nbG8h\r\n"), "hello!");
  EXPECT_EQ(Base64Decode("\naGVsbG8=\n"), "hello");
  EXPECT_EQ(Base64Decode("aGVsbG8=\n"), "hello");
  EXPECT_EQ(Base64Decode("aA=\n="), "h");
  EXPECT_EQ(Base64Decode("aGVs bG8h"), std::nullopt);
  EXPECT_EQ(Base64Decode("aGVs\tbG8h"), std::nullopt);
  EXPECT_EQ(Base64Decode(" aGVsbG8h"), std::nullopt);
  EXPECT_EQ(Base64Decode("aGVsbG8h "), std::nullopt);
}

TEST(Base64Test, PaddingIsRequiredAndOnlyAtTheEnd) {
  for (const char* text : {
           "aGVsbG8",       // missing padding
           "aA",            // missing padding
           "aA=",           // half the padding
           "a",             // one character
           "A===",          // three '='
           "====",          // padding only
           "=aGV",          // padding first
           "aG=s",          // padding inside a quantum
           "aA==aGVs",      // data after padding
           "aGVsbG8=aGVs",  // data after padding
       }) {
    EXPECT_EQ(Base64Decode(text), std::nullopt) << text;
  }
}

TEST(Base64Test, RefusesCharactersOutsideTheStandardAlphabet) {
  for (const char* text : {
           "aGV$bG8=",  // not base64 at all
           "aGV-bG8=",  // the URL-safe alphabet's 62
           "aGV_bG8=",  // and its 63
           "aGV.bG8=",
           "aGVs\x80G8=",
           "!!notbase64",
       }) {
    EXPECT_EQ(Base64Decode(text), std::nullopt) << text;
  }
  EXPECT_EQ(Base64Decode(std::string("aGVs\0G8=", 8)), std::nullopt);
}

// Go's StdEncoding is not Strict(): the unused low bits of the last character are ignored
// rather than refused, so "YR==" reads as "a" the way client-go reads it. The kubeconfig copy
// this replaces refused it.
TEST(Base64Test, IgnoresTheUnusedBitsOfTheLastCharacterAsGoDoes) {
  EXPECT_EQ(Base64Decode("YR=="), "a");
  EXPECT_EQ(Base64Decode("YWJ="), "ab");
  EXPECT_EQ(Base64Decode("YQ=="), "a");
}

}  // namespace
}  // namespace berth::util
