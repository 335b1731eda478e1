#ifndef BERTH_TEST_TESTING_FAKE_HANDLE_H_
#define BERTH_TEST_TESTING_FAKE_HANDLE_H_

// A framework::Handle for plugin unit tests: a fixed list of NodeInfos as the snapshot, an
// optional client, inline parallelism, and an event recorder that keeps what it was given.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pkg/framework/interface.h"
#include "pkg/informer/factory.h"

namespace berth::testing {

class FakeLister : public framework::NodeInfoLister {
 public:
  explicit FakeLister(std::vector<framework::NodeInfoPtr> nodes = {}) { Set(std::move(nodes)); }
  void Set(std::vector<framework::NodeInfoPtr> nodes) {
    nodes_ = std::move(nodes);
    with_affinity_.clear();
    with_anti_affinity_.clear();
    for (const auto& n : nodes_) {
      if (!n->pods_with_affinity().empty()) with_affinity_.push_back(n);
      if (!n->pods_with_required_anti_affinity().empty()) with_anti_affinity_.push_back(n);
    }
  }
  const std::vector<framework::NodeInfoPtr>& List() const override { return nodes_; }
  const std::vector<framework::NodeInfoPtr>& HavePodsWithAffinityList() const override {
    return with_affinity_;
  }
  const std::vector<framework::NodeInfoPtr>& HavePodsWithRequiredAntiAffinityList() const override {
    return with_anti_affinity_;
  }
  framework::NodeInfoPtr Get(const std::string& name) const override {
    for (const auto& n : nodes_) {
      if (n->name() == name) return n;
    }
    return nullptr;
  }
  bool IsPVCUsedByPods(const std::string& key) const override {
    for (const auto& n : nodes_) {
      for (const auto& [claim, count] : n->pvc_ref_counts()) {
        if (claim == key && count > 0) return true;
      }
    }
    return false;
  }

 private:
  std::vector<framework::NodeInfoPtr> nodes_;
  std::vector<framework::NodeInfoPtr> with_affinity_;
  std::vector<framework::NodeInfoPtr> with_anti_affinity_;
};

struct RecordedEvent {
  // "namespace/name" of the object the event is about; `kind` is "Pod" for pods.
  std::string pod_key;
  std::string kind = "Pod";
  std::string type;
  std::string reason;
  std::string note;
};

class FakeRecorder : public framework::EventRecorder {
 public:
  void Eventf(const api::Pod& regarding, const std::string& type, const std::string& reason,
              const std::string&, const std::string& note) override {
    std::lock_guard lock(mu_);
    events_.push_back({regarding.Key(), "Pod", type, reason, note});
  }
  void Eventf(const api::ObjectReference& regarding, const std::string& type,
              const std::string& reason, const std::string&, const std::string& note) override {
    std::lock_guard lock(mu_);
    events_.push_back(
        {regarding.namespace_ + "/" + regarding.name, regarding.kind, type, reason, note});
  }
  std::vector<RecordedEvent> events() {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::vector<RecordedEvent> events_;
};

// Runs every piece on the calling thread, in order.
class InlineParallelizer : public framework::Parallelizer {
 public:
  void Until(int pieces, const std::function<void(int)>& work,
             const std::atomic<bool>* stop) override {
    for (int i = 0; i < pieces && !(stop && stop->load()); i++) work(i);
  }
  int parallelism() const override { return 1; }
};

class NoNominations : public framework::PodNominator {
 public:
  std::vector<framework::PodInfoPtr> NominatedPodsForNode(const std::string&) const override {
    return {};
  }
  bool HasNominatedPods() const override { return false; }
};

// Counts what a preemption plugin records.
class CountingPreemptionMetrics : public framework::PreemptionMetrics {
 public:
  void ObserveAttempt() override { attempts++; }
  void ObserveVictims(size_t victims) override {
    std::lock_guard lock(mu_);
    victim_counts_.push_back(victims);
  }
  std::vector<size_t> victim_counts() {
    std::lock_guard lock(mu_);
    return victim_counts_;
  }
  std::atomic<int> attempts{0};

