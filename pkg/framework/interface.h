#ifndef BERTH_PKG_FRAMEWORK_INTERFACE_H_
#define BERTH_PKG_FRAMEWORK_INTERFACE_H_

// The plugin contract: everything a plugin sees and implements. Plugins include this header
// (and pkg/api) and nothing from scheduler/, queue/ or client/ internals; what they need from the
// scheduler comes through Handle.

#include <algorithm>
#include <any>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pkg/api/podgroup.h"
#include "pkg/api/types.h"
#include "pkg/framework/types.h"

namespace berth::client {
class Client;
}
namespace berth::informer {
class SharedInformerFactory;
}
namespace prometheus {
class Registry;
}

namespace berth::framework {

inline constexpr int64_t kMaxNodeScore = 100;
inline constexpr int64_t kMinNodeScore = 0;
inline constexpr int64_t kMaxTotalScore = INT64_MAX;
// Permit plugins may ask to wait at most this long (upstream maxTimeout).
inline constexpr std::chrono::minutes kMaxPermitTimeout{15};

enum class Code {
  kSuccess,
  kError,
  kUnschedulable,
  // Preemption cannot help: the pod does not fit this node whatever is evicted.
  kUnschedulableAndUnresolvable,
  kWait,
  kSkip,
  // The pod cannot be scheduled now because something it waits for is not ready (not the node).
  kPending,
};

const char* CodeName(Code code);

// A plugin's name, interned: every PluginName made from the same text points at one string that
// lives as long as the process, so a copy is a pointer. A pod that fits nowhere gets one rejected
// Filter Status per node of the cluster, each naming its plugin; a copy of the name in each would
// be an allocation per node. Meant for the few names of plugins: interned text is never freed.
class PluginName {
 public:
  PluginName() = default;
  // Takes a process-wide lock: made once per plugin (as the framework does), not per call.
  explicit PluginName(std::string_view name);

  const std::string& str() const { return name_ != nullptr ? *name_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  bool empty() const { return str().empty(); }
  // Equal for equal names; null for the empty name.
  const std::string* id() const { return name_; }

 private:
  static const std::string& Empty();
  const std::string* name_ = nullptr;
};

// A set of plugins, as the few a cycle skips: a list of interned names. A hash set of strings
// allocated a node per name in every cycle and hashed the name on every lookup.
class PluginSet {
 public:
  void insert(const PluginName& name) {
    if (!contains(name)) names_.push_back(name.id());
  }
  bool contains(const PluginName& name) const {
    return std::find(names_.begin(), names_.end(), name.id()) != names_.end();
  }
  bool empty() const { return names_.empty(); }

 private:
  std::vector<const std::string*> names_;
};

// Reasons that never change, made once and shared by every Status that carries them. A plugin
// that rejects most of the cluster with the same words (a pod that fits nowhere, a node selector
// that matches a few nodes) would otherwise allocate and free a vector and a string for every
// node of every cycle, which dominated the cycle for such pods.
//
// Invariant: it outlives every Status made from it; declare it as a function-local static.
class FixedReasons {
 public:
  explicit FixedReasons(std::vector<std::string> reasons) : reasons_(std::move(reasons)) {}
  explicit FixedReasons(std::string_view reason) : reasons_{std::string(reason)} {}
  FixedReasons(const FixedReasons&) = delete;
  FixedReasons& operator=(const FixedReasons&) = delete;

  const std::vector<std::string>& reasons() const { return reasons_; }

 private:
  std::vector<std::string> reasons_;
};

// The result of one plugin call. A default-constructed Status is Success and allocates nothing,
// so the hot path pays nothing for success.
class Status {
 public:
  Status() = default;
  Status(Code code, std::vector<std::string> reasons) : code_(code), reasons_(std::move(reasons)) {}
  Status(Code code, std::string reason) : code_(code), reasons_{std::move(reason)} {}
  // Copies of this Status, and of the statuses copied from it, allocate nothing.
  Status(Code code, const FixedReasons& reasons) : code_(code), fixed_reasons_(&reasons) {}

  static Status Success() { return {}; }
  static Status Error(std::string message) { return {Code::kError, std::move(message)}; }
  static Status Unschedulable(std::string reason) {
    return {Code::kUnschedulable, std::move(reason)};
  }
  static Status Unresolvable(std::string reason) {
    return {Code::kUnschedulableAndUnresolvable, std::move(reason)};
  }
  static Status Unschedulable(const FixedReasons& reasons) {
    return {Code::kUnschedulable, reasons};
  }
  static Status Unresolvable(const FixedReasons& reasons) {
    return {Code::kUnschedulableAndUnresolvable, reasons};
  }
  static Status Skip() { return {Code::kSkip, std::vector<std::string>{}}; }
  static Status Wait() { return {Code::kWait, std::vector<std::string>{}}; }

  Code code() const { return code_; }
  bool IsSuccess() const { return code_ == Code::kSuccess; }
  bool IsSkip() const { return code_ == Code::kSkip; }
  bool IsWait() const { return code_ == Code::kWait; }
  // Unschedulable, UnschedulableAndUnresolvable or Pending: the pod is rejected, not broken.
  bool IsRejected() const {
    return code_ == Code::kUnschedulable || code_ == Code::kUnschedulableAndUnresolvable ||
           code_ == Code::kPending;
  }
  const std::vector<std::string>& reasons() const {
    return fixed_reasons_ != nullptr ? fixed_reasons_->reasons() : reasons_;
  }
  // Reasons joined with ", ".
  std::string Message() const;
  // The shared reasons this status was made from; null when it holds its own. Statuses with the
  // same FixedReasons have the same reasons.
  const FixedReasons* fixed_reasons() const { return fixed_reasons_; }

