#ifndef BERTH_PKG_FRAMEWORK_RUNTIME_FRAMEWORK_H_
#define BERTH_PKG_FRAMEWORK_RUNTIME_FRAMEWORK_H_

// Runs one profile's plugins at every extension point with upstream's rules: Filter stops at the
// first failing plugin per node, Skip from PreFilter/PreScore skips that plugin's Filter/Score for
// the cycle, NormalizeScore must leave scores in [0, 100], weights multiply, Unreserve runs in
// reverse order, the first Bind plugin that does not Skip decides, Permit may park a pod.

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/config/config.h"
#include "pkg/framework/interface.h"
#include "pkg/framework/runtime/waiting_pods.h"

namespace berth::framework::runtime {

using Registry = std::map<std::string, PluginFactory, std::less<>>;

// Extension point names as they appear in metrics and config.
namespace extension_point {
inline constexpr std::string_view kPreEnqueue = "PreEnqueue";
inline constexpr std::string_view kQueueSort = "QueueSort";
inline constexpr std::string_view kPreFilter = "PreFilter";
inline constexpr std::string_view kPreFilterExtensionAddPod = "PreFilterExtensionAddPod";
inline constexpr std::string_view kPreFilterExtensionRemovePod = "PreFilterExtensionRemovePod";
inline constexpr std::string_view kFilter = "Filter";
inline constexpr std::string_view kPostFilter = "PostFilter";
inline constexpr std::string_view kPreScore = "PreScore";
inline constexpr std::string_view kScore = "Score";
inline constexpr std::string_view kScoreExtensionNormalize = "ScoreExtensionNormalize";
inline constexpr std::string_view kReserve = "Reserve";
inline constexpr std::string_view kUnreserve = "Unreserve";
inline constexpr std::string_view kPermit = "Permit";
inline constexpr std::string_view kPreBind = "PreBind";
inline constexpr std::string_view kBind = "Bind";
inline constexpr std::string_view kPostBind = "PostBind";
}  // namespace extension_point

// Where a framework reports timings; implemented by pkg/metrics. A framework asks for its handles
// once, when it is built, and keeps them, so recording an observation never looks anything up.
// Handles are owned by the FrameworkObserver and live as long as it does. Observe/Add methods are
// called from many threads at once and must be thread-safe.
class ExtensionPointObserver {
 public:
  virtual ~ExtensionPointObserver() = default;
  virtual void Observe(const Status& status, double seconds) = 0;
};

class PluginObserver {
 public:
  virtual ~PluginObserver() = default;
  // Only in cycles whose CycleState::record_plugin_metrics is set (sampled).
  virtual void ObserveDuration(const Status& status, double seconds) = 0;
  // How many times the plugin ran (PreFilter, Filter, PreScore and Score, as upstream counts).
  virtual void AddEvaluations(uint64_t count) = 0;
};

class FrameworkObserver {
 public:
  virtual ~FrameworkObserver() = default;
  virtual ExtensionPointObserver* ForExtensionPoint(std::string_view extension_point,
                                                    const std::string& profile) = 0;
  virtual PluginObserver* ForPlugin(std::string_view plugin, std::string_view extension_point,
                                    const std::string& profile) = 0;
  virtual void ObservePermitWait(const Status& status, double seconds) = 0;
};

// A profile that cannot be built: unknown plugin, bad args, no QueueSort or Bind plugin...
class FrameworkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a framework shares with the rest of the scheduler. Non-owning pointers must outlive it.
struct FrameworkDeps {
  const NodeInfoLister* snapshot = nullptr;
  client::Client* client = nullptr;
  informer::SharedInformerFactory* informer_factory = nullptr;  // Required.
  EventRecorder* recorder = nullptr;
  Parallelizer* parallelizer = nullptr;
  PodNominator* nominator = nullptr;  // Required.
  std::shared_ptr<WaitingPods> waiting_pods;
  FrameworkObserver* observer = nullptr;
  // Handle::Activate; empty: activation does nothing (no queue, as in plugin tests and
  // benchmarks).
  std::function<void(const std::vector<std::string>&)> activate;
  // Null: nothing is recorded.
  PreemptionMetrics* preemption_metrics = nullptr;
  prometheus::Registry* metrics_registry = nullptr;
  // The scheduler's extenders, for the preemption plugin.
  std::vector<std::shared_ptr<Extender>> extenders;
};

using framework::NodePluginScores;
using framework::PluginScore;

// A profile's plugins, instantiated once, with the Handle they see. Thread-safe where upstream's
// is: Filter/Score runners may be called from the worker pool; each cycle's CycleState is owned
// by that cycle.
class Framework : public Handle {
 public:
  // Instantiates every plugin the (merged) profile names, expands MultiPoint into concrete
  // extension points and orders them as upstream does. Throws FrameworkError.
  Framework(const Registry& registry, const config::Profile& profile, FrameworkDeps deps);
  ~Framework() override;

