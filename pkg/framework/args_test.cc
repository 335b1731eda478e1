#include "pkg/framework/args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace berth::framework {
namespace {

using ::testing::ElementsAre;

// Every problem is kept and thrown together, in upstream's aggregate form.
TEST(ArgsErrorsTest, CollectsEveryProblemAndThrowsThemTogether) {
  ArgsErrors errors;
  const nlohmann::json args = {{"kind", "X"}, {"a", 1}, {"b", "x"}, {"c", {{"d", 0}}}};
  ASSERT_TRUE(errors.CheckObject(args, {"b", "c"}));
  int64_t b = 0;
  EXPECT_FALSE(errors.ReadInt(args, "b", "", 0, 10, "not in valid range [0, 10]", &b));
  ASSERT_TRUE(errors.CheckObject(args["c"], {}, "c"));
  errors.Required(IndexField("c.e", 2), "must be given");
  errors.NotSupported("t", "Fancy", {"A", "B"});
  errors.Duplicate("n", "cpu");
  errors.Forbidden("f", "must be nil");
  EXPECT_THAT(
      errors.errors(),
      ElementsAre(ArgsFieldError{"a", "unknown field"},
                  ArgsFieldError{"b", "Invalid value: \"x\": must be an integer"},
                  ArgsFieldError{"c.d", "unknown field"},
                  ArgsFieldError{"c.e[2]", "Required value: must be given"},
                  ArgsFieldError{"t", R"(Unsupported value: "Fancy": supported values: "A", "B")"},
                  ArgsFieldError{"n", "Duplicate value: \"cpu\""},
                  ArgsFieldError{"f", "Forbidden: must be nil"}));
  try {
    errors.ThrowIfAny();
    FAIL() << "no throw";
  } catch (const InvalidArgs& e) {
    EXPECT_EQ(e.errors(), errors.errors());
    EXPECT_THAT(std::string(e.what()), ::testing::StartsWith("[a: unknown field, b: Invalid"));
  }
}

TEST(ArgsErrorsTest, OneProblemIsItsOwnMessageAndTheRootIsCalledArgs) {
  try {
    ExpectNoArgs(nlohmann::json::array());
    FAIL() << "an array accepted";
  } catch (const InvalidArgs& e) {
    EXPECT_STREQ(e.what(), "args: Invalid value: []: must be an object");
  }
  EXPECT_NO_THROW(ExpectNoArgs(nullptr));
  EXPECT_NO_THROW(ExpectNoArgs({{"apiVersion", "v1"}, {"kind", "X"}}));
  EXPECT_THROW(ExpectNoArgs({{"x", 1}}), InvalidArgs);
}

TEST(ArgsErrorsTest, ReadIntKeepsDefaultsAndRefusesWhatDoesNotFit) {
  ArgsErrors errors;
  int64_t value = 7;
  EXPECT_TRUE(errors.ReadInt({{"v", nullptr}}, "v", "p", 0, 10, "range", &value));
  EXPECT_TRUE(errors.ReadInt(nlohmann::json::object(), "v", "p", 0, 10, "range", &value));
  EXPECT_EQ(value, 7);
  EXPECT_TRUE(errors.ReadInt({{"v", 3}}, "v", "p", 0, 10, "range", &value));
  EXPECT_EQ(value, 3);
  EXPECT_FALSE(errors.ReadInt({{"v", std::numeric_limits<uint64_t>::max()}}, "v", "p", 0,
                              std::numeric_limits<int64_t>::max(), "range", &value));
  EXPECT_EQ(value, 3);
  EXPECT_THAT(errors.errors(),
              ElementsAre(ArgsFieldError{"p.v", "Invalid value: 18446744073709551615: range"}));
}

}  // namespace
}  // namespace berth::framework
