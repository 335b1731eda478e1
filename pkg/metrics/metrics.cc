#include "pkg/metrics/metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <sstream>

namespace berth::metrics {
namespace {

constexpr int kNumCodes = 7;  // framework::Code values.
constexpr int kMaxAttemptsLabel = 15;

const prometheus::Histogram::BucketBoundaries& RestClientBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};
  return kBuckets;
}

size_t CodeIndex(const framework::Status& status) {
  return std::min<size_t>(static_cast<size_t>(status.code()), kNumCodes - 1);
}

// Resolves the child for `code` once; later calls are one atomic load, and the labels are built
// only then (per-plugin durations are observed per node, so building them per call was costly).
// Racing first calls resolve the same child (Family::Add returns the existing series for equal
// labels).
template <typename MakeLabels>
prometheus::Histogram* ChildFor(std::atomic<prometheus::Histogram*>& slot,
                                prometheus::Family<prometheus::Histogram>& family,
                                const MakeLabels& make_labels,
                                const prometheus::Histogram::BucketBoundaries& buckets) {
  prometheus::Histogram* child = slot.load(std::memory_order_acquire);
  if (child) return child;
  child = &family.Add(make_labels(), buckets);
  slot.store(child, std::memory_order_release);
  return child;
}

}  // namespace

prometheus::Histogram::BucketBoundaries ExponentialBuckets(double start, double factor, int count) {
  prometheus::Histogram::BucketBoundaries out;
  out.reserve(count);
  double next = start;
  for (int i = 0; i < count; i++) {
    out.push_back(next);
    next *= factor;
  }
  return out;
}

const char* AttemptResultName(AttemptResult result) {
  switch (result) {
    case AttemptResult::kScheduled:
      return "scheduled";
    case AttemptResult::kUnschedulable:
      return "unschedulable";
    case AttemptResult::kError:
      return "error";
  }
  return "error";
}

const char* HandledEventName(HandledEvent event) {
  switch (event) {
    case HandledEvent::kUnscheduledPodAdd:
      return "UnscheduledPodAdd";
    case HandledEvent::kUnscheduledPodUpdate:
      return "UnscheduledPodUpdate";
    case HandledEvent::kUnscheduledPodDelete:
      return "UnscheduledPodDelete";
    case HandledEvent::kAssignedPodAdd:
      return "AssignedPodAdd";
    case HandledEvent::kAssignedPodUpdate:
      return "AssignedPodUpdate";
    case HandledEvent::kAssignedPodDelete:
      return "AssignedPodDelete";
    case HandledEvent::kNodeAdd:
      return "NodeAdd";
    case HandledEvent::kNodeUpdate:
      return "NodeUpdate";
    case HandledEvent::kNodeDelete:
      return "NodeDelete";
    case HandledEvent::kCount:
      break;
  }
  return "Unknown";
}

std::string AttemptsLabel(int attempts) {
  if (attempts >= kMaxAttemptsLabel) return std::to_string(kMaxAttemptsLabel) + "+";
  return std::to_string(std::max(attempts, 1));
}

// scheduler_framework_extension_point_duration_seconds for one (extension point, profile).
class SchedulerMetrics::PointObserver : public framework::runtime::ExtensionPointObserver {
 public:
  PointObserver(prometheus::Family<prometheus::Histogram>* family, std::string point,
                std::string profile)
      : family_(family), point_(std::move(point)), profile_(std::move(profile)) {}

  void Observe(const framework::Status& status, double seconds) override {
    size_t code = CodeIndex(status);
    static const auto kBuckets = ExponentialBuckets(0.0001, 2, 12);
    ChildFor(
        children_[code], *family_,
        [&]() -> prometheus::Labels {
          return {{"extension_point", point_},
                  {"status", framework::CodeName(status.code())},
                  {"profile", profile_}};
        },
        kBuckets)
        ->Observe(seconds);
  }

  const std::string& point() const { return point_; }
  const std::string& profile() const { return profile_; }