  const std::string& ProfileName() const override { return profile_name_; }
  const config::Profile& profile() const { return profile_; }

  // ---- Extension points ----
  Status RunPreEnqueuePlugins(const api::Pod& pod);
  bool QueueSortLess(const QueuedPodInfo& a, const QueuedPodInfo& b) const;
  // `plugins_with_nodes` (optional) receives the plugins that narrowed the node set.
  Status RunPreFilterPlugins(CycleState& state, const api::Pod& pod,
                             const std::vector<NodeInfoPtr>& nodes, PreFilterResult* result,
                             std::vector<std::string>* plugins_with_nodes = nullptr);
  Status RunPreFilterExtensionAddPod(CycleState& state, const api::Pod& pod, const PodInfo& to_add,
                                     const NodeInfo& node) override;
  Status RunPreFilterExtensionRemovePod(CycleState& state, const api::Pod& pod,
                                        const PodInfo& to_remove, const NodeInfo& node) override;
  bool HasActivePreFilterExtensions(const CycleState& state) const override;
  // Runs every Filter plugin (except skipped ones) on one node; stops at the first rejection.
  // `node_index` is the node's position in this cycle's pass over the nodes: in a sampled cycle,
  // plugins are timed on every kTimedNodeStride-th node only.
  Status RunFilterPlugins(const CycleState& state, const api::Pod& pod, const NodeInfo& node,
                          int node_index = 0) override;
  // Filter with the pods nominated to this node (of priority >= the pod's) added, as upstream:
  // the node must fit both with and without them.
  Status RunFilterPluginsWithNominatedPods(const CycleState& state, const api::Pod& pod,
                                           const NodeInfo& node, int node_index = 0) override;
  // RunFilterPluginsWithNominatedPods over a run of nodes, with each plugin called once for the
  // whole run (FilterPlugin::FilterNodes) on the nodes no earlier plugin rejected. `statuses`
  // arrive successful; statuses[i] is set to nodes[i]'s first failure, as the per-node runner
  // returns it. `first_index` is nodes[0]'s position in the cycle's pass (see RunFilterPlugins).
  void RunFilterPluginsOnNodes(const CycleState& state, const api::Pod& pod,
                               std::span<const NodeInfo* const> nodes, int first_index,
                               std::span<Status> statuses);
  Status RunPostFilterPlugins(CycleState& state, const api::Pod& pod, const NodeToStatus& statuses,
                              PostFilterResult* result);
  Status RunPreScorePlugins(CycleState& state, const api::Pod& pod,
                            std::span<const NodeInfo* const> nodes) override;
  // Scores, normalizes, range-checks and weights over `nodes` in parallel.
  Status RunScorePlugins(const CycleState& state, const api::Pod& pod,
                         std::span<const NodeInfo* const> nodes,
                         std::vector<NodePluginScores>* out) override;
  Status RunReservePluginsReserve(CycleState& state, const api::Pod& pod, const std::string& node);
  void RunReservePluginsUnreserve(CycleState& state, const api::Pod& pod, const std::string& node);
  // Success, Wait (the pod was parked; call WaitOnPermit from the binding cycle) or a rejection.
  Status RunPermitPlugins(CycleState& state, const api::Pod& pod, const std::string& node);
  // Runs `then` once Permit has decided `pod`, at once if it did not park it. A parked gang member
  // may wait for minutes: starting its binding cycle only then keeps it from holding a binding
  // thread that pods ready to bind need. `then` must not block.
  void WhenPermitDecided(const api::Pod& pod, std::function<void()> then);
  // The Permit decision on `pod`; blocks while it is still waiting.
  Status WaitOnPermit(const api::Pod& pod);
  // Whether any PreBind plugin has work for `pod` on `node` (its PreBindPreFlight is not Skip).
  bool PreBindHasWork(CycleState& state, const api::Pod& pod, const std::string& node);
  Status RunPreBindPlugins(CycleState& state, const api::Pod& pod, const std::string& node);
  // PreBind of a pod none of whose PreBind plugins has work (PreBindHasWork is false): records
  // the extension point, as upstream's RunPreBindPlugins does when PreBindPreFlight skipped every
  // plugin, without running any.
  void SkipPreBindPlugins();
  Status RunBindPlugins(CycleState& state, const api::Pod& pod, const std::string& node);
  void RunPostBindPlugins(CycleState& state, const api::Pod& pod, const std::string& node);
  // Binds with no thread waiting when the first Bind plugin is an AsyncBindPlugin that can start
  // at once: true, and `done` runs once with the outcome (nullopt: not settled, so call
  // RunBindPlugins), on a thread that must not block, maybe before this returns. Else false, and
  // `done` never runs. Metrics are recorded for a settled outcome only: an unsettled one is
  // recorded by the RunBindPlugins that settles it. `state` must outlive `done`.
  bool RunBindPluginsAsync(CycleState& state, const api::Pod& pod, const std::string& node,
                           std::function<void(std::optional<Status>)> done);
  bool HasPostBindPlugins() const { return !post_bind_.empty(); }

