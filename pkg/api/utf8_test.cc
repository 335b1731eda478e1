#include "pkg/api/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace berth::api {
namespace {

TEST(ValidUtf8Test, KeepsWellFormedTextAndReplacesEachStrayByteWithU_FFFD) {
  EXPECT_EQ(ValidUtf8(""), "");
  EXPECT_EQ(ValidUtf8("/metrics"), "/metrics");
  EXPECT_EQ(ValidUtf8("\xC3\xA9l\xC3\xA8ve \xF0\x9F\x90\xB3"),
            "\xC3\xA9l\xC3\xA8ve \xF0\x9F\x90\xB3");
  const std::string kReplacement = "\xEF\xBF\xBD";
  EXPECT_EQ(ValidUtf8("/m\xFF"), "/m" + kReplacement);
  // A truncated sequence, an overlong form, a surrogate and a code point above U+10FFFF: one
  // U+FFFD per byte, as Go's encoding/json writes them.
  EXPECT_EQ(ValidUtf8("\xD8x"), kReplacement + "x");
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), kReplacement + kReplacement);
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80"),
            kReplacement + kReplacement + kReplacement + kReplacement);
  for (const char* text : {"/m\xFF", "\xD8x", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"}) {
    EXPECT_FALSE(IsValidUtf8(text)) << text;
    EXPECT_TRUE(IsValidUtf8(ValidUtf8(text))) << text;
  }
}

}  // namespace
}  // namespace berth::api
