// Explain and simulate of hostile objects: a gang whose minMember is far beyond the pods it has,
// and dry runs that would go on too long. The answers keep exact counts while the work behind
// them is bounded (copies of the pod made, dry runs run), and dry runs past their budget stop and
// say so. The scheduler core runs without an apiserver, as in scheduler_gang_test.cc; a PreFilter
// plugin watches the dry runs and, for the budget tests, moves a fake clock.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "pkg/api/podgroup.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"
#include "pkg/util/clock.h"
#include "test/testing/fake_handle.h"
#include "test/testing/feedback_binder.h"
#include "test/testing/objects.h"
#include "test/testing/podgroups.h"

namespace berth::scheduler {
namespace {

using namespace std::chrono_literals;
using ::testing::Contains;
using ::testing::HasSubstr;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::PodGroupObject;

// Sees every dry run (a dry run's CycleState says so) at PreFilter, which runs once per dry run
// whatever the nodes' verdicts, and keeps every node. It counts the distinct copies of a pod that
// stood in for a group's missing members, and steps `clock` by `step` per dry run, so that a dry
// run takes time on the clock the budget reads.
class DryRunWatcher : public framework::PreFilterPlugin {
 public:
  std::string_view Name() const override { return "DryRunWatcher"; }
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>&,
                              framework::PreFilterResult*) override {
    if (!state.dry_run) return {};
    std::lock_guard lock(mu_);
    if (pod.meta.uid.find("/stand-in-") != std::string::npos) stand_ins_.insert(pod.meta.uid);
    if (clock_) clock_->Step(step_);
    return {};
  }
  void StepClock(std::shared_ptr<util::FakeClock> clock, std::chrono::nanoseconds step) {
    std::lock_guard lock(mu_);
    clock_ = std::move(clock);
    step_ = step;
  }
  size_t stand_ins() {
    std::lock_guard lock(mu_);
    return stand_ins_.size();
  }
  void Reset() {
    std::lock_guard lock(mu_);
    stand_ins_.clear();
  }

 private:
  std::mutex mu_;
  std::set<std::string> stand_ins_;
  std::shared_ptr<util::FakeClock> clock_;
  std::chrono::nanoseconds step_{0};
};

bool Eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 1000; i++) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

class ExplainBoundsTest : public ::testing::Test {
 protected:
  void Start(SchedulerOptions options = {}) {
    registry_ = plugins::registry::InTree();
    registry_["FeedbackBinder"] = [this](const nlohmann::json&, framework::Handle&) {
      return binder_;
    };
    registry_["DryRunWatcher"] = [this](const nlohmann::json&, framework::Handle&) {
      return watcher_;
    };
    config::Configuration cfg = config::DefaultConfiguration();
    auto& profile = cfg.profiles[0];
    profile.plugins.bind.disabled.push_back({"*", 0});
    profile.plugins.bind.enabled.push_back({"FeedbackBinder", 0});
    profile.plugins.pre_filter.enabled.push_back({"DryRunWatcher", 0});
    profile.plugin_config.push_back({"Coscheduling", {{"permitWaitingTimeSeconds", 30}}});
    SchedulerDeps deps;
    deps.informers = &informers_;
    deps.recorder = &recorder_;
    options.binding_workers = 2;
    scheduler_ = std::make_unique<Scheduler>(cfg, registry_, deps, options);
    scheduler_->AddAllEventHandlers();
  }
  // Starts with dry runs bounded by `budget` on a fake clock, which it returns for the test to
  // step; the clock stands still unless stepped.
  std::shared_ptr<util::FakeClock> StartWithDryRunBudget(std::chrono::milliseconds budget) {
    auto clock = std::make_shared<util::FakeClock>();
    SchedulerOptions options;
    options.dry_run_clock = clock;
    options.dry_run_budget = budget;
    Start(options);
    return clock;
  }
  void TearDown() override {
    if (scheduler_) scheduler_->Stop(1s);
  }

