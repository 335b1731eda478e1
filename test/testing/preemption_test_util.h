#ifndef BERTH_TEST_TESTING_PREEMPTION_TEST_UTIL_H_
#define BERTH_TEST_TESTING_PREEMPTION_TEST_UTIL_H_

// What the DefaultPreemption tests share: a framework of the default profile (so victims are
// chosen by the real Filter plugins and PreFilter extensions) over a fixed snapshot, with a
// client that records what the preemption asks of the apiserver.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pkg/config/config.h"
#include "pkg/framework/runtime/framework.h"
#include "pkg/framework/runtime/parallelizer.h"
#include "pkg/informer/factory.h"
#include "pkg/plugins/defaultpreemption/defaultpreemption.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/queue/nominator.h"
#include "test/testing/fake_handle.h"
#include "test/testing/objects.h"
#include "test/testing/unused_client.h"

namespace berth::plugins::defaultpreemption::testing {

// Records PATCH and DELETE calls ("PATCH <path> <body>", "DELETE <path>", or with a uid
// precondition "DELETE <path> uid=<uid>"). Deletions may be made to wait until released, or to
// fail; status patches may be made to fail.
class RecordingClient : public berth::testing::UnusedClient {
 public:
  nlohmann::json Patch(const std::string& path, const nlohmann::json& body,
                       client::PatchType) override {
    std::lock_guard lock(mu_);
    calls_.push_back("PATCH " + path + " " + body.dump());
    if (patch_error_ && path.ends_with("/status") && body.contains("metadata")) {
      throw *patch_error_;
    }
    return nlohmann::json::object();
  }
  void Delete(const std::string& path, const client::DeleteOptions& options) override {
    std::function<void(const std::string&)> on_delete;
    {
      std::unique_lock lock(mu_);
      calls_.push_back(
          "DELETE " + path +
          (options.precondition_uid.empty() ? "" : " uid=" + options.precondition_uid));
      cv_.wait(lock, [this] { return !hold_; });
      if (delete_error_) throw *delete_error_;
      on_delete = on_delete_;
    }
    if (on_delete) on_delete(path);
  }

