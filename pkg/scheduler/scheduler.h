#ifndef BERTH_PKG_SCHEDULER_SCHEDULER_H_
#define BERTH_PKG_SCHEDULER_SCHEDULER_H_

// The scheduler: one scheduling thread pops pods from the queue and runs the scheduling cycle
// against a snapshot of the cache; binding cycles run concurrently on a pool of binder threads;
// events and status patches go out from background workers. The scheduling thread never waits on
// the network.

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "pkg/cache/cache.h"
#include "pkg/cache/snapshot.h"
#include "pkg/config/config.h"
#include "pkg/explain/groups.h"
#include "pkg/explain/store.h"
#include "pkg/framework/interface.h"
#include "pkg/framework/runtime/framework.h"
#include "pkg/framework/runtime/parallelizer.h"
#include "pkg/metrics/metrics.h"
#include "pkg/queue/scheduling_queue.h"
#include "pkg/scheduler/cycle_gate.h"
#include "pkg/scheduler/dry_runner.h"
#include "pkg/scheduler/extenders.h"
#include "pkg/util/clock.h"
#include "pkg/util/task_queue.h"

namespace berth::informer {
class SharedInformerFactory;
template <typename T>
class Informer;
}  // namespace berth::informer

namespace berth::scheduler {

// Why a pod fits no node: per-node statuses plus what PreFilter/PostFilter said.
struct Diagnosis {
  // The "N" of "0/N nodes are available" once the attempt ended in a fit error, the failure
  // PostFilter plugins (preemption) may act on; 0 otherwise.
  int num_all_nodes = 0;
  // Its absent-nodes status stands for the nodes PreFilter excluded.
  // Filter's rejections are kept only when no node passed: nothing reads them otherwise, and
  // keying thousands of them by node name every cycle was a visible share of a cycle's cost.
  framework::NodeToStatus node_to_status;
  // Nodes Filter rejected in this attempt, kept or not.
  int filter_rejected = 0;
  std::set<std::string> unschedulable_plugins;
  std::set<std::string> pending_plugins;
  std::string pre_filter_msg;
  std::string post_filter_msg;
  // What PreFilter did, for the attempt's record: empty when it kept every node.
  std::string pre_filter_note;
  // Names of the nodes extenders rejected, which node_to_status views.
  std::deque<std::string> extender_rejected;
  // Where Filter's verdicts are grouped for the attempt's record; null for passes that are not
  // the attempt's own (the nominated node tried alone).
  explain::GroupBuilder* groups = nullptr;
};

// The rejector recorded when extenders rejected nodes (upstream's ExtenderName): it has no
// queueing hints, so every cluster event requeues the pod.
inline constexpr std::string_view kExtenderRejector = "Extender";

// "0/N nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint(s)." in
// upstream's format: reasons counted over nodes, each "count reason", sorted as strings.
std::string FitErrorMessage(int num_all_nodes, const Diagnosis& diagnosis);

// upstream numFeasibleNodesToFind: all nodes below 100; otherwise `percentage` (or the adaptive
// max(5, 50 - n/125) when 0) percent of them, at least 100.
int NumFeasibleNodesToFind(int percentage_of_nodes_to_score, int num_all_nodes);

// Writes PodScheduled conditions; the real one PATCHes pods/{name}/status. Called from a
// background worker, never from the scheduling thread.
class PodStatusWriter {
 public:
  virtual ~PodStatusWriter() = default;
  // With `nominated_node_name`, status.nominatedNodeName is set to it too (removed when empty).
  virtual void SetUnschedulable(const api::Pod& pod, const std::string& reason,
                                const std::string& message,
                                const std::optional<std::string>& nominated_node_name) = 0;
};

// PATCH /api/v1/namespaces/{ns}/pods/{name}/status with a strategic merge of the PodScheduled
// condition.
class ApiPodStatusWriter : public PodStatusWriter {
 public:
  explicit ApiPodStatusWriter(std::shared_ptr<client::Client> client)
      : client_(std::move(client)) {}
  void SetUnschedulable(const api::Pod& pod, const std::string& reason, const std::string& message,
                        const std::optional<std::string>& nominated_node_name) override;