  // The plugin that produced this status (set by the runtime).
  const std::string& plugin() const { return plugin_.str(); }
  Status& WithPlugin(std::string_view plugin) {
    plugin_ = PluginName(plugin);
    return *this;
  }
  Status& WithPlugin(PluginName plugin) {
    plugin_ = plugin;
    return *this;
  }

 private:
  Code code_ = Code::kSuccess;
  // At most one of the two holds reasons.
  std::vector<std::string> reasons_;
  const FixedReasons* fixed_reasons_ = nullptr;
  PluginName plugin_;
};

// Data a plugin keeps for one scheduling cycle. Clone() must deep-copy what AddPod/RemovePod
// (PreFilterExtensions) would mutate.
class StateData {
 public:
  virtual ~StateData() = default;
  virtual std::shared_ptr<StateData> Clone() const = 0;
};

// A CycleState key made once (a plugin's static), interned like PluginName: a lookup by StateKey
// compares one pointer instead of the key's text. Filter and Score read the cycle's state for
// every node, where comparing text was a measurable cost.
class StateKey {
 public:
  // Takes a process-wide lock: made once per key, not per call.
  explicit StateKey(std::string_view name) : name_(name) {}

  const std::string& str() const { return name_.str(); }
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  // The interned text: equal for equal names.
  const std::string* id() const { return &name_.str(); }

 private:
  PluginName name_;
};

// Per-cycle key/value store shared by the plugins of one pod's cycle. Thread-safe. Writes are
// rare (PreFilter, PreScore, Reserve...) and publish a new copy of the entries; reads (every
// Filter and Score call, from many threads at once) take no lock and touch no reference count,
// so workers do not contend on it. Every published copy and every value written is kept until the
// CycleState is destroyed, which is what keeps a pointer returned by Read valid for the cycle.
class CycleState {
 public:
  CycleState() = default;
  CycleState(const CycleState&) = delete;
  CycleState& operator=(const CycleState&) = delete;

  // A key written as a StateKey and as its text is one entry either way.
  void Write(const std::string& key, std::shared_ptr<StateData> data);
  void Write(const StateKey& key, std::shared_ptr<StateData> data);
  std::shared_ptr<StateData> ReadData(const std::string& key) const;
  // Null when absent or of another type; valid while this CycleState lives.
  template <typename T>
  T* Read(const std::string& key) const {
    return As<T>(Find(key));
  }
  template <typename T>
  T* Read(const StateKey& key) const {
    return As<T>(Find(key));
  }
  void Delete(const std::string& key);
  std::unique_ptr<CycleState> Clone() const;

  // Plugins whose PreFilter / PreScore returned Skip this cycle.
  PluginSet skip_filter_plugins;
  PluginSet skip_score_plugins;
  // The framework's summary of skip_filter_plugins after PreFilter: one flag per Filter plugin
  // of the profile, in order. Empty until PreFilter has run.
  std::vector<char> filter_skipped;
  // Whether per-plugin durations are recorded in this cycle (sampled).
  bool record_plugin_metrics = false;
  // A what-if cycle (explain and simulate): PreFilter, Filter, PreScore and Score run as in a
  // scheduling cycle, between scheduling cycles, but a plugin must change nothing a real cycle
  // could tell: no events, no writes to the cluster, no state of its own beyond caches of what
  // the snapshot holds. The framework records no metrics. Nothing is assumed, reserved or bound.
  bool dry_run = false;
  // Dry runs only: plugins left out, PreFilter and Filter alike, to see what the pod would face
  // without their verdict.
  PluginSet ignored_plugins;

 private:
  // Trivially copyable, so that publishing a version copies no string and touches no reference
  // count. `key` and `data` point into keys_ (or at the interned id) and data_.
  struct Entry {
    std::string_view key;
    // The interned key when written as a StateKey; null when written as text.
    const std::string* id = nullptr;
    const std::shared_ptr<StateData>* data = nullptr;
  };
  using Entries = std::vector<Entry>;
  template <typename T>
  static T* As(StateData* data) {
    // The exact type is the common case and a type_info comparison is far cheaper than a
    // dynamic_cast; Read runs for every node in Filter and Score.
    if (data == nullptr || typeid(*data) == typeid(T)) return static_cast<T*>(data);
    return dynamic_cast<T*>(data);
  }
  // The current entry `match` accepts; null when none does.
  template <typename Match>
  const Entry* FindEntry(Match match) const;
  StateData* Find(const std::string& key) const;
  StateData* Find(const StateKey& key) const;
  void Put(const std::string& key, const std::string* id, std::shared_ptr<StateData> data);
  // Publishes a copy of the current entries changed by `change`, which runs under write_mu_.
  template <typename Change>
  void Publish(Change change);
  // An entry for `data` under `key`, whose text and data it keeps in keys_ and data_. Holds
  // write_mu_.
  Entry Store(std::string_view key, const std::string* id, std::shared_ptr<StateData> data);

