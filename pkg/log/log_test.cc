#include "pkg/log/log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace berth::log {
namespace {

TEST(LogTest, TextRendersFieldsAsKeyValuePairs) {
  std::string line =
      Render(Format::kText, "2026-01-02T03:04:05.000006Z", spdlog::level::debug,
             Encode("pod bound", {{"pod", "default/web-1"}, {"node", "n1"}, {"plugin", ""}}));
  EXPECT_EQ(line, "2026-01-02T03:04:05.000006Z D pod bound pod=default/web-1 node=n1 plugin=\"\"");
}

TEST(LogTest, TextQuotesValuesWithSpaces) {
  std::string line = Render(Format::kText, "t", spdlog::level::err,
                            Encode("failed", {{"reason", "0/3 nodes are available"}}));
  EXPECT_EQ(line, "t E failed reason=\"0/3 nodes are available\"");
}

TEST(LogTest, JsonIsOneValidObjectWithFieldsAsMembers) {
  std::string line = Render(
      Format::kJson, "2026-01-02T03:04:05.000006Z", spdlog::level::debug,
      Encode("scheduled \"quoted\"\nline", {{"pod", "ns/p"}, {"node", "n1"}, {"profile", "b"}}));
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], "scheduled \"quoted\"\nline");
  EXPECT_EQ(j["level"], "debug");
  EXPECT_EQ(j["v"], 2);
  EXPECT_EQ(j["pod"], "ns/p");
  EXPECT_EQ(j["node"], "n1");
  EXPECT_EQ(j["profile"], "b");
  EXPECT_EQ(j["ts"], "2026-01-02T03:04:05.000006Z");
}

TEST(LogTest, JsonEscapesControlCharactersInPlainMessages) {
  // A plain spdlog message (no fields) that happens to contain a tab and a quote.
  auto j = nlohmann::json::parse(Render(Format::kJson, "t", spdlog::level::info, "a\t\"b\""));
  EXPECT_EQ(j["msg"], "a\t\"b\"");
  EXPECT_EQ(j["v"], 0);
  EXPECT_EQ(j.size(), 4u);
}

// What an unauthenticated client gets into a field by requesting /x%1Euser%1Fadmin.
constexpr char kForgedPath[] =
    "/x\x1euser\x1f"
    "admin";

TEST(LogTest, SeparatorsInAValueCannotAddAField) {
  const std::string payload = Encode("invalid bearer token", {{"path", kForgedPath}});
  auto j = nlohmann::json::parse(Render(Format::kJson, "t", spdlog::level::trace, payload));
  EXPECT_EQ(j["path"], kForgedPath);
  EXPECT_FALSE(j.contains("user"));
  EXPECT_EQ(j.size(), 5u);
  EXPECT_EQ(Render(Format::kText, "t", spdlog::level::trace, payload),
            "t T invalid bearer token path=\"/x\\u001euser\\u001fadmin\"");
}

TEST(LogTest, SeparatorsInTheMessageOrAKeyCannotAddAField) {
  const std::string payload = Encode(
      "a\x1euser\x1f"
      "admin",
      {{"k\x1ex\x1fy", "v"}, {"n", "1"}});
  auto j = nlohmann::json::parse(Render(Format::kJson, "t", spdlog::level::info, payload));
  EXPECT_EQ(j["msg"],
            "a\x1euser\x1f"
            "admin");
  EXPECT_EQ(j["k\x1ex\x1fy"], "v");
  EXPECT_EQ(j["n"], "1");
  EXPECT_EQ(j.size(), 6u);
  EXPECT_EQ(Render(Format::kText, "t", spdlog::level::info, payload),
            "t I a\\u001euser\\u001fadmin \"k\\u001ex\\u001fy\"=v n=1");
}

TEST(LogTest, TheEscapeByteItselfSurvives) {
  // 0x1c is how Encode escapes; as data, and next to what it escapes, it comes back unchanged.
  for (const std::string value : {"\x1c", "\x1c^", "\x1c\x1c_", "a\x1c\x1e", "\x1c\\"}) {
    auto j = nlohmann::json::parse(Render(Format::kJson, "t", spdlog::level::info,
                                          Encode("m", {{"value", value}, {"w", "2"}})));
    EXPECT_EQ(j["value"], value);
    EXPECT_EQ(j["w"], "2");
    EXPECT_EQ(j.size(), 6u);
  }
}

TEST(LogTest, ControlCharactersNeverEndTheLine) {
  const std::string payload = Encode("line\nforged I fake", {{"path", "/a\r\nb\x7f"}});
  EXPECT_EQ(Render(Format::kText, "t", spdlog::level::info, payload),
            "t I line\\nforged I fake path=\"/a\\r\\nb\x7f\"");
}

TEST(LogTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  const std::string payload = Encode("m\xff", {{"path", "/\xc3("}, {"ok", "caf\xc3\xa9"}});
  auto j = nlohmann::json::parse(Render(Format::kJson, "t", spdlog::level::info, payload));
  EXPECT_EQ(j["msg"], "m\xef\xbf\xbd");
  EXPECT_EQ(j["path"], "/\xef\xbf\xbd(");
  EXPECT_EQ(j["ok"], "caf\xc3\xa9");
  // Quoted in text: a bare word always means exactly its bytes.
  EXPECT_EQ(Render(Format::kText, "t", spdlog::level::info, payload),
            "t I m\xef\xbf\xbd path=\"/\xef\xbf\xbd(\" ok=caf\xc3\xa9");
}

TEST(LogTest, PlainSpdlogMessagesAreAllMessage) {
  auto j = nlohmann::json::parse(Render(Format::kJson, "t", spdlog::level::info,
                                        "watch failed: \x1euser\x1f"
                                        "admin",
                                        false));
  EXPECT_EQ(j["msg"],
            "watch failed: \x1euser\x1f"
            "admin");
  EXPECT_EQ(j.size(), 4u);
}

TEST(LogTest, RecordsThroughTheInstalledLoggerKeepTheirFields) {
  std::ostringstream out;
  log::Setup(Format::kJson, 0, std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  Info("invalid bearer token", {{"path", kForgedPath}});
  spdlog::info(
      "plain \x1e"
      "user\x1f"
      "admin");
  spdlog::default_logger()->flush();

  std::istringstream lines(out.str());
  std::string line;
  ASSERT_TRUE(std::getline(lines, line));
  auto structured = nlohmann::json::parse(line);
  EXPECT_EQ(structured["msg"], "invalid bearer token");
  EXPECT_EQ(structured["path"], kForgedPath);
  EXPECT_EQ(structured.size(), 5u);
  ASSERT_TRUE(std::getline(lines, line));
  auto plain = nlohmann::json::parse(line);
  EXPECT_EQ(plain["msg"],
            "plain \x1euser\x1f"
            "admin");
  EXPECT_EQ(plain.size(), 4u);
  EXPECT_FALSE(std::getline(lines, line));
  log::Setup(Format::kText, 0);
}

TEST(LogTest, VerbosityMapsToKlogLevels) {
  log::Setup(Format::kText, 2);
  EXPECT_TRUE(V(0));
  EXPECT_TRUE(V(2));
  EXPECT_FALSE(V(4));
  log::Setup(Format::kText, 0);
  EXPECT_FALSE(V(2));
  log::Setup(Format::kJson, 4);
  EXPECT_TRUE(V(4));
}

}  // namespace
}  // namespace berth::log
