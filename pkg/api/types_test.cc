#include "pkg/api/types.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace berth::api {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(StringMapTest, SortsAndKeepsLastDuplicate) {
  StringMap m({{"zone", "a"}, {"app", "web"}, {"zone", "b"}, {"tier", "x"}, {"app", "api"}});
  ASSERT_EQ(m.size(), 3u);
  std::vector<StringMap::Entry> expected = {{"app", "api"}, {"tier", "x"}, {"zone", "b"}};
  EXPECT_EQ(m.entries(), expected);
  ASSERT_NE(m.Find("zone"), nullptr);
  EXPECT_EQ(*m.Find("zone"), "b");
  EXPECT_EQ(*m.Find("app"), "api");
  EXPECT_EQ(m.Find("missing"), nullptr);
  EXPECT_EQ(m.Find(""), nullptr);
  EXPECT_TRUE(m.Contains("tier"));
  EXPECT_FALSE(m.Contains("tie"));
}

TEST(StringMapTest, FindsEveryKeyInSmallAndLargeMaps) {
  // Small maps are scanned and large ones searched; both must agree, with keys of equal length.
  for (int n : {1, 3, 16, 17, 40}) {
    std::vector<StringMap::Entry> entries;
    for (int i = 0; i < n; i++) {
      entries.push_back({"label-" + std::to_string(100 + i), "v" + std::to_string(i)});
    }
    StringMap m(entries);
    for (int i = 0; i < n; i++) {
      const std::string* value = m.Find("label-" + std::to_string(100 + i));
      ASSERT_NE(value, nullptr) << n << " " << i;
      EXPECT_EQ(*value, "v" + std::to_string(i));
    }
    EXPECT_EQ(m.Find("label-099"), nullptr) << n;
    EXPECT_EQ(m.Find("label-" + std::to_string(100 + n)), nullptr) << n;
    EXPECT_EQ(m.Find("label-1"), nullptr) << n;
  }
}

TEST(StringMapTest, SortedInputIsKept) {
  StringMap m({{"a", "1"}, {"b", "2"}, {"c", "3"}});
  EXPECT_EQ(*m.Find("a"), "1");
  EXPECT_EQ(*m.Find("b"), "2");
  EXPECT_EQ(*m.Find("c"), "3");
}

TEST(StringMapTest, SetInsertsInOrderAndReplaces) {
  StringMap m;
  EXPECT_TRUE(m.empty());
  m.Set("b", "2");
  m.Set("a", "1");
  m.Set("c", "3");
  m.Set("b", "two");
  std::vector<StringMap::Entry> expected = {{"a", "1"}, {"b", "two"}, {"c", "3"}};
  EXPECT_EQ(m.entries(), expected);
  EXPECT_EQ(m, StringMap({{"c", "3"}, {"b", "two"}, {"a", "1"}}));
  size_t count = 0;
  for (const auto& entry : m) {
    EXPECT_FALSE(entry.first.empty());
    ++count;
  }
  EXPECT_EQ(count, 3u);
}

TEST(ResourceListTest, GetAndSetByName) {
  ResourceList r;
  r.Set("cpu", 1500);
  r.Set("memory", 1024);
  r.Set("ephemeral-storage", 2048);
  r.Set("pods", 110);
  r.Set("nvidia.com/gpu", 2);
  r.Set("example.com/a", 1);
  r.Set("hugepages-2Mi", 4);
  r.Set("nvidia.com/gpu", 3);
  EXPECT_EQ(r.milli_cpu, 1500);
  EXPECT_EQ(r.memory, 1024);
  EXPECT_EQ(r.ephemeral_storage, 2048);
  EXPECT_EQ(r.pods, 110);
  EXPECT_EQ(r.Get("cpu"), 1500);
  EXPECT_EQ(r.Get("memory"), 1024);
  EXPECT_EQ(r.Get("ephemeral-storage"), 2048);
  EXPECT_EQ(r.Get("pods"), 110);
  EXPECT_EQ(r.Get("nvidia.com/gpu"), 3);
  EXPECT_EQ(r.Get("example.com/a"), 1);
  EXPECT_EQ(r.Get("unknown"), 0);
  std::vector<std::pair<std::string, int64_t>> expected = {
      {"example.com/a", 1}, {"hugepages-2Mi", 4}, {"nvidia.com/gpu", 3}};
  EXPECT_EQ(r.scalar, expected);
}