  std::mutex write_mu_;
  // Guarded by write_mu_; deques, so that their elements never move. An element is never changed
  // once added (a version once published), and is read without the lock through current_.
  std::deque<std::string> keys_;
  std::deque<std::shared_ptr<StateData>> data_;
  std::deque<Entries> versions_;
  std::atomic<const Entries*> current_{nullptr};
};

// Read access to the snapshot of the cluster the cycle works on.
class NodeInfoLister {
 public:
  virtual ~NodeInfoLister() = default;
  virtual const std::vector<NodeInfoPtr>& List() const = 0;
  virtual const std::vector<NodeInfoPtr>& HavePodsWithAffinityList() const = 0;
  virtual const std::vector<NodeInfoPtr>& HavePodsWithRequiredAntiAffinityList() const = 0;
  // Null when the snapshot has no such node.
  virtual NodeInfoPtr Get(const std::string& node_name) const = 0;
  // Whether any pod on the snapshot's nodes (assumed pods included) uses the claim `key`
  // ("namespace/name") by a persistentVolumeClaim volume.
  virtual bool IsPVCUsedByPods(const std::string& key) const = 0;
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
};
using PluginPtr = std::shared_ptr<Plugin>;

// Runs before a pod enters activeQ; a non-success keeps it in the unschedulable pool (gated)
// until an event that the plugin registered for moves it again.
class PreEnqueuePlugin : public virtual Plugin {
 public:
  virtual Status PreEnqueue(const api::Pod& pod) = 0;
};

// Orders activeQ. Exactly one per profile.
class QueueSortPlugin : public virtual Plugin {
 public:
  virtual bool Less(const QueuedPodInfo& a, const QueuedPodInfo& b) const = 0;
};

// From PreFilter: when set, only these nodes may be considered (intersected across plugins).
struct PreFilterResult {
  std::optional<std::set<std::string>> node_names;
  bool AllNodes() const { return !node_names.has_value(); }
};

// Lets preemption (and nominated pods) evaluate "what if this pod were added/removed" without
// re-running PreFilter.
class PreFilterExtensions {
 public:
  virtual ~PreFilterExtensions() = default;
  virtual Status AddPod(CycleState& state, const api::Pod& pod_to_schedule,
                        const PodInfo& pod_to_add, const NodeInfo& node) = 0;
  virtual Status RemovePod(CycleState& state, const api::Pod& pod_to_schedule,
                           const PodInfo& pod_to_remove, const NodeInfo& node) = 0;
};

class PreFilterPlugin : public virtual Plugin {
 public:
  // Returning Skip skips this plugin's Filter for this cycle.
  virtual Status PreFilter(CycleState& state, const api::Pod& pod,
                           const std::vector<NodeInfoPtr>& nodes, PreFilterResult* result) = 0;
  virtual PreFilterExtensions* Extensions() { return nullptr; }
};

// Called concurrently for different nodes: must only read `state`.
class FilterPlugin : public virtual Plugin {
 public:
  virtual Status Filter(const CycleState& state, const api::Pod& pod, const NodeInfo& node) = 0;
  // Filter over a run of nodes; the runtime calls this, not Filter, in a scheduling cycle.
  // `statuses` arrive successful: the plugin sets statuses[i] to what Filter returns for nodes[i]
  // where that is not success, and leaves the rest. The default calls Filter per node. A plugin
  // on the hot path overrides it to read its CycleState once per run instead of once per node,
  // which with the virtual call per node cost as much as a cheap plugin's check; the results must
  // equal Filter's.
  virtual void FilterNodes(const CycleState& state, const api::Pod& pod,
                           std::span<const NodeInfo* const> nodes, std::span<Status> statuses);
};

// Why each node was rejected in one scheduling cycle: the status of every node Filter rejected,
// and one status standing for every node that was never filtered (PreFilter ruled it out, or
// rejected the pod for all nodes). Node names are views of the cycle's snapshot, valid for the
// scheduling cycle only, as NodeScore's are: a pod that fits nowhere records one entry per node
// of the cluster, and copying each name (and hashing it into a map) cost more than filtering.
class NodeToStatus {
 public:
  struct Entry {
    std::string_view node;
    Status status;
  };

  NodeToStatus() = default;
  NodeToStatus(const NodeToStatus&) = delete;
  NodeToStatus& operator=(const NodeToStatus&) = delete;

  // `node` must outlive this object. Each node is set at most once, and every Set comes before
  // the first Get.
  void Set(std::string_view node, Status status);
  // The node's own status, else the absent-nodes status. Builds an index on first use;
  // thread-safe.
  const Status& Get(std::string_view node) const;
  // Upstream's default: a node that was never filtered cannot be helped by preemption.
  const Status& absent_nodes_status() const { return absent_; }
  void set_absent_nodes_status(Status status) { absent_ = std::move(status); }
  // Nodes with their own status, in the order they were set.
  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  void Reserve(size_t n) { entries_.reserve(n); }

