#ifndef BERTH_TEST_TESTING_INFORMER_SCHEDULER_H_
#define BERTH_TEST_TESTING_INFORMER_SCHEDULER_H_

// The whole scheduler (queue, scheduling thread, binding cycles) without an apiserver, as a test
// fixture: nodes, pods and PodGroups reach it through client-less informers, and FeedbackBinder
// stands in for the binding subresource, sending each bound pod back as the watch would.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "pkg/config/load.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/scheduler.h"
#include "test/testing/fake_handle.h"
#include "test/testing/feedback_binder.h"

namespace berth::testing {

class InformerSchedulerTest : public ::testing::Test {
 protected:
  // Builds the scheduler from `cfg` with FeedbackBinder as the first profile's only Bind plugin,
  // on this fixture's informers and recorder (the rest of `deps` as given), registers its event
  // handlers and, when `run`, starts its threads.
  void StartScheduler(config::Configuration cfg, scheduler::SchedulerDeps deps = {},
                      scheduler::SchedulerOptions options = {}, bool run = true) {
    registry_ = plugins::registry::InTree();
    registry_["FeedbackBinder"] = [this](const nlohmann::json&, framework::Handle&) {
      return binder_;
    };
    auto& bind = cfg.profiles[0].plugins.bind;
    bind.disabled.push_back({"*", 0});
    bind.enabled.push_back({"FeedbackBinder", 0});
    deps.informers = &informers_;
    deps.recorder = &recorder_;
    scheduler_ = std::make_unique<scheduler::Scheduler>(cfg, registry_, std::move(deps), options);
    scheduler_->AddAllEventHandlers();
    if (run) scheduler_->Run();
  }
  void TearDown() override {
    if (scheduler_) scheduler_->Stop(std::chrono::seconds(1));
  }

  // How many pods whose name starts with `prefix` are bound.
  int Bound(const std::string& prefix) {
    int n = 0;
    for (const auto& [pod, node] : binder_->bound()) n += pod.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }
  // Whether an event about a `kind` object (about pod `pod` of the default namespace, when given)
  // says `part`.
  bool EventSays(const std::string& kind, const std::string& part, const std::string& pod = "") {
    for (const auto& e : recorder_.events()) {
      if (e.kind != kind || (!pod.empty() && e.pod_key != "default/" + pod)) continue;
      if (e.note.find(part) != std::string::npos) return true;
    }
    return false;
  }

  informer::SharedInformerFactory informers_{nullptr};
  FakeRecorder recorder_;
  std::shared_ptr<FeedbackBinder> binder_ = std::make_shared<FeedbackBinder>(informers_);
  framework::runtime::Registry registry_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_INFORMER_SCHEDULER_H_