TEST(ResourceListTest, AddSubtractMax) {
  ResourceList a;
  a.Set("cpu", 1000);
  a.Set("memory", 100);
  a.Set("example.com/a", 1);
  a.Set("example.com/c", 5);
  ResourceList b;
  b.Set("cpu", 500);
  b.Set("memory", 300);
  b.Set("pods", 1);
  b.Set("example.com/b", 2);
  b.Set("example.com/c", 1);

  ResourceList sum = a;
  sum.Add(b);
  EXPECT_EQ(sum.milli_cpu, 1500);
  EXPECT_EQ(sum.memory, 400);
  EXPECT_EQ(sum.pods, 1);
  std::vector<std::pair<std::string, int64_t>> sum_scalar = {
      {"example.com/a", 1}, {"example.com/b", 2}, {"example.com/c", 6}};
  EXPECT_EQ(sum.scalar, sum_scalar);

  ResourceList diff = a;
  diff.Subtract(b);
  EXPECT_EQ(diff.milli_cpu, 500);
  EXPECT_EQ(diff.memory, -200);
  EXPECT_EQ(diff.pods, -1);
  std::vector<std::pair<std::string, int64_t>> diff_scalar = {
      {"example.com/a", 1}, {"example.com/b", -2}, {"example.com/c", 4}};
  EXPECT_EQ(diff.scalar, diff_scalar);

  ResourceList max = a;
  max.MaxWith(b);
  EXPECT_EQ(max.milli_cpu, 1000);
  EXPECT_EQ(max.memory, 300);
  EXPECT_EQ(max.pods, 1);
  std::vector<std::pair<std::string, int64_t>> max_scalar = {
      {"example.com/a", 1}, {"example.com/b", 2}, {"example.com/c", 5}};
  EXPECT_EQ(max.scalar, max_scalar);

  ResourceList back = sum;
  back.Subtract(b);
  EXPECT_EQ(back.Get("cpu"), 1000);
  EXPECT_EQ(back.Get("example.com/b"), 0);
}

TEST(ResourceListTest, ArithmeticSaturates) {
  ResourceList a;
  a.milli_cpu = kMax - 1;
  a.memory = kMin + 1;
  ResourceList b;
  b.milli_cpu = 10;
  b.memory = 10;
  ResourceList sum = a;
  sum.Add(b);
  EXPECT_EQ(sum.milli_cpu, kMax);
  ResourceList diff = a;
  diff.Subtract(b);
  EXPECT_EQ(diff.memory, kMin);
}

TEST(ResourceListTest, IsZero) {
  ResourceList r;
  EXPECT_TRUE(r.IsZero());
  r.Set("example.com/a", 0);
  EXPECT_TRUE(r.IsZero());
  r.Set("example.com/a", 1);
  EXPECT_FALSE(r.IsZero());
  ResourceList p;
  p.pods = 1;
  EXPECT_FALSE(p.IsZero());
  ResourceList e;
  e.ephemeral_storage = -1;
  EXPECT_FALSE(e.IsZero());
}

TEST(ObjectMetaTest, Key) {
  ObjectMeta meta;
  meta.name = "web-0";
  EXPECT_EQ(meta.Key(), "web-0");
  meta.namespace_ = "prod";
  EXPECT_EQ(meta.Key(), "prod/web-0");
  Pod pod;
  pod.meta = meta;
  EXPECT_EQ(pod.Key(), "prod/web-0");
  EXPECT_FALSE(pod.IsTerminating());
  pod.meta.deletion_timestamp = "2024-01-01T00:00:00Z";
  EXPECT_TRUE(pod.IsTerminating());
}

TEST(ParseInt64Test, FollowsStrconv) {
  struct Case {
    const char* text;
    bool ok;
    int64_t value;
  };
  const Case cases[] = {
      {"0", true, 0},
      {"42", true, 42},
      {"-42", true, -42},
      {"+42", true, 42},
      {"007", true, 7},
      {"9223372036854775807", true, kMax},
      {"-9223372036854775808", true, kMin},
      {"9223372036854775808", false, 0},
      {"", false, 0},
      {"+", false, 0},
      {"-", false, 0},
      {"+-1", false, 0},
      {" 1", false, 0},
      {"1 ", false, 0},
      {"1.0", false, 0},
      {"1e3", false, 0},
      {"abc", false, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    int64_t value = -7;
    EXPECT_EQ(ParseInt64(c.text, &value), c.ok);
    EXPECT_EQ(value, c.ok ? c.value : -7);
  }
}

}  // namespace
}  // namespace berth::api