 private:
  prometheus::Family<prometheus::Histogram>* family_;
  const std::string point_;
  const std::string profile_;
  std::array<std::atomic<prometheus::Histogram*>, kNumCodes> children_{};
};

// scheduler_plugin_execution_duration_seconds and scheduler_plugin_evaluation_total for one
// (plugin, extension point, profile).
class SchedulerMetrics::PluginMetrics : public framework::runtime::PluginObserver {
 public:
  PluginMetrics(prometheus::Family<prometheus::Histogram>* durations,
                prometheus::Counter* evaluations, std::string plugin, std::string point,
                std::string profile)
      : durations_(durations),
        evaluations_(evaluations),
        plugin_(std::move(plugin)),
        point_(std::move(point)),
        profile_(std::move(profile)) {}

  void ObserveDuration(const framework::Status& status, double seconds) override {
    static const auto kBuckets = ExponentialBuckets(0.00001, 1.5, 20);
    ChildFor(
        children_[CodeIndex(status)], *durations_,
        [&]() -> prometheus::Labels {
          return {{"plugin", plugin_},
                  {"extension_point", point_},
                  {"status", framework::CodeName(status.code())}};
        },
        kBuckets)
        ->Observe(seconds);
  }
  void AddEvaluations(uint64_t count) override {
    if (evaluations_) evaluations_->Increment(static_cast<double>(count));
  }

  bool Is(std::string_view plugin, std::string_view point, std::string_view profile) const {
    return plugin_ == plugin && point_ == point && profile_ == profile;
  }

 private:
  prometheus::Family<prometheus::Histogram>* durations_;
  prometheus::Counter* evaluations_;  // Null where upstream does not count evaluations.
  const std::string plugin_;
  const std::string point_;
  const std::string profile_;
  std::array<std::atomic<prometheus::Histogram*>, kNumCodes> children_{};
};

struct SchedulerMetrics::HostMetrics {
  std::string host;
  // Requests by (HTTP method, code) and durations by method; few distinct values, resolved on
  // first use under the mutex.
  std::mutex mu;
  std::map<std::pair<std::string, int>, prometheus::Counter*> requests;
  std::map<std::string, prometheus::Histogram*> durations;
};

