#ifndef BERTH_PKG_METRICS_METRICS_H_
#define BERTH_PKG_METRICS_METRICS_H_

// Prometheus metrics with kube-scheduler's (and client-go's) names, types, labels and buckets, so
// dashboards and alerts written for kube-scheduler work unchanged.
//
// Recording is cheap: every hot-path observation goes to a child (a labelled time series) whose
// pointer was resolved once and kept; nothing looks a family up by labels per observation. State
// that the scheduler already holds (queue lengths, cache sizes, informer counters) is read by
// scrape hooks when /metrics is served rather than pushed on every change.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/framework/runtime/framework.h"

namespace berth::metrics {

// prometheus ExponentialBuckets(start, factor, count).
prometheus::Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count);

enum class AttemptResult { kScheduled, kUnschedulable, kError };
inline constexpr int kAttemptResults = 3;
const char* AttemptResultName(AttemptResult result);

// The events whose handling time scheduler_event_handling_duration_seconds reports.
enum class HandledEvent {
  kUnscheduledPodAdd,
  kUnscheduledPodUpdate,
  kUnscheduledPodDelete,
  kAssignedPodAdd,
  kAssignedPodUpdate,
  kAssignedPodDelete,
  kNodeAdd,
  kNodeUpdate,
  kNodeDelete,
  kCount,
};
const char* HandledEventName(HandledEvent event);

// scheduler_pod_scheduling_sli_duration_seconds' "attempts" label: "1".."14", then "15+".
std::string AttemptsLabel(int attempts);

// One profile's per-result children, resolved once.
struct ProfileMetrics {
  std::array<prometheus::Counter*, kAttemptResults> attempts{};
  std::array<prometheus::Histogram*, kAttemptResults> attempt_duration{};
};

struct BuildInfo {
  std::string version;
  std::string git_commit;
};

// Owns the registry and every family. Thread-safe: any method may be called from any thread.
class SchedulerMetrics : public framework::runtime::FrameworkObserver,
                         public framework::PreemptionMetrics {
 public:
  explicit SchedulerMetrics(const BuildInfo& build);
  ~SchedulerMetrics() override;
  SchedulerMetrics(const SchedulerMetrics&) = delete;
  SchedulerMetrics& operator=(const SchedulerMetrics&) = delete;

  // ---- framework::runtime::FrameworkObserver ----
  framework::runtime::ExtensionPointObserver* ForExtensionPoint(
      std::string_view extension_point, const std::string& profile) override;
  framework::runtime::PluginObserver* ForPlugin(std::string_view plugin,
                                                std::string_view extension_point,
                                                const std::string& profile) override;
  void ObservePermitWait(const framework::Status& status, double seconds) override;

  // ---- Scheduler ----
  // Stable for the lifetime of this object.
  const ProfileMetrics& ForProfile(const std::string& profile);
  void ObserveSchedulingAlgorithm(double seconds);
  // A pod was bound: its attempts and the time since its first attempt (the SLI).
  void ObservePodScheduled(int attempts, double sli_seconds);
  void ObserveEventHandling(HandledEvent event, double seconds);
  // scheduler_queue_incoming_pods_total; `queue` is active/backoff/unschedulable/gated.
  void IncomingPod(const char* queue, const std::string& event);
  prometheus::Counter& PreemptionAttempts() { return *preemption_attempts_; }
  prometheus::Histogram& PreemptionVictims() { return *preemption_victims_; }

  // ---- framework::PreemptionMetrics ----
  void ObserveAttempt() override { preemption_attempts_->Increment(); }
  void ObserveVictims(size_t victims) override {
    preemption_victims_->Observe(static_cast<double>(victims));
  }

  // ---- Client ----
  // rest_client_requests_total and rest_client_request_duration_seconds for one apiserver host
  // ("127.0.0.1:6443"). HTTP status 0 (no response) is counted as code "<error>", as client-go.
  client::RequestObserver RequestObserver(const std::string& host);

  // ---- Sampled at scrape time (from hooks) ----
  struct PendingPods {
    size_t active = 0, backoff = 0, unschedulable = 0, gated = 0;
  };
  void SetPendingPods(const PendingPods& pending);
  // (plugin, profile) -> pods in the unschedulable pool that this plugin rejected. Series absent
  // from `counts` are set to 0.
  void SetUnschedulablePods(const std::map<std::pair<std::string, std::string>, size_t>& counts);
  void SetCacheSize(size_t nodes, size_t pods, size_t assumed_pods);
  // Cumulative informer counters: completed LISTs (the first included) and watches opened.
  void SetReflectorCounts(const std::string& resource, uint64_t lists, uint64_t watches);

  // Runs before every scrape, in registration order, on the serving thread.
  void AddScrapeHook(std::function<void()> hook);
  // The Prometheus text exposition of every metric (runs the scrape hooks first).
  std::string Scrape();

  prometheus::Registry& registry() { return *registry_; }

 private:
  class PointObserver;
  class PluginMetrics;
  struct HostMetrics;

  std::shared_ptr<prometheus::Registry> registry_;

  prometheus::Family<prometheus::Histogram>* extension_point_duration_;
  prometheus::Family<prometheus::Histogram>* plugin_duration_;
  prometheus::Family<prometheus::Counter>* plugin_evaluations_;
  prometheus::Family<prometheus::Counter>* schedule_attempts_;
  prometheus::Family<prometheus::Histogram>* attempt_duration_;
  prometheus::Histogram* algorithm_duration_;
  prometheus::Family<prometheus::Histogram>* sli_duration_;
  prometheus::Histogram* pod_attempts_;
  prometheus::Family<prometheus::Gauge>* pending_pods_;
  prometheus::Family<prometheus::Counter>* incoming_pods_;
  prometheus::Family<prometheus::Gauge>* unschedulable_pods_;
  prometheus::Family<prometheus::Histogram>* permit_wait_;
  prometheus::Family<prometheus::Histogram>* event_handling_;
  prometheus::Family<prometheus::Gauge>* cache_size_;
  prometheus::Counter* preemption_attempts_;
  prometheus::Histogram* preemption_victims_;
  prometheus::Family<prometheus::Counter>* rest_requests_;
  prometheus::Family<prometheus::Histogram>* rest_duration_;
  prometheus::Family<prometheus::Counter>* relists_;
  prometheus::Family<prometheus::Counter>* watch_restarts_;

  // Children resolved once at construction.
  std::array<prometheus::Histogram*, static_cast<size_t>(HandledEvent::kCount)> event_children_{};
  std::array<prometheus::Gauge*, 4> pending_children_{};
  std::array<prometheus::Gauge*, 3> cache_children_{};
  std::array<std::atomic<prometheus::Histogram*>, 7> permit_children_{};
  std::array<prometheus::Histogram*, 20> sli_children_{};  // Index: attempts clamped to 1..15.

  std::mutex mu_;  // Guards everything below.
  std::vector<std::unique_ptr<PointObserver>> points_;
  std::vector<std::unique_ptr<PluginMetrics>> plugins_;
  std::map<std::string, std::unique_ptr<ProfileMetrics>> profiles_;
  std::unordered_map<std::string, prometheus::Counter*> incoming_children_;
  std::map<std::pair<std::string, std::string>, prometheus::Gauge*> unschedulable_children_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> reflector_seen_;
  std::vector<std::shared_ptr<HostMetrics>> hosts_;
  std::vector<std::function<void()>> hooks_;
  std::mutex scrape_mu_;  // One scrape at a time; hooks run under it, never under mu_.
};

}  // namespace berth::metrics

#endif  // BERTH_PKG_METRICS_METRICS_H_
