#ifndef BERTH_TEST_TESTING_FEEDBACK_BINDER_H_
#define BERTH_TEST_TESTING_FEEDBACK_BINDER_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "pkg/framework/interface.h"
#include "pkg/informer/factory.h"

namespace berth::testing {

// A Bind plugin that stands in for the binding subresource in whole-scheduler tests without an
// apiserver: it records the placement and sends the bound pod back through the informer, as the
// watch would. Thread-safe.
class FeedbackBinder : public framework::BindPlugin {
 public:
  explicit FeedbackBinder(informer::SharedInformerFactory& informers) : informers_(informers) {}
  std::string_view Name() const override { return "FeedbackBinder"; }
  framework::Status Bind(framework::CycleState&, const api::Pod& pod,
                         const std::string& node) override {
    auto bound = std::make_shared<api::Pod>(pod);
    bound->spec.node_name = node;
    {
      std::lock_guard lock(mu_);
      bound_[pod.meta.name] = node;
    }
    informers_.Pods().Upsert(bound);
    return {};
  }
  // Pod name to node.
  std::map<std::string, std::string> bound() {
    std::lock_guard lock(mu_);
    return bound_;
  }

 private:
  informer::SharedInformerFactory& informers_;
  std::mutex mu_;
  std::map<std::string, std::string> bound_;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_FEEDBACK_BINDER_H_
