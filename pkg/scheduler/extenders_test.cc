// The scheduler with extenders, in-process (a fake framework::Extender; pkg/extender's tests cover
// the HTTP side and e2e/extender_diff_e2e_test.cc compares whole runs with kube-scheduler).

#include "pkg/scheduler/extenders.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "pkg/config/config.h"
#include "pkg/explain/record.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"

namespace berth::scheduler {
namespace {

using namespace std::chrono_literals;
using framework::Status;
using testing::NodeBuilder;
using testing::PodBuilder;

// Answers from tables: nodes to reject (with reasons), scores, errors. Thread-safe.
class FakeExtender : public framework::Extender {
 public:
  explicit FakeExtender(const std::string& name) : name_(name) {}
  const framework::PluginName& Name() const override { return name_; }
  bool IsFilter() const override { return true; }
  bool IsPrioritizer() const override { return weight > 0; }
  bool IsBinder() const override { return binds; }
  bool SupportsPreemption() const override { return false; }
  bool IsIgnorable() const override { return ignorable; }
  int64_t Weight() const override { return weight; }
  bool IsInterested(const api::Pod& pod) const override {
    return !pod.meta.labels.Contains("not-for-extenders");
  }
  Status Filter(const api::Pod& pod, std::span<const framework::NodeInfo* const> nodes,
                FilterResult* out) const override {
    std::lock_guard lock(mu_);
    filtered.push_back(pod.meta.name);
    if (!error.empty()) return Status::Error(error);
    for (const framework::NodeInfo* n : nodes) {
      if (auto it = failed.find(n->name()); it != failed.end()) {
        out->failed.emplace_back(n->name(), it->second);
      } else if (auto u = unresolvable.find(n->name()); u != unresolvable.end()) {
        out->failed_and_unresolvable.emplace_back(n->name(), u->second);
      } else {
        out->feasible.push_back(n);
      }
    }
    return {};
  }
  class Scores : public PendingScores {
   public:
    explicit Scores(std::vector<framework::ExtenderScore> s) : s_(std::move(s)) {}
    Status Wait(std::vector<framework::ExtenderScore>* out) override {
      *out = s_;
      return {};
    }

   private:
    std::vector<framework::ExtenderScore> s_;
  };
  std::unique_ptr<PendingScores> StartPrioritize(
      const api::Pod&, std::span<const framework::NodeInfo* const> nodes) const override {
    std::vector<framework::ExtenderScore> out;
    for (const framework::NodeInfo* n : nodes) {
      auto it = scores.find(n->name());
      out.push_back({n->name(), it == scores.end() ? 0 : it->second});
    }
    return std::make_unique<Scores>(std::move(out));
  }
  Status ProcessPreemption(const api::Pod&,
                           const std::map<std::string, framework::ExtenderVictims>&,
                           const framework::NodeInfoLister&,
                           std::map<std::string, framework::ExtenderVictims>*) const override {
    return Status::Error("not supported");
  }
  Status Bind(const api::Pod& pod, const std::string& node) const override {
    std::lock_guard lock(mu_);
    bound[pod.Key()] = node;
    return {};
  }

