#include "pkg/log/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
