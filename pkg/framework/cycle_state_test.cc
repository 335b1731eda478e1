#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "pkg/framework/interface.h"

namespace berth::framework {
namespace {

struct Counter : StateData {
  explicit Counter(int v) : value(v) {}
  std::shared_ptr<StateData> Clone() const override { return std::make_shared<Counter>(*this); }
  int value;
};
struct OtherData : StateData {
  std::shared_ptr<StateData> Clone() const override { return std::make_shared<OtherData>(); }
};

TEST(CycleState, ReadSeesTheLatestWriteAndItsTypeOnly) {
  CycleState state;
  EXPECT_EQ(state.Read<Counter>("k"), nullptr);
  state.Write("k", std::make_shared<Counter>(1));
  state.Write("other", std::make_shared<OtherData>());
  ASSERT_NE(state.Read<Counter>("k"), nullptr);
  EXPECT_EQ(state.Read<Counter>("k")->value, 1);
  EXPECT_EQ(state.Read<Counter>("other"), nullptr);
  EXPECT_NE(state.Read<StateData>("other"), nullptr);
  state.Write("k", std::make_shared<Counter>(2));
  EXPECT_EQ(state.Read<Counter>("k")->value, 2);
  state.Delete("k");
  EXPECT_EQ(state.Read<Counter>("k"), nullptr);
  EXPECT_EQ(state.ReadData("k"), nullptr);
}

TEST(CycleState, PointerFromReadOutlivesOverwriteAndDelete) {
  CycleState state;
  state.Write("k", std::make_shared<Counter>(7));
  const Counter* first = state.Read<Counter>("k");
  state.Write("k", std::make_shared<Counter>(8));
  state.Delete("k");
  // Under ASan this would be a use after free if superseded entries were released early.
  EXPECT_EQ(first->value, 7);
}

TEST(CycleState, CloneDeepCopiesAndKeepsSkips) {
  CycleState state;
  state.Write("k", std::make_shared<Counter>(1));
  state.skip_filter_plugins.insert(PluginName("A"));
  state.filter_skipped = {1, 0};
  auto copy = state.Clone();
  ASSERT_NE(copy->Read<Counter>("k"), nullptr);
  EXPECT_NE(copy->Read<Counter>("k"), state.Read<Counter>("k"));
  EXPECT_EQ(copy->Read<Counter>("k")->value, 1);
  EXPECT_TRUE(copy->skip_filter_plugins.contains(PluginName("A")));
  EXPECT_EQ(copy->filter_skipped, state.filter_skipped);
}

TEST(CycleState, StateKeyAndItsTextNameOneEntry) {
  const StateKey key("PreScoreExample");
  const StateKey same("PreScoreExample");
  const StateKey other("PreScoreOther");
  CycleState state;
  // Written as text, found by key; then overwritten by key, found as text.
  state.Write("PreScoreExample", std::make_shared<Counter>(1));
  ASSERT_NE(state.Read<Counter>(key), nullptr);
  EXPECT_EQ(state.Read<Counter>(key)->value, 1);
  state.Write(same, std::make_shared<Counter>(2));
  EXPECT_EQ(state.Read<Counter>("PreScoreExample")->value, 2);
  EXPECT_EQ(state.Read<Counter>(key)->value, 2);
  EXPECT_EQ(state.Read<Counter>(other), nullptr);
  state.Write(other, std::make_shared<Counter>(3));
  EXPECT_EQ(state.Read<Counter>(key)->value, 2);
  EXPECT_EQ(state.Read<Counter>(other)->value, 3);
  EXPECT_EQ(state.Read<OtherData>(key), nullptr);
  auto copy = state.Clone();
  EXPECT_EQ(copy->Read<Counter>(key)->value, 2);
  EXPECT_EQ(copy->Read<Counter>("PreScoreOther")->value, 3);
  state.Delete("PreScoreExample");
  EXPECT_EQ(state.Read<Counter>(key), nullptr);
  EXPECT_EQ(state.Read<Counter>(other)->value, 3);
}

TEST(CycleState, ConcurrentReadersSeeEveryPublishedValue) {
  CycleState state;
  state.Write("k", std::make_shared<Counter>(0));
  std::atomic<bool> stop{false};
  constexpr int kReaders = 3;
  std::vector<std::thread> readers;
  readers.reserve(kReaders);
  std::atomic<int> bad{0};
  for (int r = 0; r < kReaders; r++) {
    readers.emplace_back([&] {
      int last = 0;
      while (!stop) {
        const Counter* c = state.Read<Counter>("k");
        if (c == nullptr || c->value < last) bad++;
        if (c) last = c->value;
      }
    });
  }
  for (int v = 1; v <= 200; v++) state.Write("k", std::make_shared<Counter>(v));
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(state.Read<Counter>("k")->value, 200);
}

}  // namespace
}  // namespace berth::framework