  framework::PluginName name_;
  std::map<std::string, std::string, std::less<>> failed, unresolvable;
  std::map<std::string, int64_t, std::less<>> scores;
  std::string error;
  bool ignorable = false;
  bool binds = false;
  int64_t weight = 0;
  mutable std::mutex mu_;
  mutable std::vector<std::string> filtered;
  mutable std::map<std::string, std::string> bound;
};

class RecordingBinder : public framework::BindPlugin {
 public:
  std::string_view Name() const override { return "RecordingBinder"; }
  Status Bind(framework::CycleState&, const api::Pod& pod, const std::string& node) override {
    std::lock_guard lock(mu_);
    bound[pod.Key()] = node;
    return {};
  }
  std::mutex mu_;
  std::map<std::string, std::string> bound;
};

class ExtenderSchedulingTest : public ::testing::Test {
 protected:
  void Start(Extenders extenders) {
    registry_ = plugins::registry::InTree();
    registry_["RecordingBinder"] = [this](const nlohmann::json&, framework::Handle&) {
      return binder_;
    };
    config::Configuration cfg = config::DefaultConfiguration();
    cfg.profiles[0].plugins.bind.disabled.push_back({"*", 0});
    cfg.profiles[0].plugins.bind.enabled.push_back({"RecordingBinder", 0});
    SchedulerDeps deps;
    deps.recorder = &recorder_;
    deps.extenders = std::move(extenders);
    SchedulerOptions options;
    options.seed = 3;
    scheduler_ = std::make_unique<Scheduler>(cfg, registry_, deps, options);
    for (const char* n : {"a", "b", "c"}) {
      scheduler_->OnNodeAdd(NodeBuilder(n).Capacity("4", "8Gi").Build());
    }
  }
  void Drain() {
    while (scheduler_->queue().PendingPods().active > 0) scheduler_->ScheduleOne();
    for (int i = 0; i < 500 && scheduler_->InFlightBindings() > 0; i++) {
      std::this_thread::sleep_for(5ms);
    }
  }
  std::string Bound(const std::string& pod) {
    std::lock_guard lock(binder_->mu_);
    auto it = binder_->bound.find("default/" + pod);
    return it == binder_->bound.end() ? "" : it->second;
  }
  // The pod's FailedScheduling message (sent from a background worker).
  std::string Failure(const std::string& pod) {
    for (int i = 0; i < 300; i++) {
      for (const auto& e : recorder_.events()) {
        if (e.reason == "FailedScheduling" && e.pod_key == "default/" + pod) return e.note;
      }
      std::this_thread::sleep_for(10ms);
    }
    return "";
  }

  std::shared_ptr<RecordingBinder> binder_ = std::make_shared<RecordingBinder>();
  framework::runtime::Registry registry_;
  testing::FakeRecorder recorder_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(ExtenderSchedulingTest, TheExtendersRejectionsAreTheFitErrorsReasons) {
  auto ext = std::make_shared<FakeExtender>("http://ext");
  ext->failed = {{"a", "no gpu left"}, {"b", "no gpu left"}};
  ext->unresolvable = {{"c", "no gpu ever"}};
  Start({ext});
  scheduler_->OnPodAdd(PodBuilder("p").Container("1", "1Gi").Build());
  Drain();
  EXPECT_EQ(Bound("p"), "");
  // The pod had nothing to preempt for on the two resolvable nodes.
  EXPECT_EQ(Failure("p"),
            "0/3 nodes are available: 1 no gpu ever, 2 no gpu left. preemption: 0/3 nodes are "
            "available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found "
            "for incoming pod.");
  // The record of the attempt shows the extender's verdicts, under its name.
  const auto attempt = scheduler_->attempts().Find("default/p");
  ASSERT_NE(attempt, nullptr);
  bool named = false;
  for (const auto& group : attempt->groups) named = named || group.plugin == "http://ext";
  EXPECT_TRUE(named);
}

// Explain asks the extender again, as a cycle would: its rejections are per-node verdicts under its
// name, a pod it keeps out fits nowhere, and once it relents the pod fits.
TEST_F(ExtenderSchedulingTest, ExplainShowsTheExtendersVerdictsPerNodeAndAsksItAgain) {
  auto ext = std::make_shared<FakeExtender>("http://ext");
  ext->failed = {{"a", "no gpu left"}, {"b", "no gpu left"}};
  ext->unresolvable = {{"c", "no gpu ever"}};
  Start({ext});
  scheduler_->OnPodAdd(PodBuilder("p").Container("1", "1Gi").Build());
  Drain();
  ASSERT_EQ(Bound("p"), "");
  ASSERT_NE(Failure("p"), "");  // The attempt's record is kept by then.
  auto e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->feasible_now, 0) << "the extender still rejects every node";
  std::map<std::string, std::string> reason_of;
  for (const auto& group : e->attempt->groups) {
    if (group.plugin != "http://ext") continue;
    for (const auto& node : group.examples) reason_of[node] = group.reasons.at(0);
  }
  EXPECT_EQ(reason_of, (std::map<std::string, std::string>{
                           {"a", "no gpu left"}, {"b", "no gpu left"}, {"c", "no gpu ever"}}));
  const std::string text = explain::ToText(*e);
  EXPECT_NE(text.find("http://ext"), std::string::npos) << text;
  EXPECT_NE(text.find("no gpu ever"), std::string::npos) << text;