  std::vector<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  void Hold(bool hold) {
    {
      std::lock_guard lock(mu_);
      hold_ = hold;
    }
    cv_.notify_all();
  }
  // Every deletion throws `error` (by default a 500).
  void FailDeletes(client::ApiError error = client::ApiError(client::ErrorReason::kInternalError,
                                                             500, "injected")) {
    std::lock_guard lock(mu_);
    delete_error_ = std::move(error);
  }
  // Every patch of a pod's status that carries metadata (the DisruptionTarget condition's) throws
  // `error`.
  void FailConditionPatches(client::ApiError error) {
    std::lock_guard lock(mu_);
    patch_error_ = std::move(error);
  }
  // Called after a deletion succeeded, with the pod's path.
  void OnDelete(std::function<void(const std::string&)> fn) {
    std::lock_guard lock(mu_);
    on_delete_ = std::move(fn);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> calls_;
  bool hold_ = false;
  std::optional<client::ApiError> delete_error_;
  std::optional<client::ApiError> patch_error_;
  std::function<void(const std::string&)> on_delete_;
};

// A pod of `priority` asking for `cpu`, bound to `node` when one is given, with the start time and
// app label given.
inline api::PodPtr Pod(const std::string& name, const std::string& cpu, int32_t priority,
                       const std::string& node = "", const std::string& start = "",
                       const std::string& app = "") {
  berth::testing::PodBuilder b(name);
  b.Container(cpu, "64Mi").Priority(priority).Node(node);
  if (!app.empty()) b.Label("app", app);
  b.pod().status.start_time = start;
  return b.Build();
}

inline framework::PodInfoPtr Info(const api::PodPtr& pod) {
  return std::make_shared<framework::PodInfo>(pod);
}

inline api::PodDisruptionBudgetPtr Pdb(const std::string& name, const std::string& app,
                                       int32_t allowed, std::vector<std::string> disrupted = {},
                                       const std::string& ns = "default") {
  auto pdb = std::make_shared<api::PodDisruptionBudget>();
  pdb->meta.name = name;
  pdb->meta.namespace_ = ns;
  api::Requirement r;
  r.key = "app";
  r.op = api::SelectorOperator::kIn;
  r.values = {app};
  pdb->spec.selector.emplace().requirements.push_back(r);
  pdb->status.disruptions_allowed = allowed;
  pdb->status.disrupted_pods = std::move(disrupted);
  return pdb;
}

// A framework of the default profile over `nodes`, its DefaultPreemption built with a fixed dry
// run offset, and the scheduling cycle of a pod that fits no node run through it.
class Fixture {
 public:
  // `args`: DefaultPreemption's pluginConfig args.
  void Build(std::vector<framework::NodeInfoPtr> nodes, nlohmann::json args = nullptr) {
    nodes_ = std::move(nodes);
    lister_.Set(nodes_);
    for (const auto& node : nodes_) {
      for (const auto& pod : node->pods()) {
        informers_.For<api::Pod>().store().Upsert(pod->pod->Key(), pod->pod);
      }
    }
    framework::runtime::Registry registry = registry::InTree();
    registry[std::string(kName)] = [this](const nlohmann::json& a, framework::Handle& handle) {
      auto plugin = std::make_shared<DefaultPreemption>(
          ParseArgs(a), handle, handle.SharedInformerFactory().ListerFor<api::Pod>(),
          handle.SharedInformerFactory().ListerFor<api::PodDisruptionBudget>(),
          [this](int32_t n) { return offset_ % n; });
      plugin_ = plugin.get();
      return plugin;
    };
    config::Profile profile = config::DefaultConfiguration().profiles.front();
    if (!args.is_null()) profile.plugin_config.push_back({std::string(kName), args});
    framework::runtime::FrameworkDeps deps;
    deps.snapshot = &lister_;
    deps.client = &client_;
    deps.informer_factory = &informers_;
    deps.recorder = &recorder_;
    deps.parallelizer = &pool_;
    deps.nominator = &nominator_;
    deps.waiting_pods = waiting_;
    deps.preemption_metrics = &metrics_;
    deps.activate = [this](const std::vector<std::string>& uids) {
      std::lock_guard lock(mu_);
      activated_.insert(activated_.end(), uids.begin(), uids.end());
    };
    fwk_ = std::make_unique<framework::runtime::Framework>(registry, profile, deps);
  }

  // PreFilter, then Filter on every node, then PostFilter, as for a pod that fit no node.
  framework::Status Cycle(const api::PodPtr& pod, framework::PostFilterResult* result) {
    informers_.For<api::Pod>().store().Upsert(pod->Key(), pod);
    framework::CycleState state;
    framework::PreFilterResult pre;
    framework::Status s = fwk_->RunPreFilterPlugins(state, *pod, nodes_, &pre);
    if (!s.IsSuccess()) return s;
    framework::NodeToStatus statuses;
    for (const auto& node : nodes_) {
      framework::Status f = fwk_->RunFilterPluginsWithNominatedPods(state, *pod, *node);
      if (!f.IsSuccess()) statuses.Set(node->name(), std::move(f));
    }
    return fwk_->RunPostFilterPlugins(state, *pod, statuses, result);
  }

  std::vector<std::string> activated() {
    std::lock_guard lock(mu_);
    return activated_;
  }

  int32_t offset_ = 0;
  std::vector<framework::NodeInfoPtr> nodes_;
  berth::testing::FakeLister lister_;
  queue::Nominator nominator_;
  framework::runtime::WorkerPool pool_{4};
  informer::SharedInformerFactory informers_{nullptr};
  berth::testing::FakeRecorder recorder_;
  RecordingClient client_;
  std::shared_ptr<framework::runtime::WaitingPods> waiting_ =
      std::make_shared<framework::runtime::WaitingPods>();
  berth::testing::CountingPreemptionMetrics metrics_;
  std::mutex mu_;
  std::vector<std::string> activated_;
  DefaultPreemption* plugin_ = nullptr;
  // Last: destroyed first, so the executor's tasks end while what they use still exists.
  std::unique_ptr<framework::runtime::Framework> fwk_;
};

}  // namespace berth::plugins::defaultpreemption::testing

#endif  // BERTH_TEST_TESTING_PREEMPTION_TEST_UTIL_H_