 private:
  std::vector<Entry> entries_;
  Status absent_{Code::kUnschedulableAndUnresolvable, std::vector<std::string>{}};
  mutable std::once_flag index_once_;
  mutable std::unordered_map<std::string_view, size_t> index_;
};

// The reasons of "0/N nodes are available: <reasons>." in upstream's format: each reason counted
// over the `num_all_nodes` nodes (those without a status of their own with the absent-nodes
// status), written "count reason", sorted as strings and joined with ", ". Empty without reasons.
std::string CountNodeReasons(int num_all_nodes, const NodeToStatus& statuses);

// A change to a pod that a plugin proposes so that more nodes pass it: what explain and simulate
// show under "what would make it fit".
struct PodChange {
  // The change, said to a person: "reduce cpu request by 300m".
  std::string description;
  // Makes the change on a copy of the pod. Null when the change is not the pod's to make (a gang
  // still short of members): the plugin is then left out of the check (ignored_plugins).
  std::function<void(api::Pod&)> apply;
  // Writes into the check's cycle state, before PreFilter, what the plugin reads there in place of
  // the cluster's objects the change is about (a ResourceClaim as the change would make it).
  // Null: the change is the pod's alone.
  std::function<void(CycleState&)> prepare;
  // What blocks the pod where it comes closest, best first: (node or domain, what it lacks).
  std::vector<std::pair<std::string, std::string>> details;
  // Set when nothing about the pod gets it past the plugin (other pods' anti-affinity that selects
  // every pod like it): `description` says what blocks it and what would have to change instead.
  // Shown as a note; nothing is applied or checked.
  bool note_only = false;
};

// Pods that bind together or not at all (a gang), as the plugin that holds them back sees them.
struct PodGroupHint {
  // How messages name the group: `pod group "ns/name"`.
  std::string name;
  // Pods that must be placed at once before any binds.
  int32_t min_member = 0;
  // Members assumed or bound: they count toward min_member and already hold their room.
  int32_t placed = 0;
  // Members neither assumed nor bound; the pod asked about first when it is one of them.
  std::vector<api::PodPtr> pending;
  // The uids of the members that are assumed or bound (`placed` of them).
  std::vector<std::string> placed_uids;
  // The plugin that holds the group back (Handle::GroupOf fills it; a plugin need not).
  std::string plugin;
  // Its placed pods may only be preempted together, not merely kept at min_member.
  bool disrupted_whole = false;
  // Set when the group's pods must go in one domain of a node-label key (see
  // api::PodGroupTopology): preemption then frees room inside one domain.
  std::optional<api::PodGroupTopology> topology;
};

// A plugin that can say what would let a pod past it. After a dry run of the pod over every
// node, the scheduler asks each plugin that rejected nodes for changes, then checks each change by
// running PreFilter and Filter again with it applied, and reports how many nodes pass. Suggestions
// come from what the plugin saw, not guesses: the check is what gives the node count.
class HintPlugin : public virtual Plugin {
 public:
  // `rejected` and `statuses` (parallel): the nodes this plugin's Filter rejected in the dry run
  // and why; `pre_filter`: this plugin's PreFilter rejection when that stopped the pod (then
  // `rejected` is empty), else null. `state` is the dry run's. Runs on the snapshot between
  // scheduling cycles; must not change anything.
  virtual std::vector<PodChange> SuggestChanges(const CycleState& state, const api::Pod& pod,
                                                std::span<const NodeInfo* const> rejected,
                                                std::span<const Status* const> statuses,
                                                const Status* pre_filter) const = 0;
  // The group `pod` binds with or not at all, when this plugin holds pods back until enough of
  // their group fit; nullopt for a pod that binds on its own. The scheduler then checks every
  // change by placing the group's pending pods together, each changed, with this plugin left out,
  // and what it finds is said of the group.
  virtual std::optional<PodGroupHint> GroupOf(const api::Pod& /*pod*/) const {
    return std::nullopt;
  }
  // The group whose placed pods go with `pod` when a preemption evicts it: GroupOf's gang (kept
  // at its minimum, or taken whole when disrupted_whole), and also a group whose pods are placed
  // one by one but may only be disrupted together (disrupted_whole set; its min_member binds
  // nothing). Nullopt for a pod that is a victim on its own. Never a reason to place pods
  // together: only preemption's choice of victims reads it.
  virtual std::optional<PodGroupHint> VictimGroupOf(const api::Pod& pod) const {
    return GroupOf(pod);
  }
};

struct PostFilterResult {
  // When set, the pod is nominated to this node (preemption made room there).
  std::string nominated_node_name;
  // With no node named: clear the pod's nomination (upstream's ModeOverride with an empty node),
  // as when preemption cannot help; when false, the nomination is left as it is.
  bool clear_nomination = false;
  // Other pending pods of the pod's group, each nominated to its node as well: a gang's
  // preemption makes room for every member it still needs, and the room is kept for all of them.
  std::vector<std::pair<api::PodPtr, std::string>> group_nominations;
};

class PostFilterPlugin : public virtual Plugin {
 public:
  virtual Status PostFilter(CycleState& state, const api::Pod& pod,
                            const NodeToStatus& filtered_node_status, PostFilterResult* result) = 0;
};

class PreScorePlugin : public virtual Plugin {
 public:
  // Returning Skip skips this plugin's Score for this cycle. `nodes` are the feasible nodes,
  // owned by the cycle's snapshot.
  virtual Status PreScore(CycleState& state, const api::Pod& pod,
                          std::span<const NodeInfo* const> nodes) = 0;
};

struct NodeScore {
  // The node's name, owned by the cycle's snapshot: valid for the scheduling cycle only.
  std::string_view name;
  int64_t score = 0;
};
using NodeScoreList = std::vector<NodeScore>;

class ScoreExtensions {
 public:
  virtual ~ScoreExtensions() = default;
  // Rescales the plugin's raw scores into [kMinNodeScore, kMaxNodeScore].
  virtual Status NormalizeScore(const CycleState& state, const api::Pod& pod,
                                NodeScoreList& scores) = 0;
};

// Called concurrently for different nodes: must only read `state`.
class ScorePlugin : public virtual Plugin {
 public:
  virtual Status Score(const CycleState& state, const api::Pod& pod, const NodeInfo& node,
                       int64_t* score) = 0;
  // Score over a run of nodes; the runtime calls this, not Score, in a scheduling cycle: it sets
  // scores[i].score to Score's result for nodes[i] and returns Score's first failure, if any (the
  // remaining scores are then unspecified). The default calls Score per node; overriding it (for
  // the same reason as FilterNodes) must give Score's results.
  virtual Status ScoreNodes(const CycleState& state, const api::Pod& pod,
                            std::span<const NodeInfo* const> nodes, std::span<NodeScore> scores);
  virtual ScoreExtensions* GetScoreExtensions() { return nullptr; }