SchedulerMetrics::SchedulerMetrics(const BuildInfo& build)
    : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  extension_point_duration_ =
      &prometheus::BuildHistogram()
           .Name("scheduler_framework_extension_point_duration_seconds")
           .Help("Time to run all plugins of one extension point, in seconds.")
           .Register(r);
  plugin_duration_ =
      &prometheus::BuildHistogram()
           .Name("scheduler_plugin_execution_duration_seconds")
           .Help(
               "Time to run one plugin at one extension point, in seconds "
               "(recorded in a sample of scheduling cycles and, at Filter and Score, of nodes).")
           .Register(r);
  plugin_evaluations_ = &prometheus::BuildCounter()
                             .Name("scheduler_plugin_evaluation_total")
                             .Help(
                                 "Number of times each plugin ran at PreFilter, Filter, "
                                 "PreScore and Score.")
                             .Register(r);
  schedule_attempts_ = &prometheus::BuildCounter()
                            .Name("scheduler_schedule_attempts_total")
                            .Help(
                                "Scheduling attempts by result (scheduled, unschedulable, "
                                "error).")
                            .Register(r);
  attempt_duration_ = &prometheus::BuildHistogram()
                           .Name("scheduler_scheduling_attempt_duration_seconds")
                           .Help(
                               "Scheduling attempt latency in seconds (scheduling algorithm "
                               "plus binding).")
                           .Register(r);
  algorithm_duration_ = &prometheus::BuildHistogram()
                             .Name("scheduler_scheduling_algorithm_duration_seconds")
                             .Help("Scheduling algorithm latency in seconds.")
                             .Register(r)
                             .Add({}, ExponentialBuckets(0.001, 2, 15));
  sli_duration_ = &prometheus::BuildHistogram()
                       .Name("scheduler_pod_scheduling_sli_duration_seconds")
                       .Help(
                           "Seconds from a pod's first scheduling attempt until it is bound, "
                           "by number of attempts.")
                       .Register(r);
  pod_attempts_ = &prometheus::BuildHistogram()
                       .Name("scheduler_pod_scheduling_attempts")
                       .Help("Number of attempts it took to schedule a pod.")
                       .Register(r)
                       .Add({}, ExponentialBuckets(1, 2, 5));
  pending_pods_ = &prometheus::BuildGauge()
                       .Name("scheduler_pending_pods")
                       .Help("Pending pods by queue: active, backoff, unschedulable, gated.")
                       .Register(r);
  incoming_pods_ = &prometheus::BuildCounter()
                        .Name("scheduler_queue_incoming_pods_total")
                        .Help(
                            "Pods added to a scheduling queue, by queue and by the event that "
                            "moved them.")
                        .Register(r);
  unschedulable_pods_ = &prometheus::BuildGauge()
                             .Name("scheduler_unschedulable_pods")
                             .Help("Unschedulable pods by the plugin that rejected them.")
                             .Register(r);
  permit_wait_ = &prometheus::BuildHistogram()
                      .Name("scheduler_permit_wait_duration_seconds")
                      .Help("Time pods spent waiting at Permit, in seconds.")
                      .Register(r);
  event_handling_ = &prometheus::BuildHistogram()
                         .Name("scheduler_event_handling_duration_seconds")
                         .Help("Time to handle one cluster event, in seconds.")
                         .Register(r);
  cache_size_ = &prometheus::BuildGauge()
                     .Name("scheduler_cache_size")
                     .Help("Nodes, pods and assumed pods in the scheduler cache.")
                     .Register(r);
  preemption_attempts_ = &prometheus::BuildCounter()
                              .Name("scheduler_preemption_attempts_total")
                              .Help("Preemption attempts.")
                              .Register(r)
                              .Add({});
  preemption_victims_ = &prometheus::BuildHistogram()
                             .Name("scheduler_preemption_victims")
                             .Help("Number of victims chosen by a preemption.")
                             .Register(r)
                             .Add({}, ExponentialBuckets(1, 2, 7));
  rest_requests_ = &prometheus::BuildCounter()
                        .Name("rest_client_requests_total")
                        .Help("HTTP requests to the apiserver, by status code, method and host.")
                        .Register(r);
  rest_duration_ = &prometheus::BuildHistogram()
                        .Name("rest_client_request_duration_seconds")
                        .Help("Apiserver request latency in seconds, by verb and host.")
                        .Register(r);
  relists_ = &prometheus::BuildCounter()
                  .Name("berth_informer_relists_total")
                  .Help(
                      "LISTs an informer made after its first one (after a 410 Gone or a "
                      "failed watch), by resource.")
                  .Register(r);
  watch_restarts_ = &prometheus::BuildCounter()
                         .Name("berth_informer_watch_restarts_total")
                         .Help("Watches an informer reopened after its first one, by resource.")
                         .Register(r);
  prometheus::BuildGauge()
      .Name("berth_build_info")
      .Help("Always 1; the labels say which build is running.")
      .Register(r)
      .Add({{"version", build.version}, {"git_commit", build.git_commit}})
      .Set(1);

  const auto event_buckets = ExponentialBuckets(0.0001, 2, 12);
  for (size_t i = 0; i < event_children_.size(); i++) {
    event_children_[i] = &event_handling_->Add(
        {{"event", HandledEventName(static_cast<HandledEvent>(i))}}, event_buckets);
  }
  const char* queues[] = {"active", "backoff", "unschedulable", "gated"};
  for (size_t i = 0; i < pending_children_.size(); i++) {
    pending_children_[i] = &pending_pods_->Add({{"queue", queues[i]}});
  }
  const char* types[] = {"nodes", "pods", "assumed_pods"};
  for (size_t i = 0; i < cache_children_.size(); i++) {
    cache_children_[i] = &cache_size_->Add({{"type", types[i]}});
  }
  const auto sli_buckets = ExponentialBuckets(0.01, 2, 20);
  for (int attempts = 1; attempts <= kMaxAttemptsLabel; attempts++) {
    sli_children_[attempts] =
        &sli_duration_->Add({{"attempts", AttemptsLabel(attempts)}}, sli_buckets);
  }
}

