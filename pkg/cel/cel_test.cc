#include "pkg/cel/cel.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace berth::cel {
namespace {

DeviceView Gpu() {
  DeviceView d;
  d.driver = "dra.example.com";
  d.attributes["model"] = std::string("a100");
  d.attributes["cores"] = int64_t{108};
  d.capacity["memory"] = api::Quantity::Parse("80Gi");
  return d;
}

TEST(Compile, SyntaxErrorShowsTheLineAndColumn) {
  const CompileResult r = Compile("device.driver == ");
  ASSERT_FALSE(r.program);
  EXPECT_EQ(r.error.rfind("compilation failed: ERROR: <input>:1:18: Syntax error:", 0), 0u)
      << r.error;
  EXPECT_NE(r.error.find("\n | device.driver == \n | .................^"), std::string::npos)
      << r.error;
}

TEST(Compile, UndeclaredReferenceNamesTheColumnOnItsLine) {
  const CompileResult r = Compile("true &&\n  foo");
  ASSERT_FALSE(r.program);
  EXPECT_NE(r.error.find("ERROR: <input>:2:3: undeclared reference to 'foo' (in container '')"),
            std::string::npos)
      << r.error;
}

TEST(Compile, DeepNestingIsRefusedNotRecursedInto) {
  const std::string deep = std::string(40000, '(') + "true" + std::string(40000, ')');
  const CompileResult r = Compile(deep);
  ASSERT_FALSE(r.program);
  EXPECT_NE(r.error.find("expression recursion limit exceeded"), std::string::npos) << r.error;
}

TEST(Compile, LongOperatorChainsAreBounded) {
  std::string chain = "1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  const CompileResult r = Compile(chain + " > 0");
  ASSERT_FALSE(r.program);
  EXPECT_NE(r.error.find("expression recursion limit exceeded"), std::string::npos) << r.error;
}

TEST(Compile, LongConjunctionsAreBalancedAndAccepted) {
  std::string chain = "true";
  for (int i = 0; i < 5000; ++i) chain += " && true";
  const CompileResult r = Compile(chain);
  ASSERT_TRUE(r.program) << r.error;
  EXPECT_TRUE(Matches(*r.program, DeviceView{}).matches);
}

TEST(Compile, OversizedInputIsRefused) {
  const CompileResult r = Compile(std::string(100001, ' ') + "true");
  ASSERT_FALSE(r.program);
  EXPECT_NE(r.error.find("exceeds limit"), std::string::npos) << r.error;
}

TEST(Matches, ReportsCost) {
  const CompileResult r = Compile("device.driver == 'dra.example.com'");
  ASSERT_TRUE(r.program) << r.error;
  const EvalResult e = Matches(*r.program, Gpu());
  EXPECT_TRUE(e.matches);
  EXPECT_GT(e.cost, 0u);
}

TEST(Matches, CostLimitIsTheCallersChoice) {
  const CompileResult r = Compile("[1, 2, 3].all(x, x > 0)");
  ASSERT_TRUE(r.program) << r.error;
  EXPECT_TRUE(Matches(*r.program, DeviceView{}).matches);
  const EvalResult limited = Matches(*r.program, DeviceView{}, 5);
  EXPECT_FALSE(limited.matches);
  EXPECT_EQ(limited.error, "operation cancelled: actual cost limit exceeded");
}

TEST(Matches, DoublingValuesHitTheMemoryBoundOrTheCostLimit) {
  std::string expr = "x";
  for (int i = 0; i < 40; ++i) expr = std::string("cel.bind(x, x + x, ").append(expr).append(")");
  const CompileResult r = Compile("cel.bind(x, [1], " + expr + ".size() > 0)");
  ASSERT_TRUE(r.program) << r.error;
  const EvalResult e = Matches(*r.program, DeviceView{});
  EXPECT_FALSE(e.matches);
  EXPECT_NE(e.error.find("operation cancelled"), std::string::npos) << e.error;
}

TEST(Matches, OneProgramEvaluatesOnManyThreads) {
  const CompileResult r = Compile(
      "cel.bind(a, device.attributes['dra.example.com'], a.cores > 100 && "
      "[1, 2, 3].map(x, x * a.cores).sum() == 648)");
  ASSERT_TRUE(r.program) << r.error;
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) ok[t] += Matches(*r.program, Gpu()).matches ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  for (int n : ok) EXPECT_EQ(n, 200);
}

TEST(Cache, KeepsSuccessfulCompilationsUpToItsBound) {
  Cache cache(2);
  const CompileResult a = cache.GetOrCompile("true");
  ASSERT_TRUE(a.program);
  const CompileResult again = cache.GetOrCompile("true");
  ASSERT_TRUE(again.program);
  EXPECT_EQ(&a.program->expr(), &again.program->expr());
  cache.GetOrCompile("false");
  cache.GetOrCompile("1 == 1");  // evicts "true", the least recently used
  const CompileResult evicted = cache.GetOrCompile("true");
  ASSERT_TRUE(evicted.program);
  EXPECT_NE(&a.program->expr(), &evicted.program->expr());
  EXPECT_FALSE(cache.GetOrCompile("nope").program);
}

}  // namespace
}  // namespace berth::cel