  // The Filter phase of one cycle ran over `nodes_evaluated` nodes, `rejected_by` of which a given
  // plugin rejected; records the phase's duration and each Filter plugin's evaluation count
  // (upstream counts one evaluation per plugin per node it ran on). Filter plugins run per node
  // on many threads, so the scheduler reports the whole phase once rather than per call.
  void RecordFilterPhase(const CycleState& state, const Status& status, double seconds,
                         int64_t nodes_evaluated,
                         const std::map<std::string, int64_t>& rejected_by);

  bool HasFilterPlugins() const { return !filter_.empty(); }
  bool HasPostFilterPlugins() const { return !post_filter_.empty(); }
  bool HasScorePlugins() const { return !score_.empty(); }
  // The weight of this profile's Score plugin `plugin`; 0 when it is not one.
  int64_t ScoreWeight(std::string_view plugin) const;

  // The cluster events each plugin registered (plugin name, registration).
  std::vector<std::pair<std::string, ClusterEventWithHint>> EnqueueExtensionEvents() const;

  // Names per extension point, for /configz and tests: {"Filter": ["NodeUnschedulable", ...]}.
  std::map<std::string, std::vector<std::string>> ListPlugins() const;
  PluginPtr GetPlugin(std::string_view name) const;

  // ---- Handle ----
  const NodeInfoLister& SnapshotSharedLister() const override;
  client::Client* ClientSet() const override { return deps_.client; }
  informer::SharedInformerFactory& SharedInformerFactory() const override {
    return *deps_.informer_factory;
  }
  std::shared_ptr<WaitingPod> GetWaitingPod(const std::string& uid) override;
  void IterateOverWaitingPods(const std::function<void(WaitingPod&)>& fn) override;
  void RejectWaitingPod(const std::string& uid) override;
  std::string AllowWaitingPods(const std::vector<std::string>& uids,
                               const std::string& plugin) override;
  EventRecorder& GetEventRecorder() override;
  Parallelizer& GetParallelizer() override;
  PodNominator& Nominator() override;
  void Activate(const std::vector<std::string>& pod_uids) override;
  PreemptionMetrics& GetPreemptionMetrics() override;
  prometheus::Registry* MetricsRegistry() const override { return deps_.metrics_registry; }
  const std::vector<std::shared_ptr<Extender>>& Extenders() const override {
    return deps_.extenders;
  }
  bool Stopping() const override { return stopping_.load(); }
  std::optional<PodGroupHint> GroupOf(const api::Pod& pod) const override;
  std::optional<PodGroupHint> VictimGroupOf(const api::Pod& pod) const override;
  Status RunPreFilterForPod(CycleState& state, const api::Pod& pod,
                            PreFilterResult* result) override;
  // Tells the plugins the scheduler is shutting down (Stopping()).
  void Stop() { stopping_ = true; }