SchedulerMetrics::~SchedulerMetrics() = default;

framework::runtime::ExtensionPointObserver* SchedulerMetrics::ForExtensionPoint(
    std::string_view extension_point, const std::string& profile) {
  std::lock_guard lock(mu_);
  for (const auto& p : points_) {
    if (p->point() == extension_point && p->profile() == profile) return p.get();
  }
  points_.push_back(std::make_unique<PointObserver>(extension_point_duration_,
                                                    std::string(extension_point), profile));
  return points_.back().get();
}

framework::runtime::PluginObserver* SchedulerMetrics::ForPlugin(std::string_view plugin,
                                                                std::string_view extension_point,
                                                                const std::string& profile) {
  std::lock_guard lock(mu_);
  for (const auto& p : plugins_) {
    if (p->Is(plugin, extension_point, profile)) return p.get();
  }
  namespace ep = framework::runtime::extension_point;
  prometheus::Counter* evaluations = nullptr;
  if (extension_point == ep::kPreFilter || extension_point == ep::kFilter ||
      extension_point == ep::kPreScore || extension_point == ep::kScore) {
    evaluations = &plugin_evaluations_->Add({{"plugin", std::string(plugin)},
                                             {"extension_point", std::string(extension_point)},
                                             {"profile", profile}});
  }
  plugins_.push_back(std::make_unique<PluginMetrics>(
      plugin_duration_, evaluations, std::string(plugin), std::string(extension_point), profile));
  return plugins_.back().get();
}

void SchedulerMetrics::ObservePermitWait(const framework::Status& status, double seconds) {
  static const auto kBuckets = ExponentialBuckets(0.001, 2, 15);
  // upstream labels the wait by its outcome's status code.
  ChildFor(
      permit_children_[CodeIndex(status)], *permit_wait_,
      [&]() -> prometheus::Labels {
        return {{"result", framework::CodeName(status.code())}};
      },
      kBuckets)
      ->Observe(seconds);
}

const ProfileMetrics& SchedulerMetrics::ForProfile(const std::string& profile) {
  std::lock_guard lock(mu_);
  auto& slot = profiles_[profile];
  if (!slot) {
    slot = std::make_unique<ProfileMetrics>();
    const auto buckets = ExponentialBuckets(0.001, 2, 15);
    for (int i = 0; i < kAttemptResults; i++) {
      const char* result = AttemptResultName(static_cast<AttemptResult>(i));
      slot->attempts[i] = &schedule_attempts_->Add({{"result", result}, {"profile", profile}});
      slot->attempt_duration[i] =
          &attempt_duration_->Add({{"result", result}, {"profile", profile}}, buckets);
    }
  }
  return *slot;
}

void SchedulerMetrics::ObserveSchedulingAlgorithm(double seconds) {
  algorithm_duration_->Observe(seconds);
}

void SchedulerMetrics::ObservePodScheduled(int attempts, double sli_seconds) {
  pod_attempts_->Observe(attempts);
  sli_children_[std::clamp(attempts, 1, kMaxAttemptsLabel)]->Observe(sli_seconds);
}

void SchedulerMetrics::ObserveEventHandling(HandledEvent event, double seconds) {
  event_children_[static_cast<size_t>(event)]->Observe(seconds);
}

void SchedulerMetrics::IncomingPod(const char* queue, const std::string& event) {
  std::string key = std::string(queue) + '\0' + event;
  prometheus::Counter* child;
  {
    std::lock_guard lock(mu_);
    auto& slot = incoming_children_[key];
    if (!slot) slot = &incoming_pods_->Add({{"queue", queue}, {"event", event}});
    child = slot;
  }
  child->Increment();
}

