// Which workers run a binding cycle, through the whole scheduler without an apiserver: a cycle
// whose PreBind has work must not take a worker that pods ready to bind need.

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "pkg/config/load.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"
#include "test/testing/cluster.h"
#include "test/testing/fake_handle.h"
#include "test/testing/feedback_binder.h"
#include "test/testing/objects.h"

namespace berth::scheduler {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr std::string_view kHeldLabel = "example.com/held";

// PreBind has work only for pods labelled kHeldLabel, and holds them until Release(), as
// VolumeBinding holds a pod while its claims are provisioned.
class HeldPreBind : public framework::PreBindPlugin {
 public:
  std::string_view Name() const override { return "HeldPreBind"; }
  framework::Status PreBindPreFlight(framework::CycleState&, const api::Pod& pod,
                                     const std::string&) override {
    return pod.meta.labels.Contains(kHeldLabel) ? framework::Status() : framework::Status::Skip();
  }
  framework::Status PreBind(framework::CycleState&, const api::Pod& pod,
                            const std::string&) override {
    if (!pod.meta.labels.Contains(kHeldLabel)) return {};
    std::unique_lock lock(mu_);
    holding_++;
    released_cv_.wait(lock, [this] { return released_; });
    holding_--;
    return {};
  }
  int holding() {
    std::lock_guard lock(mu_);
    return holding_;
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    released_cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable released_cv_;
  int holding_ = 0;
  bool released_ = false;
};

class BindingWorkersTest : public ::testing::Test {
 protected:
  void Start(int binding_workers) {
    registry_ = plugins::registry::InTree();
    registry_["FeedbackBinder"] = [this](const nlohmann::json&, framework::Handle&) {
      return binder_;
    };
    registry_["HeldPreBind"] = [this](const nlohmann::json&, framework::Handle&) { return held_; };
    config::Configuration cfg = config::DefaultConfiguration();
    auto& profile = cfg.profiles[0];
    profile.plugins.bind.disabled.push_back({"*", 0});
    profile.plugins.bind.enabled.push_back({"FeedbackBinder", 0});
    profile.plugins.pre_bind.enabled.push_back({"HeldPreBind", 0});
    SchedulerDeps deps;
    deps.informers = &informers_;
    deps.recorder = &recorder_;
    SchedulerOptions options;
    options.binding_workers = binding_workers;
    scheduler_ = std::make_unique<Scheduler>(cfg, registry_, deps, options);
    scheduler_->AddAllEventHandlers();
    scheduler_->Run();
  }
  void TearDown() override {
    held_->Release();
    if (scheduler_) scheduler_->Stop(1s);
  }
  void Pod(const std::string& name, bool held) {
    PodBuilder pod(name);
    if (held) pod.Label(std::string(kHeldLabel), "true");
    informers_.Pods().Upsert(pod.Container("100m", "64Mi").Build());
  }
  bool Bound(const std::string& name) { return binder_->bound().count(name) > 0; }

  informer::SharedInformerFactory informers_{nullptr};
  testing::FakeRecorder recorder_;
  framework::runtime::Registry registry_;
  std::shared_ptr<testing::FeedbackBinder> binder_ =
      std::make_shared<testing::FeedbackBinder>(informers_);
  std::shared_ptr<HeldPreBind> held_ = std::make_shared<HeldPreBind>();
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(BindingWorkersTest, PodsHeldInPreBindLeaveTheBindingWorkersToPodsReadyToBind) {
  Start(/*binding_workers=*/2);
  informers_.Nodes().Upsert(NodeBuilder("n1").Capacity("64", "64Gi").Build());
  for (int i = 0; i < 10; i++) Pod("held-" + std::to_string(i), true);
  ASSERT_TRUE(Eventually([&] { return held_->holding() == 10; }, 10s))
      << held_->holding() << " of 10 held pods reached PreBind";
  Pod("plain", false);
  EXPECT_TRUE(Eventually([&] { return Bound("plain"); }, 5s))
      << "two binding workers, ten pods held in PreBind: a pod ready to bind must not queue "
         "behind them";
  EXPECT_FALSE(Bound("held-0"));
  held_->Release();
  EXPECT_TRUE(Eventually([&] { return binder_->bound().size() == 11; }, 10s));
}

}  // namespace
}  // namespace berth::scheduler