 private:
  template <typename P>
  struct Entry {
    PluginName name;
    P* plugin;
    PluginObserver* metrics;  // Never null.
  };

  // Indexes point_metrics_.
  enum class Point : uint8_t {
    kPreEnqueue,
    kPreFilter,
    kFilter,
    kPostFilter,
    kPreScore,
    kScore,
    kReserve,
    kUnreserve,
    kPermit,
    kPreBind,
    kBind,
    kPostBind,
    kCount,
  };

  PluginObserver* PluginMetrics(const std::string& plugin, std::string_view point);
  void Observe(Point point, const Status& status,
               std::chrono::steady_clock::time_point start) const;
  // Whether filter_[plugin] is skipped in this cycle (its PreFilter returned Skip).
  bool FilterSkipped(const CycleState& state, size_t plugin) const;
  // The entry's extensions when it has some and is not skipped in `state`, else null: the one
  // test of the AddPod/RemovePod runners and HasActivePreFilterExtensions.
  static PreFilterExtensions* ActiveExtensions(const CycleState& state,
                                               const Entry<PreFilterPlugin>& entry);
  void ObservePlugin(const CycleState& state, PluginObserver* metrics, const Status& status,
                     std::chrono::steady_clock::time_point start) const;

  std::string profile_name_;
  config::Profile profile_;
  FrameworkDeps deps_;
  std::map<std::string, PluginPtr, std::less<>> plugins_;

  std::vector<Entry<PreEnqueuePlugin>> pre_enqueue_;
  std::vector<Entry<QueueSortPlugin>> queue_sort_;
  std::vector<Entry<PreFilterPlugin>> pre_filter_;
  std::vector<Entry<FilterPlugin>> filter_;
  std::vector<Entry<PostFilterPlugin>> post_filter_;
  std::vector<Entry<PreScorePlugin>> pre_score_;
  std::vector<Entry<ScorePlugin>> score_;
  std::vector<int64_t> score_weights_;  // Parallel to score_.
  std::vector<Entry<ReservePlugin>> reserve_;
  std::vector<Entry<PermitPlugin>> permit_;
  std::vector<Entry<PreBindPlugin>> pre_bind_;
  std::vector<Entry<BindPlugin>> bind_;
  std::vector<Entry<PostBindPlugin>> post_bind_;
  std::vector<Entry<EnqueueExtensions>> enqueue_extensions_;
  // Parallel to reserve_ and score_: the same plugins at Unreserve and ScoreExtensionNormalize.
  std::vector<PluginObserver*> unreserve_metrics_;
  std::vector<PluginObserver*> normalize_metrics_;
  std::array<ExtensionPointObserver*, static_cast<size_t>(Point::kCount)> point_metrics_{};
  std::atomic<bool> stopping_{false};
};

}  // namespace berth::framework::runtime

#endif  // BERTH_PKG_FRAMEWORK_RUNTIME_FRAMEWORK_H_