  // The extender now keeps b: the dry run asks it again rather than replaying the attempt.
  {
    std::lock_guard lock(ext->mu_);
    ext->failed.erase("b");
  }
  e = scheduler_->dry_runs().Explain("default/p");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->feasible_now, 1);
}

TEST_F(ExtenderSchedulingTest, AWeightedExtenderScoreDecidesBetweenEqualNodes) {
  auto ext = std::make_shared<FakeExtender>("http://ext");
  ext->weight = 2;
  ext->scores = {{"b", 10}, {"a", 1}, {"c", 1}};
  Start({ext});
  scheduler_->OnPodAdd(PodBuilder("p").Container("1", "1Gi").Build());
  Drain();
  EXPECT_EQ(Bound("p"), "b");
  const auto attempt = scheduler_->attempts().Find("default/p");
  ASSERT_NE(attempt, nullptr);
  ASSERT_FALSE(attempt->scores.empty());
  bool scored = false;
  for (const auto& p : attempt->scores[0].plugins) {
    if (p.plugin != "http://ext") continue;
    scored = true;
    EXPECT_EQ(p.weight, 2);
    EXPECT_EQ(p.weighted, 200);  // 10 x weight 2 x (100 / 10).
  }
  EXPECT_TRUE(scored);
}

TEST_F(ExtenderSchedulingTest, ExtremeExtenderScoresSaturateInsteadOfOverflowing) {
  // score x weight x 10 and the node's total would overflow int64 for these: they saturate, so
  // the highest score still wins and the lowest still loses.
  auto ext = std::make_shared<FakeExtender>("http://ext");
  ext->weight = std::numeric_limits<int64_t>::max();
  ext->scores = {{"a", std::numeric_limits<int64_t>::min()},
                 {"b", std::numeric_limits<int64_t>::max()},
                 {"c", -1}};
  Start({ext});
  scheduler_->OnPodAdd(PodBuilder("p").Container("1", "1Gi").Build());
  Drain();
  EXPECT_EQ(Bound("p"), "b");
  const auto attempt = scheduler_->attempts().Find("default/p");
  ASSERT_NE(attempt, nullptr);
  ASSERT_FALSE(attempt->scores.empty());
  EXPECT_EQ(attempt->scores[0].total, std::numeric_limits<int64_t>::max());
}

TEST_F(ExtenderSchedulingTest, AFailingExtenderIsSkippedOnlyWhenIgnorable) {
  auto ext = std::make_shared<FakeExtender>("http://ext");
  ext->error = "Post \"http://ext/filter\": EOF";
  ext->ignorable = true;
  Start({ext});
  scheduler_->OnPodAdd(PodBuilder("p").Container("1", "1Gi").Build());
  Drain();
  EXPECT_NE(Bound("p"), "");

  auto strict = std::make_shared<FakeExtender>("http://strict");
  strict->error = "Post \"http://strict/filter\": EOF";
  Start({strict});
  scheduler_->OnPodAdd(PodBuilder("q").Container("1", "1Gi").Build());
  Drain();
  EXPECT_EQ(Bound("q"), "");
  EXPECT_EQ(Failure("q"), "Post \"http://strict/filter\": EOF");
}

TEST_F(ExtenderSchedulingTest, ABinderExtenderBindsInsteadOfTheBindPlugins) {
  auto ext = std::make_shared<FakeExtender>("http://ext");
  ext->binds = true;
  Start({ext});
  scheduler_->OnPodAdd(PodBuilder("p").Container("1", "1Gi").Build());
  scheduler_->OnPodAdd(
      PodBuilder("mine").Label("not-for-extenders", "").Container("1", "1Gi").Build());
  Drain();
  EXPECT_EQ(Bound("p"), "");
  EXPECT_EQ(ext->bound.count("default/p"), 1u);
  // A pod the extender is not interested in is neither filtered nor bound by it.
  EXPECT_NE(Bound("mine"), "");
  EXPECT_EQ(std::count(ext->filtered.begin(), ext->filtered.end(), "mine"), 0);
}

}  // namespace
}  // namespace berth::scheduler
