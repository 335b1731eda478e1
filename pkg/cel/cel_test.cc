#include "pkg/cel/cel.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "pkg/cel/functions.h"

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

// CEL counts one level per nested expression (a parenthesis, a list, a call argument), up to
// 250 for the outermost expression and everything inside it.
TEST(Compile, NestingLimitIsCELs) {
  for (const auto& [open, close, inner, tail] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"(", ")", "true", ""},
           {"[", "]", "true", ".size() == 1"},
           {"int(", ")", "1", " == 1"}}) {
    SCOPED_TRACE(open);
    const auto nested = [&](int levels) {
      std::string e = inner;
      for (int i = 0; i < levels; ++i) e = open + e + close;
      return e + tail;
    };
    const CompileResult deepest = Compile(nested(249));
    EXPECT_TRUE(deepest.program) << deepest.error;
    const CompileResult over = Compile(nested(250));
    ASSERT_FALSE(over.program);
    EXPECT_NE(over.error.find("expression recursion limit exceeded: 250"), std::string::npos)
        << over.error;
  }
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

// The peak resident memory of this process, in bytes (Linux reports kibibytes).
uint64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

// An 83-code-point literal with a two-byte code point, grown quadratically by two replaces of
// the empty string into about 50 MB: within the memory bound, at a cost of a few thousand.
std::string Grown(const std::string& body) {
  const std::string seed = "'" + std::string(82, 'a') + "\xc3\xa9'";
  return "cel.bind(s, " + seed + ", cel.bind(t, s.replace('', s), cel.bind(u, t.replace('', t), " +
         body + ")))";
}

// Well above the 64 MiB the evaluation may build, well below an input-sized table per call.
constexpr uint64_t kBoundedPeak = uint64_t{256} << 20;

TEST(Matches, SplittingIntoMorePiecesThanTheMemoryBoundHoldsIsRefused) {
  const CompileResult r = Compile(Grown("u.split('').size() > 0"));
  ASSERT_TRUE(r.program) << r.error;
  const EvalResult e = Matches(*r.program, DeviceView{});
  EXPECT_FALSE(e.matches);
  // Both bounds are passed (split() costs a fifth of the length); either may be named.
  EXPECT_EQ(e.error.rfind("operation cancelled", 0), 0u) << e.error;
  EXPECT_LT(PeakResidentBytes(), kBoundedPeak);
}

TEST(Matches, ReplacingPastTheMemoryBoundIsRefused) {
  const CompileResult r = Compile(Grown("u.replace('', u).size() > 0"));
  ASSERT_TRUE(r.program) << r.error;
  const EvalResult e = Matches(*r.program, DeviceView{});
  EXPECT_FALSE(e.matches);
  EXPECT_EQ(e.error.rfind("operation cancelled", 0), 0u) << e.error;
  EXPECT_LT(PeakResidentBytes(), kBoundedPeak);
}

TEST(Matches, IndexingALongStringByCodePointAllocatesNothingPerCall) {
  // Each charAt() costs one unit, so 100000 of them fit the cost limit; on a 50 MB string each
  // must not walk or copy the string.
  const CompileResult r =
      Compile(Grown("lists.range(100000).all(i, u.charAt(i) != '') && u.charAt(1) == 'a'"));
  ASSERT_TRUE(r.program) << r.error;
  const EvalResult e = Matches(*r.program, DeviceView{});
  EXPECT_EQ(e.error, "");
  EXPECT_TRUE(e.matches);
  EXPECT_LT(PeakResidentBytes(), kBoundedPeak);
}

TEST(Matches, SearchingALongStringEndsAtTheCostLimit) {
  for (const char* body : {"u.indexOf('x') == -1", "u.lastIndexOf('a', 3) == 3",
                           "u.substring(1).size() > 0", "u.charAt(5) == 'a'"}) {
    SCOPED_TRACE(body);
    const CompileResult r = Compile(Grown(body));
    ASSERT_TRUE(r.program) << r.error;
    const EvalResult e = Matches(*r.program, DeviceView{});
    // charAt() is cheap and answers; the others cost a tenth of the string's length.
    if (std::string(body).find("charAt") != std::string::npos) {
      EXPECT_EQ(e.error, "");
      EXPECT_TRUE(e.matches);
    } else {
      EXPECT_EQ(e.error, kCostLimitMessage);
    }
  }
  EXPECT_LT(PeakResidentBytes(), kBoundedPeak);
}

// Kubernetes' functions that traverse a string (indexOf(), lastIndexOf()) cost a tenth of its
// bytes: 1000 three-byte code points cost as much as 3000 ASCII ones.
TEST(Matches, StringTraversalCostCountsBytes) {
  std::string euros;
  for (int i = 0; i < 1000; ++i) euros += "\xe2\x82\xac";
  const auto cost = [](const std::string& s) {
    const CompileResult r =
        Compile("'" + s + "'.indexOf('x') == -1 && '" + s + "'.lastIndexOf('x') == -1");
    EXPECT_TRUE(r.program) << r.error;
    const EvalResult e = Matches(*r.program, DeviceView{});
    EXPECT_TRUE(e.matches) << e.error;
    return e.cost;
  };
  EXPECT_EQ(cost(euros), cost(std::string(3000, 'a')));
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