 protected:
  // Score as ScoreNodes over a run of one node, for a plugin whose ScoreNodes holds its scoring
  // logic (never with the default ScoreNodes, which calls Score).
  Status ScoreAsRunOfOne(const CycleState& state, const api::Pod& pod, const NodeInfo& node,
                         int64_t* score);
};

class ReservePlugin : public virtual Plugin {
 public:
  virtual Status Reserve(CycleState& state, const api::Pod& pod, const std::string& node) = 0;
  // Must be idempotent and must not fail: it may run for a pod whose Reserve never ran.
  virtual void Unreserve(CycleState& state, const api::Pod& pod, const std::string& node) = 0;
};

class PermitPlugin : public virtual Plugin {
 public:
  // Returning Wait parks the pod for at most `*timeout` (capped at kMaxPermitTimeout) until
  // Handle::GetWaitingPod(uid)->Allow(Name()) or Reject(...).
  virtual Status Permit(CycleState& state, const api::Pod& pod, const std::string& node,
                        std::chrono::milliseconds* timeout) = 0;
};

class PreBindPlugin : public virtual Plugin {
 public:
  virtual Status PreBind(CycleState& state, const api::Pod& pod, const std::string& node) = 0;
  // Skip when PreBind will do nothing for `pod` on `node`; anything else when it will. Runs after
  // Reserve, on the scheduling thread. A binding cycle whose PreBind has work may wait on other
  // controllers (a volume being provisioned), so the scheduler runs it apart from the binding
  // cycles of pods that are ready to bind.
  virtual Status PreBindPreFlight(CycleState& state, const api::Pod& pod, const std::string& node) {
    (void)state;
    (void)pod;
    (void)node;
    return {};
  }
};

// The first Bind plugin that does not return Skip binds the pod.
class BindPlugin : public virtual Plugin {
 public:
  virtual Status Bind(CycleState& state, const api::Pod& pod, const std::string& node) = 0;
};

// A Bind plugin that can also bind with no thread waiting for the apiserver's answer. The
// scheduler binds through BindAsync when such a plugin comes first among the Bind plugins and
// nothing else in the pod's binding cycle needs a thread of its own.
class AsyncBindPlugin : public virtual BindPlugin {
 public:
  // The outcome of BindAsync: a final status (never Skip), or nullopt when the try did not settle
  // it (the answer was lost, or a retry may change it); Bind then runs to settle it.
  using BindDone = std::function<void(std::optional<Status>)>;
  // Starts binding `pod` to `node`. False, without `done` ever running, when that cannot start
  // without blocking; Bind runs instead. Else `done` runs exactly once, on a thread that must not
  // block, possibly the caller's before BindAsync returns.
  virtual bool BindAsync(const api::Pod& pod, const std::string& node, BindDone done) = 0;
};

class PostBindPlugin : public virtual Plugin {
 public:
  virtual void PostBind(CycleState& state, const api::Pod& pod, const std::string& node) = 0;
};

// ---- Cluster events and queueing hints ----

// A resource named as upstream's framework.EventResource: "Node", "PersistentVolumeClaim", ...,
// for a custom resource "<plural>.<version>.<group>" (as "podgroups.v1alpha1.scheduling.x-k8s.io"),
// or "*" for every resource. Pods are split in two, as upstream's queue does internally: the pod
// being scheduled ("UnscheduledPod") and every other, assigned, pod ("AssignedPod").
// Names compare by content; a name made at run time is interned, so copies stay cheap and a
// registration may name any resource an informer can watch.
class EventResource {
 public:
  // The wildcard.
  constexpr EventResource() = default;
  // `name` is interned; use the constants below for built-in resources.
  explicit EventResource(std::string_view name);

  static const EventResource kPod;  // Assigned pods.
  static const EventResource kUnscheduledPod;
  static const EventResource kNode;
  static const EventResource kNamespace;
  static const EventResource kPersistentVolume;
  static const EventResource kPersistentVolumeClaim;
  static const EventResource kStorageClass;
  static const EventResource kCSINode;
  static const EventResource kCSIDriver;
  static const EventResource kCSIStorageCapacity;
  static const EventResource kVolumeAttachment;
  static const EventResource kPodDisruptionBudget;
  static const EventResource kService;
  static const EventResource kReplicaSet;
  static const EventResource kStatefulSet;
  static const EventResource kReplicationController;
  // scheduler-plugins' PodGroup (scheduling.x-k8s.io/v1alpha1), read as api::PodGroup.
  static const EventResource kPodGroup;
  // Upstream's PodGroup (scheduling.k8s.io/v1beta1), read as api::WorkloadPodGroup.
  static const EventResource kWorkloadPodGroup;
  // resource.k8s.io/v1.
  static const EventResource kResourceClaim;
  static const EventResource kResourceSlice;
  static const EventResource kDeviceClass;
  static const EventResource kDeviceTaintRule;
  static const EventResource kWildcard;

  std::string_view name() const { return name_; }
  bool IsWildcard() const { return name_ == "*"; }
  bool operator==(const EventResource& other) const { return name_ == other.name_; }
  auto operator<=>(const EventResource& other) const { return name_ <=> other.name_; }

 private:
  struct Literal {};
  constexpr EventResource(Literal, std::string_view name) : name_(name) {}