  void Node(const std::string& name, const std::string& cpu, int64_t pods = 110) {
    informers_.Nodes().Upsert(NodeBuilder(name).Capacity(cpu, "64Gi", pods).Build());
  }
  void Group(const std::string& name, int64_t min_member) {
    informers_.For<api::PodGroup>().Upsert(PodGroupObject(name, min_member));
  }
  static api::PodPtr Member(const std::string& name, const std::string& group,
                            const std::string& cpu) {
    PodBuilder pod(name);
    pod.Label(std::string(api::kPodGroupLabel), group);
    return pod.Container(cpu, "64Mi").Build();
  }

  informer::SharedInformerFactory informers_{nullptr};
  testing::FakeRecorder recorder_;
  std::shared_ptr<testing::FeedbackBinder> binder_ =
      std::make_shared<testing::FeedbackBinder>(informers_);
  std::shared_ptr<DryRunWatcher> watcher_ = std::make_shared<DryRunWatcher>();
  framework::runtime::Registry registry_;
  std::unique_ptr<Scheduler> scheduler_;
};

// The object: minMember 2147483647 and one pod, explained by the running scheduler. The
// answer gives the exact count it lacks, and says why it cannot fit from the nodes' room for
// pods, without a copy of the pod per missing member (this test is not run against the code as it
// was, which made 2147483646 copies).
TEST_F(ExplainBoundsTest, AGangOfMinMemberInt32MaxIsExplainedWithExactCountsAndFewCopies) {
  Start();
  scheduler_->Run();
  Node("n1", "4");
  Node("n2", "4");
  Group("g", 2147483647);
  informers_.Pods().Upsert(Member("g-0", "g", "100m"));
  ASSERT_TRUE(Eventually([&] { return scheduler_->attempts().Find("default/g-0") != nullptr; }));
  watcher_->Reset();
  std::optional<explain::Explanation> e = scheduler_->dry_runs().Explain("default/g-0");
  ASSERT_TRUE(e.has_value());
  const std::string text = explain::ToText(*e);
  EXPECT_EQ(e->group, "pod group \"default/g\"");
  EXPECT_EQ(e->group_needs, 2147483647);
  EXPECT_EQ(e->group_fit_now, 1) << text;
  EXPECT_TRUE(e->hints.empty()) << text;
  EXPECT_THAT(e->notes,
              Contains("pod group \"default/g\" lacks 2147483646 pods: it has 1 of minMember "
                       "2147483647"))
      << text;
  EXPECT_THAT(e->notes,
              Contains("pod group \"default/g\": it needs 2147483647 more pods placed at once, "
                       "and the nodes have room for 220 (allocatable pods less the pods on them)"))
      << text;
  EXPECT_EQ(e->group_stand_ins, 0);
  EXPECT_LE(watcher_->stand_ins(), static_cast<size_t>(explain::kMaxStandIns));
  EXPECT_FALSE(e->cut_short);
  EXPECT_EQ(explain::ToJson(*e)["group"]["standIns"], 0);
}

// Against the code as it was, this made a copy of the pod for each of the 99999 missing members
// and ran a dry run of every one of them.
TEST_F(ExplainBoundsTest, AGangFarShortOfMinMemberIsSimulatedWithoutACopyPerMissingPod) {
  Start();
  Node("n1", "4", 2);
  Group("g", 100000);
  explain::Explanation e = scheduler_->dry_runs().Simulate(*Member("g-0", "g", "100m"));
  const std::string text = explain::ToText(e);
  EXPECT_THAT(e.notes,
              Contains("pod group \"default/g\" lacks 99999 pods: it has 1 of minMember 100000"))
      << text;
  EXPECT_TRUE(e.hints.empty()) << text;
  EXPECT_LE(watcher_->stand_ins(), static_cast<size_t>(explain::kMaxStandIns));
  EXPECT_LE(e.group_stand_ins, explain::kMaxStandIns);
}

// Room for the whole group, cpu for four of its pods: the pod and three copies fit, the fourth
// copy fits no node, and no further copy is made (they are all the same pod: none would fit).
TEST_F(ExplainBoundsTest, CopiesStopAtTheFirstThatFitsNoNode) {
  Start();
  Node("n1", "4");
  Group("g", 50);
  explain::Explanation e = scheduler_->dry_runs().Simulate(*Member("g-0", "g", "1"));
  const std::string text = explain::ToText(e);
  EXPECT_EQ(e.group_stand_ins, 4) << text;
  EXPECT_EQ(e.group_fit_now, 1) << text;
  EXPECT_THAT(e.notes,
              Contains("pod group \"default/g\": 4 of the 50 pods it needs fit together, counting "
                       "copies of this pod for those it lacks; then pod \"g-0 (stand-in 4)\" fits "
                       "no node: 0/1 nodes are available: 1 Insufficient cpu."))
      << text;
}