 private:
  std::shared_ptr<client::Client> client_;
};

struct SchedulerOptions {
  int binding_workers = 32;
  // Binding cycles whose PreBind has work (claims to bind or provision) run on their own workers:
  // they may wait minutes for other controllers and must not hold up pods that are ready to bind.
  int pre_bind_workers = 64;
  // Seeds the tie-break among equally scored nodes; random when unset.
  std::optional<uint64_t> seed;
  // Percentage of cycles whose per-plugin durations are recorded (upstream samples 10%).
  int plugin_metrics_sample_percent = 10;
  // The records of pending pods' last attempts (explain).
  explain::StoreOptions attempts;
  // How long one explain or simulate may spend in dry runs (one per suggested change, one per pod
  // of a gang); past it, no further dry run starts and the answer says it was cut short.
  std::chrono::milliseconds dry_run_budget = std::chrono::seconds(10);
  // The clock dry_run_budget is measured on; the steady clock when null.
  std::shared_ptr<const util::Clock> dry_run_clock;
};

struct SchedulerDeps {
  std::shared_ptr<client::Client> client;                // Null in benchmarks.
  informer::SharedInformerFactory* informers = nullptr;  // Null in benchmarks.
  framework::EventRecorder* recorder = nullptr;          // Required.
  PodStatusWriter* status_writer = nullptr;              // Null: conditions are not written.
  metrics::SchedulerMetrics* metrics = nullptr;          // Null: nothing is recorded.
  // KubeSchedulerConfiguration's extenders (pkg/extender's Build), ignorable ones last.
  std::vector<std::shared_ptr<framework::Extender>> extenders;
};

// Counters for progress output and tests. Thread-safe (atomics).
struct SchedulerStats {
  std::atomic<uint64_t> attempts{0};
  std::atomic<uint64_t> scheduled{0};
  std::atomic<uint64_t> unschedulable{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> bind_failures{0};
  std::atomic<uint64_t> malformed_pods{0};
};

class Scheduler {
 public:
  // Builds a framework per profile (instantiating every plugin with its args) without touching the
  // cluster. Throws framework::runtime::FrameworkError.
  Scheduler(const config::Configuration& config, const framework::runtime::Registry& registry,
            SchedulerDeps deps, SchedulerOptions options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Registers pod and node handlers on deps.informers (which the caller starts), and handlers on
  // the informer of every other resource a plugin registered cluster events for.
  void AddAllEventHandlers();

  // ---- Cluster events (informer handlers call these; benchmarks call them directly) ----
  void OnPodAdd(const api::PodPtr& pod);
  void OnPodUpdate(const api::PodPtr& old_pod, const api::PodPtr& new_pod);
  void OnPodDelete(const api::PodPtr& pod);
  void OnNodeAdd(const api::NodePtr& node);
  void OnNodeUpdate(const api::NodePtr& old_node, const api::NodePtr& new_node);
  void OnNodeDelete(const api::NodePtr& node);
  // A pod object the decoder rejected: reported as unschedulable when it names our scheduler.
  void OnMalformedPod(const nlohmann::json& object, const std::string& error);

  // Starts the queue's flush threads and the scheduling thread.
  void Run();
  // Stops taking pods, lets in-flight binding cycles finish (bounded by `grace`), stops threads.
  void Stop(std::chrono::milliseconds grace = std::chrono::seconds(30));
  // One scheduling cycle for the next pod; false once the queue is closed. Run() loops on it.
  bool ScheduleOne();

  bool Responsible(const api::Pod& pod) const;
  // The first profile's schedulerName.
  const std::string& FirstProfile() const { return config_.profiles.front().scheduler_name; }
  framework::runtime::Framework* FrameworkFor(const std::string& scheduler_name) const;
  queue::SchedulingQueue& queue() { return *queue_; }
  cache::Cache& cache() { return cache_; }
  const SchedulerStats& stats() const { return stats_; }
  // Binding cycles started but not finished.
  int InFlightBindings() const { return in_flight_bindings_.load(); }
  // The last attempt of each pending pod and the recent binding decisions.
  const explain::Store& attempts() const { return attempts_; }

  // A run of rejections by one plugin with one code in a cycle's Filter pass: where it starts,
  // as an entry of the kept statuses or an index of the pass (see GroupRejections).
  struct RejectionRun {
    const std::string* plugin = nullptr;
    framework::Code code = framework::Code::kSuccess;
    size_t begin = 0;
  };

  // Explain and simulate. Thread-safe: dry runs take turns with the scheduling cycle.
  DryRunner& dry_runs() { return *dry_runs_; }

 private:
  // Pods and nodes have handlers of their own; the wildcard names no resource.
  static bool IsPodOrNode(framework::EventResource resource);
  // Whether a plugin may register events for `resource`: a typed resource of
  // pkg/informer/resources.h, or a custom one named "<plural>.<version>.<group>".
  static bool CanWatch(framework::EventResource resource);
  // Starts (through the factory) the informer of `resource` and moves pods on its events.
  void Watch(framework::EventResource resource);
  // Every resource the profiles' plugins registered events for.
  std::set<framework::EventResource> RegisteredResources() const;
  template <typename T>
  void AddResourceHandlers(framework::EventResource resource, informer::Informer<T>& from);

  struct ScheduleResult {
    std::string host;
    int evaluated_nodes = 0;
    int feasible_nodes = 0;
    // Whether node_scores_ holds this cycle's scores; the chosen node's index in them and the
    // indexes of the best others, best first.
    bool scored = false;
    size_t chosen = 0;
    std::array<size_t, explain::kAlternatives> others{};
    size_t num_others = 0;
  };

  // Returns Success with `result` filled, a rejection with `diagnosis` filled, or an error. A
  // rejection that sets diagnosis->num_all_nodes (a fit error) has no message yet: the caller
  // writes it (FitErrorMessage) once PostFilter plugins have had their say.
  framework::Status SchedulePod(framework::runtime::Framework& fwk, framework::CycleState& state,
                                const api::Pod& pod, ScheduleResult* result, Diagnosis* diagnosis);
  // Both fill *feasible with nodes of snapshot_, valid until its next update. Raw pointers: a
  // shared_ptr copy per feasible node meant two atomic operations per node and cycle.
  framework::Status FindNodesThatFitPod(framework::runtime::Framework& fwk,
                                        framework::CycleState& state, const api::Pod& pod,
                                        Diagnosis* diagnosis,
                                        std::vector<const framework::NodeInfo*>* feasible);
  void FindNodesThatPassFilters(framework::runtime::Framework& fwk,
                                const framework::CycleState& state, const api::Pod& pod,
                                Diagnosis* diagnosis,
                                const std::vector<framework::NodeInfoPtr>& nodes,
                                std::vector<const framework::NodeInfo*>* feasible);
  // Upstream's findNodesThatPassExtenders: each interested filtering extender in turn keeps a
  // subset of *feasible; the nodes it rejects get its reasons in the diagnosis. An error from an
  // extender that is not ignorable is the cycle's error.
  framework::Status FindNodesThatPassExtenders(const api::Pod& pod, Diagnosis* diagnosis,
                                               std::vector<const framework::NodeInfo*>* feasible);
  // After FindNodesThatPassFilters' pass: notes which plugins rejected among the first `limit`
  // outcomes (outcome i being node (start + i) of `nodes`, wrapped), moves each rejected node's
  // status into the diagnosis when keep_statuses, and returns the rejection count per plugin.
  std::map<std::string, int64_t> CollectRejections(const std::vector<framework::NodeInfoPtr>& nodes,
                                                   int start, int limit, bool keep_statuses,
                                                   Diagnosis* diagnosis);
  // Adds the rejections CollectRejections saw to `groups`, run by run: from `kept` when the
  // statuses were moved there, else from the pass's own statuses.
  void GroupRejections(const std::vector<framework::NodeInfoPtr>& nodes, int start, int limit,
                       const framework::NodeToStatus* kept, explain::GroupBuilder* groups) const;
  // Chooses the node among `scores`: result->chosen, and result->others.
  void SelectHost(const std::vector<framework::runtime::NodePluginScores>& scores,
                  ScheduleResult* result);

  // The record of this cycle's attempt: what PreFilter did and Filter's verdicts (from
  // `diagnosis`), and with `result`, the chosen node's scores beside the best alternatives. With
  // `verdicts`, Filter's verdicts go there instead, for the worker that keeps the record to add.
  std::shared_ptr<explain::Attempt> NewAttempt(const framework::runtime::Framework& fwk,
                                               const framework::QueuedPodInfo& pinfo,
                                               const Diagnosis& diagnosis,
                                               const ScheduleResult* result,
                                               explain::Verdicts* verdicts = nullptr);

  // One assumed pod on its way to its binding cycle.
  struct PendingBinding {
    framework::runtime::Framework* fwk = nullptr;
    std::shared_ptr<framework::CycleState> state;
    framework::QueuedPodInfoPtr pinfo;
    api::PodPtr assumed;
    ScheduleResult result;
    std::chrono::steady_clock::time_point cycle_start;
    std::shared_ptr<explain::Attempt> attempt;
    // Permit admitted it and PreBind had nothing to do (and was recorded so): the cycle starts
    // at Bind.
    bool ready_to_bind = false;
  };
  // The binding cycle on a binding thread: WaitOnPermit, PreBind, Bind (by an extender or the
  // Bind plugins), then FinishBindingCycle. With `bind_outcome`, Bind already ran (BindAsync)
  // and settled the binding that way: only the rest runs.
  void BindingCycle(PendingBinding& binding, std::optional<framework::Status> bind_outcome);
  // After Bind: on success the pod counts as bound (cache, record, metrics, event, PostBind);
  // else it is unreserved, forgotten and handed to failure handling. Blocks only in plugins'
  // PostBind and Unreserve.
  void FinishBindingCycle(PendingBinding& binding, const framework::Status& status);
  // Runs the binding cycle on a thread of `binders`; with `bind_outcome`, only what follows Bind.
  void PostBindingCycle(util::TaskQueue* binders, PendingBinding binding,
                        std::optional<framework::Status> bind_outcome = std::nullopt);
  // Binds a pod that Permit admitted at once, whose PreBind has nothing to do and that no
  // extender binds, with no thread waiting for the apiserver: a bound pod is finished on the
  // client's I/O thread unless PostBind plugins run, anything else goes to a binding thread.
  // At most binding_workers such bindings are in flight, as many as binding threads would
  // carry; the rest wait their turn in order. When the Bind plugins cannot bind this way, a
  // binding thread runs the cycle.
  void BindWithoutThread(PendingBinding binding);
  // Sends `binding`, which holds one of the binding_workers places; false (the place and the
  // binding left with the caller) when the Bind plugins cannot send it this way.
  bool SendWithoutThread(PendingBinding& binding);
  // A binding sent without a thread was answered: its place goes to the next one waiting.
  void PassOnPlace();
  // Requeues a pod whose attempt failed and reports why (event + condition), off-thread.
  // `nominated_node` replaces the pod's nomination ("" clears it); std::nullopt leaves it.
  // `attempt` (made here when null) is completed with the outcome and kept as the pod's record,
  // with `verdicts` when NewAttempt left them out of it.
  void HandleSchedulingFailure(const framework::QueuedPodInfoPtr& pinfo,
                               const framework::Status& status, const Diagnosis* diagnosis,
                               const std::optional<std::string>& nominated_node,
                               std::chrono::steady_clock::time_point cycle_start,
                               std::shared_ptr<explain::Attempt> attempt = nullptr,
                               explain::Verdicts verdicts = {});
  // Registers the scrape hooks that sample queue, cache and informer state.
  void RegisterScrapeHooks();
  // The V(2) line for one decision: pod, node, its score and the best alternatives.
  void LogDecision(const framework::runtime::Framework& fwk, const api::Pod& pod,
                   const ScheduleResult& result,
                   const std::vector<framework::runtime::NodePluginScores>& scores);
  void ObserveEvent(metrics::HandledEvent event, std::chrono::steady_clock::time_point start);
  void ObserveAttempt(const std::string& profile, metrics::AttemptResult result,
                      std::chrono::steady_clock::time_point cycle_start);
  // Also keeps `attempt` (when given, with `verdicts`) as the pod's record, from the same
  // background worker: the records' lock is shared with binding threads, and a thread holding it
  // could be descheduled while the scheduling thread waited for it.
  void ReportUnschedulable(const api::PodPtr& pod, const std::string& reason,
                           const std::string& message,
                           const std::optional<std::string>& nominated_node,
                           explain::AttemptPtr attempt = nullptr, explain::Verdicts verdicts = {});
  // The freshest copy of the pod the informer has (null when deleted), or `pod` without informers.
  api::PodPtr CurrentPod(const api::Pod& pod) const;

  config::Configuration config_;
  SchedulerDeps deps_;
  SchedulerOptions options_;
  SchedulerStats stats_;

  // Null when deps_.informers is set; otherwise a client-less factory, so plugins always have
  // listers.
  std::unique_ptr<informer::SharedInformerFactory> owned_informers_;
  informer::SharedInformerFactory* informers_;  // Never null.
  cache::Cache cache_;
  cache::Snapshot snapshot_;
  // Set per cycle: an extender filters this pod, so Filter's rejections are kept even when nodes
  // pass (the extender may reject those). Scheduling thread only.
  bool keep_filter_statuses_ = false;
  // Shared by the queue (which keeps it current) and every framework (which filters with it).
  queue::Nominator nominator_;
  framework::runtime::WorkerPool parallelizer_;
  std::shared_ptr<framework::runtime::WaitingPods> waiting_pods_;
  std::unique_ptr<queue::SchedulingQueue> queue_;
  Profiles profiles_;

  // Scheduling-thread state.
  int next_start_node_index_ = 0;
  std::mt19937_64 rng_;
  uint64_t cycles_ = 0;
  // FindNodesThatPassFilters' per-node outcome, reused so a cycle over thousands of nodes does
  // not allocate (and fault in) fresh buffers. Workers write only their own node's slot.
  // kOverflow: passed after enough nodes were found elsewhere; neither feasible nor processed.
  enum class FilterOutcome : char { kNotRun, kPassed, kRejected, kOverflow };
  // Nodes one Filter work piece covers.
  static constexpr int kFilterBatch = 16;
  std::vector<FilterOutcome> filter_outcomes_;
  std::vector<framework::Status> filter_statuses_;
  std::vector<RejectionRun> rejection_runs_;
  // The current cycle's feasible nodes and scores, kept so their buffers are reused.
  std::vector<const framework::NodeInfo*> feasible_nodes_;
  std::vector<framework::runtime::NodePluginScores> node_scores_;
  // Groups this cycle's Filter verdicts for its record; reused across cycles.
  explain::GroupBuilder groups_;
  explain::Store attempts_;
  // Taken by ScheduleOne for each cycle and by dry runs between cycles.
  CycleGate gate_;
  // After everything it borrows.
  std::unique_ptr<DryRunner> dry_runs_;

  std::atomic<bool> running_{false};
  std::thread scheduling_thread_;
  std::atomic<int> in_flight_bindings_{0};
  // Bindings sent by BindWithoutThread whose completion has not returned yet, and those waiting
  // for a place: Stop waits for both (each ends by the request timeout at the latest) before
  // the binders shut down.
  std::atomic<int> unanswered_bindings_{0};
  std::mutex unsent_mu_;
  std::deque<PendingBinding> unsent_bindings_;  // Guarded by unsent_mu_, as is below.
  int places_taken_ = 0;
  // reporters_ before binders_: members are destroyed in reverse, and a binding cycle may post to
  // reporters_ until binders_ has shut down.
  std::unique_ptr<util::TaskQueue> reporters_;
  std::unique_ptr<util::TaskQueue> binders_;
  std::unique_ptr<util::TaskQueue> pre_binders_;
};

}  // namespace berth::scheduler

#endif  // BERTH_PKG_SCHEDULER_SCHEDULER_H_
