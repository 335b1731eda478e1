#ifndef BERTH_TEST_PERF_EVICTING_CLIENT_H_
#define BERTH_TEST_PERF_EVICTING_CLIENT_H_

// The apiserver of scheduler_bench's preemption workloads: a client that deletes pods as the
// apiserver would and delivers the deletions as the pod informer would.

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>

#include "pkg/client/client.h"
#include "pkg/informer/store.h"
#include "pkg/scheduler/scheduler.h"

namespace berth::perf {

// Evicts a preemption's victims as the apiserver would, and reports each deletion to the
// scheduler before returning, as the pod informer would (the pod store the preemption plugin
// reads first, then the handlers).
class EvictingClient : public client::Client {
 public:
  // Must be called before any pod is deleted; `pods` must not change afterwards.
  void Attach(scheduler::Scheduler* scheduler, informer::Store<api::Pod>* store,
              const std::unordered_map<std::string, api::PodPtr>* pods) {
    scheduler_ = scheduler;
    store_ = store;
    pods_ = pods;
  }
  int deleted() const { return deleted_.load(); }
  // DELETEs of pods already deleted (answered 404).
  int already_gone() const { return already_gone_.load(); }

  void Delete(const std::string& path, const client::DeleteOptions&) override {
    const std::string key = path.substr(std::string_view("/api/v1/namespaces/").size());
    // "<namespace>/pods/<name>" -> "<namespace>/<name>".
    const size_t slash = key.find('/');
    const std::string store_key = key.substr(0, slash) + key.substr(slash + 5);
    auto it = pods_->find(store_key);
    if (it == pods_->end()) {
      std::fprintf(stderr, "preemption deleted a pod the benchmark did not create: %s\n",
                   path.c_str());
      std::abort();
    }
    // As the apiserver answers a DELETE of a pod already gone: the store's removal is the one
    // place that decides which of two such calls came first.
    if (store_->Remove(store_key) == nullptr) {
      already_gone_++;
      throw client::ApiError(client::ErrorReason::kNotFound, 404,
                             "pods \"" + store_key + "\" not found");
    }
    scheduler_->OnPodDelete(it->second);
    deleted_++;
  }
  // The DisruptionTarget condition (and cleared nominations): nothing reads them back here.
  nlohmann::json Patch(const std::string&, const nlohmann::json&, client::PatchType) override {
    return nlohmann::json::object();
  }
  // Coscheduling's status writer lists a gang's pods to count them (GangPreemption workloads); it
  // is told of none, so the status it patches is never read back here either.
  nlohmann::json Get(const std::string& path) override {
    if (path.find("/pods?labelSelector=") == std::string::npos) return Unexpected(path);
    return {{"kind", "PodList"}, {"items", nlohmann::json::array()}};
  }
  client::ListPage ListPageRaw(const std::string& path, const client::ListOptions&,
                               const std::string&) override {
    Unexpected(path);
    return {};
  }
  nlohmann::json Post(const std::string& path, const nlohmann::json&) override {
    return Unexpected(path);
  }
  std::string PostRaw(const std::string& path, const std::string&) override {
    Unexpected(path);
    return {};
  }
  nlohmann::json Put(const std::string& path, const nlohmann::json&) override {
    return Unexpected(path);
  }
  std::unique_ptr<client::WatchStream> Watch(const std::string& path,
                                             const client::WatchOptions&) override {
    Unexpected(path);
    return nullptr;
  }
  const client::Config& config() const override { return config_; }
  void SetRequestObserver(client::RequestObserver) override {}

 private:
  [[noreturn]] static nlohmann::json Unexpected(const std::string& path) {
    std::fprintf(stderr, "unexpected apiserver call in the benchmark: %s\n", path.c_str());
    std::abort();
  }

  scheduler::Scheduler* scheduler_ = nullptr;
  informer::Store<api::Pod>* store_ = nullptr;
  const std::unordered_map<std::string, api::PodPtr>* pods_ = nullptr;
  std::atomic<int> deleted_{0};
  std::atomic<int> already_gone_{0};
  client::Config config_;
};

}  // namespace berth::perf

#endif  // BERTH_TEST_PERF_EVICTING_CLIENT_H_