// A group lacking more pods than kMaxStandIns, with room for all of them: that many copies fit,
// and the rest are not tried, so there is no verdict that the group fits, and the answer says
// how far it went.
TEST_F(ExplainBoundsTest, CopiesBeyondTheCapAreNotTriedAndTheAnswerSaysSo) {
  Start();
  for (const char* n : {"n1", "n2", "n3"}) Node(n, "64");
  Group("g", 300);
  explain::Explanation e = scheduler_->dry_runs().Simulate(*Member("g-0", "g", "10m"));
  const std::string text = explain::ToText(e);
  EXPECT_EQ(e.group_stand_ins, explain::kMaxStandIns) << text;
  EXPECT_LE(watcher_->stand_ins(), static_cast<size_t>(explain::kMaxStandIns));
  EXPECT_TRUE(e.hints.empty()) << text;
  EXPECT_THAT(e.notes,
              Contains("pod group \"default/g\" lacks 299 pods: it has 1 of minMember 300"))
      << text;
  EXPECT_THAT(e.notes, Contains("pod group \"default/g\": 257 of the 300 pods it needs fit "
                                "together, counting copies of this pod for 256 of the 299 it "
                                "lacks; explain places at most 256 copies, so whether the other "
                                "43 fit was not checked"))
      << text;
}

// Each dry run takes a second on the injected clock (the watcher steps it); the budget is 5s. The
// group's dry runs stop there and the answer says it was cut short, rather than placing all 49
// copies.
TEST_F(ExplainBoundsTest, AGroupsDryRunsStopAtTheBudgetAndSaySo) {
  auto clock = StartWithDryRunBudget(5s);
  watcher_->StepClock(clock, 1s);
  Node("n1", "64");
  Group("g", 50);
  explain::Explanation e = scheduler_->dry_runs().Simulate(*Member("g-0", "g", "10m"));
  const std::string text = explain::ToText(e);
  EXPECT_TRUE(e.cut_short) << text;
  EXPECT_TRUE(e.hints.empty()) << text;
  // The pod's own dry run stops at the group's gate (Coscheduling's PreFilter, before the
  // watcher's), then the pod and four copies take the five seconds.
  EXPECT_EQ(e.group_stand_ins, 4) << text;
  EXPECT_THAT(e.notes, Contains("the dry runs were cut short at their budget of 5s: the hints "
                                "and notes cover only the checks that ran"))
      << text;
  EXPECT_EQ(explain::ToJson(e)["cutShort"], true);
  EXPECT_THAT(text, HasSubstr("cut short"));
}

// A pod that fits no node, with a change that opens two (explain_test.cc's
// TaintHintTolerationAdmitsThePromisedNodes offers it): with no time left after the pod's own dry
// run, the change is not checked, so not offered, and the answer says it was cut short.
TEST_F(ExplainBoundsTest, HintChecksStopAtTheBudgetAndSaySo) {
  StartWithDryRunBudget(0s);
  for (const char* n : {"g1", "g2"}) {
    informers_.Nodes().Upsert(NodeBuilder(n)
                                  .Capacity("4", "8Gi")
                                  .Taint("dedicated", "gpu", api::TaintEffect::kNoSchedule)
                                  .Build());
  }
  explain::Explanation e =
      scheduler_->dry_runs().Simulate(*PodBuilder("p").Container("100m", "64Mi").Build());
  const std::string text = explain::ToText(e);
  ASSERT_NE(e.attempt, nullptr);
  EXPECT_EQ(e.attempt->outcome, explain::Outcome::kUnschedulable);
  EXPECT_TRUE(e.hints.empty()) << text;
  EXPECT_TRUE(e.cut_short) << text;
  EXPECT_THAT(e.notes, Contains("the dry runs were cut short at their budget of 0s: the hints "
                                "and notes cover only the checks that ran"))
      << text;
}

}  // namespace
}  // namespace berth::scheduler
