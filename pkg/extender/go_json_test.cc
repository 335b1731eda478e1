#include "pkg/extender/go_json.h"

#include <gtest/gtest.h>

#include <string>

namespace berth::extender {
namespace {

using json = nlohmann::json;

const Shape kValue = Shape::Value();
const Shape kValues = Shape::Array(&kValue);
const Shape kMap = Shape::Map(&kValue);
const Shape kResult =
    Shape::Struct({{"nodenames", &kValues}, {"failednodes", &kMap}, {"error", &kValue}});

TEST(GoJsonTest, StructKeysMatchWhateverTheirCaseAndMapKeysStayAsWritten) {
  const json v =
      DecodePruned(R"({"nodenames":["a"],"FailedNodes":{"Node-B":"full"},"ERROR":"x"})", kResult);
  EXPECT_EQ(v["nodenames"], json::array({"a"}));
  EXPECT_EQ(v["failednodes"], json({{"Node-B", "full"}}));
  EXPECT_EQ(v["error"], "x");
}

TEST(GoJsonTest, GoFoldsTheKelvinSignAndTheLongS) {
  EXPECT_EQ(FoldKey("\xE2\x84\xAA"
                    "ind"),
            "kind");
  EXPECT_EQ(FoldKey("\xC5\xBF"
                    "core"),
            "score");
  const json v = DecodePruned("{\"error\xC5\xBF\":1,\"\xC3\x89rror\":2}", kResult);
  EXPECT_TRUE(v.empty()) << v.dump();  // Neither key is "error".
  const Shape score = Shape::Struct({{"score", &kValue}});
  EXPECT_EQ(DecodePruned("{\"\xC5\xBF"
                         "CORE\":7}",
                         score)["score"],
            7);
}

TEST(GoJsonTest, ALaterDuplicateWinsAndMapsMerge) {
  const json v = DecodePruned(
      R"({"NodeNames":["a"],"nodeNames":["b","c"],"failedNodes":{"x":"1"},"FailedNodes":{"y":"2"}})",
      kResult);
  EXPECT_EQ(v["nodenames"], json::array({"b", "c"}));
  EXPECT_EQ(v["failednodes"], json({{"x", "1"}, {"y", "2"}}));
}

TEST(GoJsonTest, UnknownFieldsAreSkippedUnreadAndTrailingContentIgnored) {
  // The unknown field is not even valid UTF-8 inside, and would be large: it is only scanned.
  const json v =
      DecodePruned(R"({"Nodes":{"items":[{"a":[1,2,{"b":"c"}]}]},"Error":""} trailing)", kResult);
  EXPECT_FALSE(v.contains("nodes"));
  EXPECT_EQ(v["error"], "");
}

TEST(GoJsonTest, MalformedEmptyAndDeepResponsesAreErrors) {
  EXPECT_THROW(DecodePruned("", kResult), ResponseError);
  EXPECT_THROW(DecodePruned("  \n", kResult), ResponseError);
  EXPECT_THROW(DecodePruned(R"({"error": )", kResult), ResponseError);
  EXPECT_THROW(DecodePruned("{\"error\":\"\xFF\"}", kResult), ResponseError);
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THROW(DecodePruned(deep, kValues), ResponseError);
  // Deep, but inside a skipped field: the scan is iterative and bounded too.
  EXPECT_THROW(DecodePruned("{\"skip\":" + deep + "}", kResult), ResponseError);
}

TEST(GoJsonTest, TypedReadsFailAsGoDoes) {
  try {
    ReadInt64(json(5.5), "HostPriority.Score");
    FAIL();
  } catch (const ResponseError& e) {
    EXPECT_STREQ(e.what(),
                 "json: cannot unmarshal number 5.5 into Go struct field HostPriority.Score of "
                 "type int64");
  }
  EXPECT_THROW(ReadInt64(json(uint64_t{1} << 63), "S"), ResponseError);
  EXPECT_EQ(ReadInt64(json(INT64_MIN), "S"), INT64_MIN);
  EXPECT_EQ(ReadInt64(json(nullptr), "S"), 0);
  EXPECT_EQ(ReadString(json(nullptr), "S"), "");
  try {
    ExpectType(json::array(), json::value_t::object, "", "v1.ExtenderFilterResult");
    FAIL();
  } catch (const ResponseError& e) {
    EXPECT_STREQ(e.what(),
                 "json: cannot unmarshal array into Go value of type v1.ExtenderFilterResult");
  }
}

}  // namespace
}  // namespace berth::extender
