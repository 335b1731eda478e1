#include "pkg/plugins/dynamicresources/cel_selector_evaluator.h"

#include <gtest/gtest.h>

#include <string>

#include "pkg/plugins/dynamicresources/allocator.h"
#include "test/testing/dra_builders.h"

namespace berth::plugins::dynamicresources {
namespace {

using namespace berth::testing::dra;  // NOLINT(google-build-using-namespace): test vocabulary.

TEST(CelSelectorEvaluatorTest, EvaluatesAttributesCapacityAndDriver) {
  CelSelectorEvaluator evaluator;
  const api::Device device = Device("gpu-0")
                                 .Attr("model", StringAttr("a100"))
                                 .Attr("example.com/numa", IntAttr(1))
                                 .Attr("driverVersion", VersionAttr("1.2.3"))
                                 .Capacity("memory", "40Gi")
                                 .MultiAlloc()
                                 .device;
  const std::string driver = "gpu.example.com";
  struct Case {
    std::string expression;
    bool want;
  };
  const Case cases[] = {
      {"device.driver == \"gpu.example.com\"", true},
      {"device.attributes[\"gpu.example.com\"].model == \"a100\"", true},
      {"device.attributes[\"example.com\"].numa == 1", true},
      {"device.attributes[\"gpu.example.com\"].driverVersion.isGreaterThan(semver(\"1.0.0\"))",
       true},
      {"device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"80Gi\")) >= 0", false},
      {"device.allowMultipleAllocations", true},
  };
  for (const Case& c : cases) {
    SelectorResult result = evaluator.Evaluate(c.expression, driver, device);
    EXPECT_EQ(result.failure, SelectorResult::Failure::kNone)
        << c.expression << ": " << result.error;
    EXPECT_EQ(result.matches, c.want) << c.expression;
  }
}

TEST(CelSelectorEvaluatorTest, ErrorsAreClassifiedAndMissingKeysGetUpstreamsHint) {
  CelSelectorEvaluator evaluator;
  const api::Device device = Device("gpu-0").device;
  SelectorResult compile = evaluator.Evaluate("noSuchVar", "drv", device);
  EXPECT_EQ(compile.failure, SelectorResult::Failure::kCompile);
  EXPECT_NE(compile.error.find("undeclared reference"), std::string::npos) << compile.error;

  SelectorResult runtime = evaluator.Evaluate("device.attributes[\"drv\"].missing", "drv", device);
  EXPECT_EQ(runtime.failure, SelectorResult::Failure::kRuntime);
  EXPECT_EQ(runtime.error,
            "no such key: missing. consider using CEL optional chaining (.? followed by "
            "orValue()) or guarding the check with has() for optional fields");
}

TEST(CelSelectorEvaluatorTest, AllocatorWrapsRealCelErrorsAsUpstreamDoes) {
  CelSelectorEvaluator evaluator;
  const std::vector<api::ResourceSlicePtr> slices = {
      SliceWithOneDevice("slice-1", "node-1", Pool("pool-1"), "driver-a")};
  Allocator allocator({}, {Class("class-a", "driver-a")}, slices, {}, evaluator);
  AllocateOutcome ok =
      allocator.Allocate(MakeNode("node-1", "r"), {SimpleClaim("claim-0", "req-0", "class-a")});
  EXPECT_EQ(ok.kind, AllocateOutcome::Kind::kAllocated) << ok.message;

  AllocateOutcome missing = allocator.Allocate(
      MakeNode("node-1", "r"),
      {Claim("claim-0", {Request("req-0", "class-a")
                             .Selectors({"device.attributes[\"driver-a\"].missingAttr"})})});
  EXPECT_EQ(missing.kind, AllocateOutcome::Kind::kError);
  EXPECT_EQ(missing.message.rfind("claim claim-0: selector #0 on device driver-a/pool-1/device-1: "
                                  "CEL runtime error: no such key: missingAttr. consider using",
                                  0),
            0u)
      << missing.message;
}

}  // namespace
}  // namespace berth::plugins::dynamicresources
