#include "pkg/plugins/prioritysort/prioritysort.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::plugins::prioritysort {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

framework::QueuedPodInfo Queued(const std::string& name, int32_t priority,
                                steady_clock::time_point timestamp) {
  framework::QueuedPodInfo info;
  info.pod_info = testing::PodBuilder(name).Priority(priority).Info();
  info.timestamp = timestamp;
  return info;
}

std::shared_ptr<framework::QueueSortPlugin> NewPlugin() {
  testing::FakeHandle handle;
  auto plugin = std::dynamic_pointer_cast<framework::QueueSortPlugin>(New(nullptr, handle));
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

TEST(PrioritySortTest, Less) {
  const steady_clock::time_point t0 = steady_clock::now();
  const steady_clock::time_point t1 = t0 + seconds(1);
  struct Case {
    std::string name;
    framework::QueuedPodInfo a;
    framework::QueuedPodInfo b;
    bool want;
  };
  const Case cases[] = {
      {"higher priority first", Queued("p1", 100, t1), Queued("p2", 50, t0), true},
      {"lower priority after", Queued("p1", 50, t0), Queued("p2", 100, t1), false},
      {"equal priority, earlier timestamp first", Queued("p1", 100, t0), Queued("p2", 100, t1),
       true},
      {"equal priority, later timestamp after", Queued("p1", 100, t1), Queued("p2", 100, t0),
       false},
      {"equal priority and timestamp is not less", Queued("p1", 100, t0), Queued("p2", 100, t0),
       false},
      {"negative priority after zero", Queued("p1", -1, t0), Queued("p2", 0, t1), false},
  };
  auto plugin = NewPlugin();
  for (const Case& c : cases) EXPECT_EQ(plugin->Less(c.a, c.b), c.want) << c.name;
}

TEST(PrioritySortTest, NameAndArgs) {
  testing::FakeHandle handle;
  EXPECT_EQ(New(nullptr, handle)->Name(), "PrioritySort");
  EXPECT_NO_THROW(New(nlohmann::json::object(), handle));
  EXPECT_THROW(New(nlohmann::json{{"unexpected", 1}}, handle), std::invalid_argument);
}

}  // namespace
}  // namespace berth::plugins::prioritysort