  std::string_view name_ = "*";
};

inline constexpr EventResource EventResource::kPod{Literal{}, "AssignedPod"};
inline constexpr EventResource EventResource::kUnscheduledPod{Literal{}, "UnscheduledPod"};
inline constexpr EventResource EventResource::kNode{Literal{}, "Node"};
inline constexpr EventResource EventResource::kNamespace{Literal{}, "Namespace"};
inline constexpr EventResource EventResource::kPersistentVolume{Literal{}, "PersistentVolume"};
inline constexpr EventResource EventResource::kPersistentVolumeClaim{Literal{},
                                                                     "PersistentVolumeClaim"};
inline constexpr EventResource EventResource::kStorageClass{Literal{}, "StorageClass"};
inline constexpr EventResource EventResource::kCSINode{Literal{}, "CSINode"};
inline constexpr EventResource EventResource::kCSIDriver{Literal{}, "CSIDriver"};
inline constexpr EventResource EventResource::kCSIStorageCapacity{Literal{}, "CSIStorageCapacity"};
inline constexpr EventResource EventResource::kVolumeAttachment{Literal{}, "VolumeAttachment"};
inline constexpr EventResource EventResource::kPodDisruptionBudget{Literal{},
                                                                   "PodDisruptionBudget"};
inline constexpr EventResource EventResource::kService{Literal{}, "Service"};
inline constexpr EventResource EventResource::kReplicaSet{Literal{}, "ReplicaSet"};
inline constexpr EventResource EventResource::kStatefulSet{Literal{}, "StatefulSet"};
inline constexpr EventResource EventResource::kReplicationController{Literal{},
                                                                     "ReplicationController"};
inline constexpr EventResource EventResource::kPodGroup{Literal{},
                                                        "podgroups.v1alpha1.scheduling.x-k8s.io"};
inline constexpr EventResource EventResource::kWorkloadPodGroup{Literal{},
                                                                "scheduling.k8s.io/PodGroup"};
inline constexpr EventResource EventResource::kResourceClaim{Literal{}, "ResourceClaim"};
inline constexpr EventResource EventResource::kResourceSlice{Literal{}, "ResourceSlice"};
inline constexpr EventResource EventResource::kDeviceClass{Literal{}, "DeviceClass"};
inline constexpr EventResource EventResource::kDeviceTaintRule{Literal{}, "DeviceTaintRule"};
inline constexpr EventResource EventResource::kWildcard{Literal{}, "*"};

// Bit flags, combinable.
enum ActionType : uint32_t {
  kAdd = 1u << 0,
  kDelete = 1u << 1,
  kUpdateNodeAllocatable = 1u << 2,
  kUpdateNodeLabel = 1u << 3,
  kUpdateNodeTaint = 1u << 4,
  kUpdateNodeCondition = 1u << 5,
  kUpdateNodeAnnotation = 1u << 6,
  kUpdatePodLabel = 1u << 7,
  kUpdatePodScaleDown = 1u << 8,
  kUpdatePodTolerations = 1u << 9,
  kUpdatePodSchedulingGatesEliminated = 1u << 10,
  kUpdatePodGeneratedResourceClaim = 1u << 11,
  kUpdateNodeSpecUnschedulable = 1u << 12,
  kUpdateNodeDeclaredFeature = 1u << 13,
  kUpdate = kUpdateNodeAllocatable | kUpdateNodeLabel | kUpdateNodeTaint | kUpdateNodeCondition |
            kUpdateNodeAnnotation | kUpdatePodLabel | kUpdatePodScaleDown | kUpdatePodTolerations |
            kUpdatePodSchedulingGatesEliminated | kUpdatePodGeneratedResourceClaim |
            kUpdateNodeSpecUnschedulable | kUpdateNodeDeclaredFeature,
  kAll = kAdd | kDelete | kUpdate,
};

struct ClusterEvent {
  EventResource resource = EventResource::kWildcard;
  uint32_t actions = kAll;
  // For metrics and logs: "NodeAdd", "AssignedPodDelete", ...
  std::string label;

  // True when `self` (a registration) covers the concrete event `other`.
  bool Matches(const ClusterEvent& other) const;
};

// The objects of one event; the pointers that do not apply are null. Pods and nodes have typed
// pointers; any other resource's objects are in `old_object`/`new_object` as the informer holds
// them (std::shared_ptr<const T>), read with OldAs<T>() / NewAs<T>().
struct EventObjects {
  api::PodPtr old_pod;
  api::PodPtr new_pod;
  api::NodePtr old_node;
  api::NodePtr new_node;
  std::any old_object;
  std::any new_object;

  // Null when absent or of another type.
  template <typename T>
  std::shared_ptr<const T> OldAs() const {
    return As<T>(old_object);
  }
  template <typename T>
  std::shared_ptr<const T> NewAs() const {
    return As<T>(new_object);
  }