client::RequestObserver SchedulerMetrics::RequestObserver(const std::string& host) {
  auto metrics = std::make_shared<HostMetrics>();
  metrics->host = host;
  {
    std::lock_guard lock(mu_);
    hosts_.push_back(metrics);
  }
  auto* requests = rest_requests_;
  auto* durations = rest_duration_;
  return [metrics, requests, durations](const std::string& verb, int http_status,
                                        std::chrono::nanoseconds took) {
    // client-go labels by HTTP method; LIST and WATCH are GETs on the wire.
    std::string method = (verb == "LIST" || verb == "WATCH") ? "GET" : verb;
    prometheus::Counter* counter;
    prometheus::Histogram* histogram;
    {
      std::lock_guard lock(metrics->mu);
      auto& c = metrics->requests[{method, http_status}];
      if (!c) {
        c = &requests->Add({{"code", http_status > 0 ? std::to_string(http_status) : "<error>"},
                            {"method", method},
                            {"host", metrics->host}});
      }
      counter = c;
      auto& h = metrics->durations[method];
      if (!h) h = &durations->Add({{"verb", method}, {"host", metrics->host}}, RestClientBuckets());
      histogram = h;
    }
    counter->Increment();
    histogram->Observe(std::chrono::duration<double>(took).count());
  };
}

void SchedulerMetrics::SetPendingPods(const PendingPods& pending) {
  pending_children_[0]->Set(static_cast<double>(pending.active));
  pending_children_[1]->Set(static_cast<double>(pending.backoff));
  pending_children_[2]->Set(static_cast<double>(pending.unschedulable));
  pending_children_[3]->Set(static_cast<double>(pending.gated));
}

void SchedulerMetrics::SetUnschedulablePods(
    const std::map<std::pair<std::string, std::string>, size_t>& counts) {
  std::lock_guard lock(mu_);
  for (auto& [key, gauge] : unschedulable_children_) {
    if (!counts.count(key)) gauge->Set(0);
  }
  for (const auto& [key, count] : counts) {
    auto& gauge = unschedulable_children_[key];
    if (!gauge) gauge = &unschedulable_pods_->Add({{"plugin", key.first}, {"profile", key.second}});
    gauge->Set(static_cast<double>(count));
  }
}

void SchedulerMetrics::SetCacheSize(size_t nodes, size_t pods, size_t assumed_pods) {
  cache_children_[0]->Set(static_cast<double>(nodes));
  cache_children_[1]->Set(static_cast<double>(pods));
  cache_children_[2]->Set(static_cast<double>(assumed_pods));
}

void SchedulerMetrics::SetReflectorCounts(const std::string& resource, uint64_t lists,
                                          uint64_t watches) {
  std::lock_guard lock(mu_);
  auto& seen = reflector_seen_[resource];
  auto& relists = relists_->Add({{"resource", resource}});
  auto& restarts = watch_restarts_->Add({{"resource", resource}});
  // The first LIST and the first watch are the normal start, not restarts.
  uint64_t relist_total = lists > 0 ? lists - 1 : 0;
  uint64_t restart_total = watches > 0 ? watches - 1 : 0;
  if (relist_total > seen.first) relists.Increment(static_cast<double>(relist_total - seen.first));
  if (restart_total > seen.second) {
    restarts.Increment(static_cast<double>(restart_total - seen.second));
  }
  seen = {std::max(seen.first, relist_total), std::max(seen.second, restart_total)};
}

void SchedulerMetrics::AddScrapeHook(std::function<void()> hook) {
  std::lock_guard lock(scrape_mu_);
  hooks_.push_back(std::move(hook));
}

std::string SchedulerMetrics::Scrape() {
  std::lock_guard lock(scrape_mu_);
  for (const auto& hook : hooks_) hook();
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace berth::metrics