 private:
  std::mutex mu_;
  std::vector<size_t> victim_counts_;
};

class FakeHandle : public framework::Handle {
 public:
  explicit FakeHandle(std::vector<framework::NodeInfoPtr> nodes = {},
                      client::Client* client = nullptr)
      : lister_(std::move(nodes)), client_(client) {}

  FakeLister& lister() { return lister_; }
  FakeRecorder& recorder() { return recorder_; }

  const framework::NodeInfoLister& SnapshotSharedLister() const override { return lister_; }
  client::Client* ClientSet() const override { return client_; }
  // Client-less: a test puts objects in with informers().For<T>().Upsert(...).
  informer::SharedInformerFactory& SharedInformerFactory() const override { return informers_; }
  informer::SharedInformerFactory& informers() { return informers_; }
  std::shared_ptr<framework::WaitingPod> GetWaitingPod(const std::string&) override {
    return nullptr;
  }
  void IterateOverWaitingPods(const std::function<void(framework::WaitingPod&)>&) override {}
  void RejectWaitingPod(const std::string&) override {}
  std::string AllowWaitingPods(const std::vector<std::string>& uids, const std::string&) override {
    return uids.empty() ? "" : uids.front();  // No pod waits here.
  }
  framework::EventRecorder& GetEventRecorder() override { return recorder_; }
  framework::Parallelizer& GetParallelizer() override { return parallelizer_; }
  framework::PodNominator& Nominator() override { return nominator_; }
  framework::PreemptionMetrics& GetPreemptionMetrics() override { return preemption_metrics_; }
  CountingPreemptionMetrics& preemption_metrics() { return preemption_metrics_; }
  const std::string& ProfileName() const override { return profile_; }
  bool Stopping() const override { return stopping_.load(); }
  void set_stopping(bool stopping) { stopping_ = stopping; }
  // Records what a plugin asked to activate.
  void Activate(const std::vector<std::string>& pod_uids) override {
    std::lock_guard lock(activated_mu_);
    activated_.insert(activated_.end(), pod_uids.begin(), pod_uids.end());
  }
  std::vector<std::string> activated() {
    std::lock_guard lock(activated_mu_);
    return activated_;
  }
  prometheus::Registry* MetricsRegistry() const override { return nullptr; }

  // A plugin under test that runs the profile's other plugins needs a real Framework; these say
  // so instead of pretending.
  framework::Status RunPreScorePlugins(framework::CycleState&, const api::Pod&,
                                       std::span<const framework::NodeInfo* const>) override {
    return NoRunner();
  }
  framework::Status RunScorePlugins(const framework::CycleState&, const api::Pod&,
                                    std::span<const framework::NodeInfo* const>,
                                    std::vector<framework::NodePluginScores>*) override {
    return NoRunner();
  }
  framework::Status RunFilterPlugins(const framework::CycleState&, const api::Pod&,
                                     const framework::NodeInfo&, int) override {
    return NoRunner();
  }
  framework::Status RunFilterPluginsWithNominatedPods(const framework::CycleState&, const api::Pod&,
                                                      const framework::NodeInfo&, int) override {
    return NoRunner();
  }
  framework::Status RunPreFilterExtensionAddPod(framework::CycleState&, const api::Pod&,
                                                const framework::PodInfo&,
                                                const framework::NodeInfo&) override {
    return NoRunner();
  }
  framework::Status RunPreFilterExtensionRemovePod(framework::CycleState&, const api::Pod&,
                                                   const framework::PodInfo&,
                                                   const framework::NodeInfo&) override {
    return NoRunner();
  }
  // True, so that a plugin asking before a replay still reaches the runners above and their error.
  bool HasActivePreFilterExtensions(const framework::CycleState&) const override { return true; }

 private:
  static framework::Status NoRunner() {
    return framework::Status::Error("FakeHandle runs no plugins; build a Framework");
  }

  FakeLister lister_;
  client::Client* client_;
  mutable informer::SharedInformerFactory informers_{nullptr};
  FakeRecorder recorder_;
  InlineParallelizer parallelizer_;
  NoNominations nominator_;
  std::mutex activated_mu_;
  std::vector<std::string> activated_;
  CountingPreemptionMetrics preemption_metrics_;
  std::string profile_ = "berth-scheduler";
  std::atomic<bool> stopping_{false};
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_FAKE_HANDLE_H_