 private:
  template <typename T>
  static std::shared_ptr<const T> As(const std::any& object) {
    const auto* ptr = std::any_cast<std::shared_ptr<const T>>(&object);
    return ptr ? *ptr : nullptr;
  }
};

enum class QueueingHint { kSkip, kQueue };

// Decides whether `event` may make `pod` (rejected by this plugin) schedulable. Must be cheap
// and side-effect free; it runs on the event handler thread.
using QueueingHintFn = std::function<QueueingHint(const api::Pod& pod, const EventObjects& event)>;

struct ClusterEventWithHint {
  ClusterEvent event;
  QueueingHintFn hint;  // Empty: always kQueue.
};

// Plugins that can reject pods implement this to say which events may make them schedulable;
// the queue moves a rejected pod only on those events (and only if the hint says kQueue).
class EnqueueExtensions : public virtual Plugin {
 public:
  virtual std::vector<ClusterEventWithHint> EventsToRegister() const = 0;
};

// ---- What the scheduler offers plugins ----

// A pod parked by Permit. Thread-safe.
class WaitingPod {
 public:
  virtual ~WaitingPod() = default;
  virtual api::PodPtr GetPod() const = 0;
  // Permit plugins that have not yet allowed the pod.
  virtual std::vector<std::string> GetPendingPlugins() const = 0;
  // Marks `plugin` as allowing; the pod proceeds once every waiting plugin allowed.
  virtual void Allow(const std::string& plugin) = 0;
  virtual void Reject(const std::string& plugin, const std::string& message) = 0;
};

// Runs pieces of work on a fixed pool of `parallelism` threads (the caller's included).
class Parallelizer {
 public:
  virtual ~Parallelizer() = default;
  // Calls work(i) for i in [0, pieces) and returns when all are done or `stop` became true
  // (pieces not yet started are then skipped).
  virtual void Until(int pieces, const std::function<void(int)>& work,
                     const std::atomic<bool>* stop = nullptr) = 0;
  virtual int parallelism() const = 0;
};

// Recorded on the pod (events.k8s.io/v1). Thread-safe, never blocks on the network.
class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  // type: "Normal" or "Warning"; reason: "Scheduled", "FailedScheduling", ...
  virtual void Eventf(const api::Pod& regarding, const std::string& type, const std::string& reason,
                      const std::string& action, const std::string& note) = 0;
  // The same about any other object (a PodGroup).
  virtual void Eventf(const api::ObjectReference& regarding, const std::string& type,
                      const std::string& reason, const std::string& action,
                      const std::string& note) = 0;
};

// Pods nominated to nodes by preemption, so that Filter accounts for them.
class PodNominator {
 public:
  virtual ~PodNominator() = default;
  virtual std::vector<PodInfoPtr> NominatedPodsForNode(const std::string& node) const = 0;
  // False only when no pod is nominated to any node, so that Filter may skip the per-node
  // lookup. May be stale by the time it returns, as NominatedPodsForNode may.
  virtual bool HasNominatedPods() const { return true; }
};

struct PluginScore {
  std::string_view plugin;  // Owned by the Framework.
  int64_t score = 0;        // Normalized and weighted.
};

// One node's total and per-plugin scores. Plugin names are views into the Framework, which
// outlives every cycle; the node name is a view of the scored NodeInfo's, valid for the scheduling
// cycle only (as NodeScore's): copying it for every scored node was a visible share of Score.
struct NodePluginScores {
  std::string_view name;
  std::vector<PluginScore> scores;
  int64_t total = 0;
};

// kube-scheduler's metrics that a preemption plugin feeds. Thread-safe.
class PreemptionMetrics {
 public:
  virtual ~PreemptionMetrics() = default;
  // scheduler_preemption_attempts_total.
  virtual void ObserveAttempt() = 0;
  // scheduler_preemption_victims: the victims of one preemption.
  virtual void ObserveVictims(size_t victims) = 0;
};

// Runs the profile's own plugins, for plugins that must evaluate a hypothetical state: preemption
// re-runs Filter on a node with victims removed (telling PreFilter extensions through
// RunPreFilterExtensionRemovePod / AddPod first). Same rules and metrics as the scheduling cycle.
class PluginsRunner {
 public:
  virtual ~PluginsRunner() = default;
  virtual Status RunPreScorePlugins(CycleState& state, const api::Pod& pod,
                                    std::span<const NodeInfo* const> nodes) = 0;
  // Scores, normalizes, range-checks and weights over `nodes`.
  virtual Status RunScorePlugins(const CycleState& state, const api::Pod& pod,
                                 std::span<const NodeInfo* const> nodes,
                                 std::vector<NodePluginScores>* out) = 0;
  // Every Filter plugin not skipped in this cycle, on one node; the first rejection.
  virtual Status RunFilterPlugins(const CycleState& state, const api::Pod& pod,
                                  const NodeInfo& node, int node_index = 0) = 0;
  // RunFilterPlugins as if the pods nominated to the node with at least the pod's priority were
  // already there, and also without them (the pod must fit both ways), as the scheduling cycle
  // filters.
  virtual Status RunFilterPluginsWithNominatedPods(const CycleState& state, const api::Pod& pod,
                                                   const NodeInfo& node, int node_index = 0) = 0;
  virtual Status RunPreFilterExtensionAddPod(CycleState& state, const api::Pod& pod,
                                             const PodInfo& to_add, const NodeInfo& node) = 0;
  virtual Status RunPreFilterExtensionRemovePod(CycleState& state, const api::Pod& pod,
                                                const PodInfo& to_remove, const NodeInfo& node) = 0;
  // Whether RunPreFilterExtensionAddPod / RemovePod would call anything on `state`: some PreFilter
  // plugin has extensions and is not skipped in it. When false both are no-ops that succeed, so a
  // simulation that replays many pods into a state may leave the replay out.
  virtual bool HasActivePreFilterExtensions(const CycleState& state) const = 0;
};

// What a plugin may use of the scheduler; given to its factory, valid for the plugin's life.
// The victims of a preemption on one node, as extenders see and answer them.
struct ExtenderVictims {
  std::vector<PodInfoPtr> pods;
  int64_t num_pdb_violations = 0;
};

// One extender's score for one node, before weighting (kube-scheduler's HostPriority; 0..10 by
// contract, taken as sent).
struct ExtenderScore {
  std::string host;
  int64_t score = 0;
};

// A kube-scheduler extender: a service asked after the Filter plugins (it may drop nodes), beside
// the Score plugins (its weighted scores are added), during preemption (it may drop candidates or
// change their victims) and for binding, as kube-scheduler v1 asks it. Implemented by
// pkg/extender; called by the scheduler and DefaultPreemption. Each call blocks for at most the
// extender's httpTimeout. Thread-safe.
class Extender {
 public:
  virtual ~Extender() = default;
  // Its urlPrefix, which names it in messages, scores and metrics.
  virtual const PluginName& Name() const = 0;
  virtual bool IsFilter() const = 0;
  virtual bool IsPrioritizer() const = 0;
  virtual bool IsBinder() const = 0;
  virtual bool SupportsPreemption() const = 0;
  // A failing ignorable extender is skipped instead of failing the pod's cycle.
  virtual bool IsIgnorable() const = 0;
  virtual int64_t Weight() const = 0;
  // False when the extender manages resources and the pod requests or limits none of them in a
  // container or init container: the extender is then not asked about the pod at all.
  virtual bool IsInterested(const api::Pod& pod) const = 0;

  struct FilterResult {
    std::vector<const NodeInfo*> feasible;  // A subset of the nodes given, in the extender's order.
    // Node name and reason: Unschedulable, and UnschedulableAndUnresolvable.
    std::vector<std::pair<std::string, std::string>> failed, failed_and_unresolvable;
  };
  // Which of `nodes` the pod may go to. An error status (the call failed, the answer is malformed
  // or names a node it was not given) carries a message naming the extender.
  virtual Status Filter(const api::Pod& pod, std::span<const NodeInfo* const> nodes,
                        FilterResult* out) const = 0;

  // Scores being computed by the extender; Wait() at most once.
  class PendingScores {
   public:
    virtual ~PendingScores() = default;
    virtual Status Wait(std::vector<ExtenderScore>* out) = 0;
  };
  // Starts scoring `nodes` without waiting, so that extenders score at once and while the Score
  // plugins run.
  virtual std::unique_ptr<PendingScores> StartPrioritize(
      const api::Pod& pod, std::span<const NodeInfo* const> nodes) const = 0;

