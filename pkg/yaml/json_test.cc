#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "pkg/yaml/yaml.h"

namespace berth::yaml {
namespace {

using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr char kTooMany[] = "too many values";

// Converts `text` with `budget`, returning the JSON and every (path, problem) reported.
struct Converted {
  nlohmann::json json;
  std::vector<std::pair<std::string, std::string>> problems;
};

Converted Convert(const std::string& text, JsonBudget& budget) {
  Converted out;
  JsonConverter converter(&budget, kTooMany, [&](const std::string& path, const std::string& p) {
    out.problems.emplace_back(path, p);
  });
  out.json = converter.Convert(YAML::Load(text), "");
  return out;
}

std::string ByteLimit(size_t bytes) {
  return "keys and values add up to more than " + std::to_string(bytes) +
         " bytes (an alias counts the whole anchored value each time it is used)";
}

// Billion laughs: `levels` levels of `width` aliases each over one anchored `leaf`.
std::string Laughs(int levels, int width, const std::string& leaf) {
  std::string text = "a0: &a0 \"" + leaf + "\"\n";
  for (int level = 1; level <= levels; level++) {
    const std::string prev = "*a" + std::to_string(level - 1);
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [" + prev;
    for (int i = 1; i < width; i++) text += ", " + prev;
    text += "]\n";
  }
  return text;
}

TEST(JsonConverterTest, YamlCppSharesAnAnchoredNodeAmongItsAliases) {
  // Parsing is not where aliases cost: every alias is the anchored node itself.
  YAML::Node doc = YAML::Load(Laughs(9, 9, "lol"));
  EXPECT_TRUE(doc["a9"][0].is(doc["a8"]));
  EXPECT_TRUE(doc["a9"][8].is(doc["a8"]));
  EXPECT_EQ(&doc["a1"][4].Scalar(), &doc["a0"].Scalar());
}

TEST(JsonConverterTest, BillionLaughsStopsAtTheValueBound) {
  JsonBudget budget(100'000);
  Converted c = Convert(Laughs(9, 9, "lol"), budget);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0].second, kTooMany);
  EXPECT_TRUE(budget.spent());
  EXPECT_TRUE(c.json.is_null());
}

TEST(JsonConverterTest, BillionLaughsWithLongLaughsStopsAtTheByteBound) {
  JsonBudget budget(100'000);
  Converted c = Convert(Laughs(9, 9, std::string(1000, 'l')), budget);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0].second, ByteLimit(JsonBudget::kMaxBytes));
  EXPECT_TRUE(c.json.is_null());
}

// A 500 kB string and 50,000 aliases of it: under 1 MB of YAML, 25 GB of JSON.
TEST(JsonConverterTest, ALongAnchoredStringWithManyAliasesStopsAtTheByteBound) {
  std::string text = "s: &s \"" + std::string(500'000, 'x') + "\"\nl:\n";
  for (int i = 0; i < 50'000; i++) text += "- *s\n";
  ASSERT_LT(text.size(), size_t{1} << 20);
  JsonBudget budget(100'000);
  Converted c = Convert(text, budget);
  // Keys "s" and "l", the anchor and 32 aliases fit in 16 MiB; the 33rd alias does not.
  EXPECT_THAT(c.problems, ElementsAre(Pair("l[32]", ByteLimit(JsonBudget::kMaxBytes))));
}

TEST(JsonConverterTest, ASelfReferenceStopsAtTheDepthBound) {
  // yaml-cpp makes "&a [1, *a]" a list that holds itself.
  YAML::Node doc = YAML::Load("a: &a [1, *a]\n");
  ASSERT_TRUE(doc["a"][1].is(doc["a"]));
  JsonBudget budget(100'000);
  Converted c = Convert("a: &a [1, *a]\n", budget);
  // Both items of the list 64 levels below "a" are one level too deep.
  const std::string deep = "a" + [] {
    std::string s;
    for (int i = 0; i < 63; i++) s += "[1]";
    return s;
  }();
  EXPECT_THAT(c.problems, ElementsAre(Pair(deep + "[0]", "nested more than 64 levels deep"),
                                      Pair(deep + "[1]", "nested more than 64 levels deep")));
  // Wider, it would be 3^64 values; the value bound stops it.
  JsonBudget wide(100'000);
  EXPECT_THAT(Convert("a: &a [*a, *a, *a]\n", wide).problems.back(), Pair(_, kTooMany));
}

TEST(JsonConverterTest, CountsKeysAndScalarsAsWritten) {
  JsonBudget fits(100, 12);
  EXPECT_TRUE(Convert("a: hello\nb: world\n", fits).problems.empty());
  JsonBudget short_by_one(100, 11);
  EXPECT_THAT(Convert("a: hello\nb: world\n", short_by_one).problems,
              ElementsAre(Pair("b", ByteLimit(11))));
  // A key an alias names counts as well.
  JsonBudget keys(100, 17);
  EXPECT_THAT(Convert("k: &k abcdefgh\nm: {*k : 1, x: 2}\n", keys).problems,
              ElementsAre(Pair("m", ByteLimit(17))));
}

TEST(JsonConverterTest, ConversionsSharingABudgetShareItsBytes) {
  JsonBudget budget(100, 10);
  EXPECT_TRUE(Convert("abcdefgh", budget).problems.empty());
  EXPECT_THAT(Convert("xyz", budget).problems, ElementsAre(Pair("", ByteLimit(10))));
  // Once spent, nothing converts and nothing more is reported.
  Converted after = Convert("a", budget);
  EXPECT_TRUE(after.problems.empty());
  EXPECT_TRUE(after.json.is_null());
}

TEST(JsonConverterTest, AFewAliasesConvert) {
  JsonBudget budget(100'000);
  Converted c = Convert(
      "base: &b {image: pause, ports: [80, 443], on: yes}\n"
      "copies: [*b, *b]\n"
      "name: &n web\n"
      "label: *n\n",
      budget);
  EXPECT_TRUE(c.problems.empty());
  const nlohmann::json base =
      nlohmann::json::parse(R"({"image": "pause", "ports": [80, 443], "on": true})");
  EXPECT_EQ(c.json["base"], base);
  EXPECT_EQ(c.json["copies"], nlohmann::json::array({base, base}));
  EXPECT_EQ(c.json["label"], "web");
  EXPECT_FALSE(budget.spent());
}

TEST(JsonConverterTest, ALongKeyIsCutInAProblemsPath) {
  JsonBudget budget(100);
  const std::string key = std::string(99, 'k') + "\xc3\xa9" + std::string(200, 'k');
  Converted c = Convert("\"" + key + "\": {x: .inf, y: [.nan]}\n", budget);
  // The cut falls inside "é", so the key keeps 99 bytes.
  const std::string cut = std::string(99, 'k') + "...";
  EXPECT_THAT(c.problems,
              ElementsAre(Pair(cut + ".x", "number .inf cannot be represented in JSON"),
                          Pair(cut + ".y[0]", "number .nan cannot be represented in JSON")));
}

TEST(JsonConverterTest, ProblemsKeepTheCallersPathAndAreAllReported) {
  JsonBudget budget(100);
  std::vector<std::pair<std::string, std::string>> problems;
  JsonConverter converter(&budget, kTooMany, [&](const std::string& path, const std::string& p) {
    problems.emplace_back(path, p);
  });
  nlohmann::json json = converter.Convert(YAML::Load("{a: [1, {b: 2, b: 3}], c: .inf}"), "args");
  EXPECT_THAT(problems, ElementsAre(Pair("args.a[1].b", "duplicate key"),
                                    Pair("args.c", "number .inf cannot be represented in JSON")));
  EXPECT_EQ(json, nlohmann::json::parse(R"({"a": [1, {"b": 2}], "c": null})"));
}

}  // namespace
}  // namespace berth::yaml
