// The hand-written parser is checked against nlohmann/json's own SAX parser: both drive a handler
// that records every event, and the recordings must be identical, on generated documents and on
// malformed input (which both must reject).

#include "pkg/api/json_sax.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "test/testing/random_json.h"

namespace berth::api {
namespace {

using json = nlohmann::json;

class Recorder {
 public:
  // Values under a key in `skipped_keys` are skipped (this parser) or ignored (nlohmann).
  explicit Recorder(std::vector<std::string> skipped_keys = {})
      : skipped_keys_(std::move(skipped_keys)) {}

  bool null() { return Add("null"); }
  bool boolean(bool v) { return Add(v ? "true" : "false"); }
  bool number_integer(json::number_integer_t v) { return Add("i:" + std::to_string(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Add("u:" + std::to_string(v)); }
  bool number_float(json::number_float_t v, const std::string& raw) {
    return Add("f:" + json(v).dump() + ":" + raw);
  }
  bool string(std::string& v) { return Add("s:" + v); }
  bool binary(json::binary_t&) { return Add("binary"); }
  bool start_object(std::size_t) { return Add("{"); }
  bool key(std::string& k) {
    skip_next_ = std::find(skipped_keys_.begin(), skipped_keys_.end(), k) != skipped_keys_.end();
    return Add("k:" + k);
  }
  bool end_object() { return Add("}"); }
  bool start_array(std::size_t) { return Add("["); }
  bool end_array() { return Add("]"); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    failed_ = true;
    return false;
  }
  bool SkipNextValue() {
    const bool skip = skip_next_;
    skip_next_ = false;
    if (skip) events.push_back("skipped");
    return skip;
  }

  std::vector<std::string> events;
  bool failed_ = false;

 private:
  bool Add(std::string e) {
    events.push_back(std::move(e));
    return true;
  }
  std::vector<std::string> skipped_keys_;
  bool skip_next_ = false;
};

std::vector<std::string> Ours(const std::string& text) {
  Recorder r;
  JsonSaxParser(text, "test").Parse(&r);
  return r.events;
}

std::vector<std::string> Theirs(const std::string& text, bool* failed) {
  Recorder r;
  json::sax_parse(text, &r);
  *failed = r.failed_;
  return r.events;
}

TEST(JsonSaxParser, MatchesNlohmannOnGeneratedDocuments) {
  std::mt19937_64 rng(20261123);
  for (int i = 0; i < 2000; i++) {
    const json doc = RandomJsonValue(rng, 0);
    // Pretty and compact, and with escapes for every non-ASCII character.
    for (const std::string& text : {doc.dump(), doc.dump(2), doc.dump(-1, ' ', true)}) {
      bool failed = false;
      const auto expected = Theirs(text, &failed);
      ASSERT_FALSE(failed) << text;
      ASSERT_EQ(Ours(text), expected) << text;
    }
  }
}

TEST(JsonSaxParser, MatchesNlohmannOnNumberAndEscapeEdges) {
  for (const char* text :
       {"0", "-0", "18446744073709551615", "18446744073709551616", "-9223372036854775808",
        "-9223372036854775809", "1.5e3", "1E-2", "-0.0", "1e-400", "4.9e-324",
        "123456789012345678901234567890", R"("\u00e9\ud83d\ude00\u0000\/")", R"(["\b\f\n\r\t"])",
        " \t\r\n[ 1 , {} , [ ] ] \n"}) {
    bool failed = false;
    const auto expected = Theirs(text, &failed);
    ASSERT_FALSE(failed) << text;
    EXPECT_EQ(Ours(text), expected) << text;
  }
}

TEST(JsonSaxParser, RejectsWhatNlohmannRejects) {
  for (const char* text : {"",
                           " ",
                           "{",
                           "[1,]",
                           "{\"a\":1,}",
                           "{\"a\" 1}",
                           "{1:2}",
                           "[1 2]",
                           "01",
                           "1.",
                           "1e",
                           "-",
                           "+1",
                           ".5",
                           "tru",
                           "nul",
                           "\"abc",
                           "\"\\x\"",
                           "\"\\u12\"",
                           "\"\\ud800\"",
                           "\"\\udc00\"",
                           "\"\x01\"",
                           "\"\xff\"",
                           "\"\xc0\x80\"",
                           "\"\xed\xa0\x80\"",
                           "[1]]",
                           "{} {}",
                           "[\"a\"}",
                           "{\"a\":}",
                           "1e400"}) {
    bool failed = false;
    Theirs(text, &failed);
    ASSERT_TRUE(failed) << "nlohmann accepts " << text;
    EXPECT_THROW(Ours(text), DecodeError) << text;
  }
}

TEST(JsonSaxParser, SkippedValuesAreNotDecodedButMustBeClosed) {
  Recorder r({"drop"});
  JsonSaxParser(R"({"drop": {"x": ["}", "\"]", 1, {"y": null}]}, "keep": [1, "two"], "drop": 7})",
                "test")
      .Parse(&r);
  EXPECT_EQ(r.events, (std::vector<std::string>{"{", "k:drop", "skipped", "k:keep", "[", "u:1",
                                                "s:two", "]", "k:drop", "skipped", "}"}));

  // A skipped scalar ends where structure starts: the quote after 7 opens a string, which is
  // not where a value may be (found by the list fuzz target, corpus list/crash-skipped-scalar).
  for (const char* text :
       {R"({"drop": {"x": [1}})", R"({"drop": "open)", R"({"drop": })", R"({"drop": [[[]]})",
        R"({"drop": 7"})", R"({"drop": 7{"a": 1}})", R"({"drop": 7[1]})", R"({"drop": 7:8})"}) {
    Recorder skipping({"drop"});
    EXPECT_THROW(JsonSaxParser(text, "test").Parse(&skipping), DecodeError) << text;
  }
}

TEST(JsonSaxParser, ErrorNamesWhatAndWhere) {
  Recorder r;
  try {
    JsonSaxParser(R"({"a": [1, 2,]})", "pod list").Parse(&r);
    FAIL() << "no error";
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.field(), "pod list");
    EXPECT_NE(std::string(e.what()).find("at byte 12"), std::string::npos) << e.what();
  }
}

TEST(JsonSaxParser, DeepNestingIsAnErrorNotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Recorder r;
  EXPECT_THROW(JsonSaxParser(deep, "test").Parse(&r), DecodeError);
  Recorder skipping({"drop"});
  EXPECT_THROW(JsonSaxParser("{\"drop\": " + deep + "}", "test").Parse(&skipping), DecodeError);
}

}  // namespace
}  // namespace berth::api