  // The candidates the extender accepts, from `victims` (node name to victims): it may drop
  // nodes and change victims. Victims it names are looked up among `lister`'s node's pods.
  virtual Status ProcessPreemption(const api::Pod& pod,
                                   const std::map<std::string, ExtenderVictims>& victims,
                                   const NodeInfoLister& lister,
                                   std::map<std::string, ExtenderVictims>* out) const = 0;

  // Binds the pod to `node` (the extender does it).
  virtual Status Bind(const api::Pod& pod, const std::string& node) const = 0;
};

class Handle : public PluginsRunner {
 public:
  ~Handle() override = default;
  // The cycle's snapshot of nodes and their pods. For the scheduling thread only (Filter and
  // Score workers included): the binding cycle and event handlers must not read it, since the
  // next cycle updates it in place.
  virtual const NodeInfoLister& SnapshotSharedLister() const = 0;
  // The client for plugins that write (PreBind). Null in tests and benchmarks that run without an
  // apiserver.
  virtual client::Client* ClientSet() const = 0;
  // Informers and listers of any resource in pkg/informer/resources.h (include
  // pkg/informer/factory.h). Asking for one in the plugin's factory is what starts it, and the
  // scheduler waits for it to sync before the first cycle. Without an apiserver its stores hold
  // what the caller put there.
  virtual informer::SharedInformerFactory& SharedInformerFactory() const = 0;
  // Null when no pod with that uid is waiting.
  virtual std::shared_ptr<WaitingPod> GetWaitingPod(const std::string& uid) = 0;
  virtual void IterateOverWaitingPods(const std::function<void(WaitingPod&)>& fn) = 0;
  virtual void RejectWaitingPod(const std::string& uid) = 0;
  // Allows all of these waiting pods at `plugin`, or none: when one of them is already decided or
  // no longer waiting (a rejection won the race), nothing changes and its uid is returned. Empty
  // when all were allowed. A gang must never bind while one of its placed pods was turned away.
  virtual std::string AllowWaitingPods(const std::vector<std::string>& uids,
                                       const std::string& plugin) = 0;
  virtual EventRecorder& GetEventRecorder() = 0;
  virtual Parallelizer& GetParallelizer() = 0;
  virtual PodNominator& Nominator() = 0;
  // Moves these pending pods (by uid) to the active queue at once, whatever their backoff, when
  // they wait in the unschedulable pool or in backoffQ; gated pods run PreEnqueue again and may
  // stay gated. A pod in flight (in its scheduling or binding cycle) is not moved now: if its
  // attempt fails, it is requeued as an event aimed at it would requeue it (to activeQ, or to
  // backoffQ while its own backoff runs), never left to wait for a cluster event. Unknown pods are
  // ignored. For a plugin whose decision about one pod makes others worth trying (a gang's pods, a
  // preemptor whose victims are gone). Thread-safe; must not be called while holding a lock that
  // the plugin's QueueSort, PreEnqueue or queueing hints take.
  virtual void Activate(const std::vector<std::string>& pod_uids) = 0;
  virtual PreemptionMetrics& GetPreemptionMetrics() = 0;
  // Where a plugin registers metrics of its own, served with the scheduler's; null when metrics
  // are not collected (tests, benchmarks).
  virtual prometheus::Registry* MetricsRegistry() const = 0;
  // Extenders (KubeSchedulerConfiguration's `extenders`), in the scheduler's order: the
  // ignorable ones last. Empty when none are configured.
  virtual const std::vector<std::shared_ptr<Extender>>& Extenders() const {
    static const std::vector<std::shared_ptr<Extender>> kNone;
    return kNone;
  }
  // The name of the profile this framework instance serves.
  virtual const std::string& ProfileName() const = 0;
  // The group `pod` binds with or not at all, from the first of the profile's HintPlugins that
  // holds it (HintPlugin::GroupOf), with that plugin's name in `plugin`; nullopt when none does.
  // For a plugin that must treat a group as one (preemption for a gang).
  virtual std::optional<PodGroupHint> GroupOf(const api::Pod& /*pod*/) const {
    return std::nullopt;
  }
  // The group a victim `pod` is evicted with, from the first of the profile's HintPlugins that
  // has one (HintPlugin::VictimGroupOf), with that plugin's name in `plugin`; nullopt when none
  // does. For preemption's choice of victims only: such a group need not bind whole.
  virtual std::optional<PodGroupHint> VictimGroupOf(const api::Pod& /*pod*/) const {
    return std::nullopt;
  }
  // The profile's PreFilter plugins for `pod` over the snapshot's nodes into `state` (a fresh
  // one; set state.dry_run and state.ignored_plugins first to leave plugins out), as a scheduling
  // cycle runs them; `result` gets the nodes they narrowed to. For a plugin that tries other pods
  // than the cycle's own (the other members of a gang).
  virtual Status RunPreFilterForPod(CycleState& /*state*/, const api::Pod& /*pod*/,
                                    PreFilterResult* /*result*/) {
    return Status::Error("this handle runs no PreFilter plugins");
  }
  // True once the scheduler is shutting down. A plugin that waits in a binding cycle (PreBind
  // waiting for a volume to be bound) stops waiting and fails, so shutdown is not held for as long
  // as the wait could last.
  virtual bool Stopping() const = 0;
};

// Builds a plugin from its args (pluginConfig, as JSON; null when none given). Throws
// std::invalid_argument with a "field: problem" message for bad args.
using PluginFactory = std::function<PluginPtr(const nlohmann::json& args, Handle& handle)>;

}  // namespace berth::framework

#endif  // BERTH_PKG_FRAMEWORK_INTERFACE_H_
