#ifndef BERTH_PKG_PLUGINS_COSCHEDULING_COSCHEDULING_H_
#define BERTH_PKG_PLUGINS_COSCHEDULING_COSCHEDULING_H_

// Coscheduling: gang scheduling. The pods of a gang (a PodGroup's pods) bind together or not at
// all. A pod of a gang is not attempted while its gang is missing, invalid, short of pods or
// backing off (PreFilter); once placed it waits at Permit until minMember of the gang are placed
// or bound, and then every waiting pod of the gang is allowed at once. When a pod of the gang fits
// no node (PostFilter), or a waiting one times out, is deleted or is rejected, every waiting pod
// of the gang is rejected at once and the gang backs off. A gang therefore never holds room past a
// failure, so two gangs that do not fit together cannot hold each other's room forever.
//
// It is also the queue order (QueueSort): priority, then the gang's creation or last failure,
// then names, so a gang's pods are tried one after the other rather than interleaved with another
// gang's. For pods outside any gang that is PrioritySort's order (priority, then time queued).
//
// Pods that join no gang pass every extension point untouched.

#include <array>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"
#include "pkg/plugins/coscheduling/gang_source.h"
#include "pkg/plugins/coscheduling/gang_state.h"
#include "pkg/plugins/coscheduling/topology_placement.h"
#include "pkg/plugins/coscheduling/worker.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace berth::plugins::coscheduling {

inline constexpr std::string_view kName = "Coscheduling";

struct Args {
  // How long a gang's placed pods wait at Permit for the rest, unless its PodGroup says
  // (scheduleTimeoutSeconds).
  std::chrono::seconds permit_waiting_time{60};
  // After a failed attempt none of the gang's pods is tried for this long.
  std::chrono::seconds pod_group_backoff{1};
  // Gangs with a topology constraint are placed in one domain (upstream's
  // TopologyPlacementGenerator). When false, such a gang's pods wait, saying so: they are never
  // placed as if the constraint were absent.
  bool topology_placement = true;
  // The weights of a candidate domain's two scores: how many of the gang's pods it takes
  // (upstream's PodGroupPodsCount) and how full its nodes would be (NodeResourcesFit's
  // MostAllocated over the domain); 0 leaves a score out.
  int64_t pods_count_weight = 1;
  int64_t resources_weight = 1;
  // The share of a gang's candidate domains simulated, tightest first, before the best is taken;
  // 0: kDefaultPercentageOfPlacements. At least one feasible domain is always found when any is.
  int32_t percentage_of_placements_to_score = 0;
};
inline constexpr int32_t kDefaultPercentageOfPlacements = 10;

// Throws std::invalid_argument naming the field.
Args ParseArgs(const nlohmann::json& args);

// Why a gang's attempt ended without binding (the berth_gang_rejections_total reason).
enum class Rejection { kUnschedulable, kTimeout, kMemberDeleted, kMemberRejected, kMinResources };
inline constexpr size_t kRejections = 5;
const char* RejectionName(Rejection reason);

// Thread-safety: Less runs under the scheduling queue's lock, PreFilter, PostFilter, Reserve and
// Permit on the scheduling thread, Unreserve there or on binding threads; all share GangState's
// lock and never call the Handle while holding it.
class Coscheduling final : public framework::QueueSortPlugin,
                           public framework::PreFilterPlugin,
                           public framework::PostFilterPlugin,
                           public framework::ReservePlugin,
                           public framework::PermitPlugin,
                           public framework::EnqueueExtensions,
                           public framework::HintPlugin {
 public:
  // `sources` are asked in order which gang a pod joins. Registers handlers on the pod informer
  // and the sources' informers, and starts the background worker.
  Coscheduling(Args args, framework::Handle& handle,
               std::vector<std::unique_ptr<GangSource>> sources);
  ~Coscheduling() override;

  std::string_view Name() const override { return kName; }

  bool Less(const framework::QueuedPodInfo& a, const framework::QueuedPodInfo& b) const override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::Status PostFilter(framework::CycleState& state, const api::Pod& pod,
                               const framework::NodeToStatus& statuses,
                               framework::PostFilterResult* result) override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const std::string& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod,
                 const std::string& node) override;
  framework::Status Permit(framework::CycleState& state, const api::Pod& pod,
                           const std::string& node, std::chrono::milliseconds* timeout) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  // After a PreFilter refusal: how many pods the gang still lacks, or that its group does not
  // exist. Not changes to the pod: the scheduler counts the nodes it would fit without the gate.
  std::vector<framework::PodChange> SuggestChanges(
      const framework::CycleState& state, const api::Pod& pod,
      std::span<const framework::NodeInfo* const> rejected,
      std::span<const framework::Status* const> statuses,
      const framework::Status* pre_filter) const override;
  // A gang whose pods bind together (not upstream's basic policy), with its pods that are neither
  // assumed nor bound.
  std::optional<framework::PodGroupHint> GroupOf(const api::Pod& pod) const override;
  // GroupOf's gang, or a group of the basic policy that may only be disrupted as a whole.
  std::optional<framework::PodGroupHint> VictimGroupOf(const api::Pod& pod) const override;

  const Args& args() const { return args_; }
  // For tests.
  GangState& state() { return *state_; }

 private:
  struct Metrics {
    prometheus::Gauge* waiting = nullptr;
    prometheus::Histogram* wait_allowed = nullptr;
    prometheus::Histogram* wait_rejected = nullptr;
    std::array<prometheus::Counter*, kRejections> rejections{};
  };

  // A PreFilter refusal: Unresolvable (no eviction can help), and noted on the gang's object once
  // per distinct message when `on_object`.
  framework::Status Refuse(framework::CycleState& state, const GangKey& key,
                           const std::string& message, bool on_object);
  // Ends the gang's attempt: takes back every waiting pod (returned, to reject), records the
  // failure and its metrics. Requires the state's lock.
  std::vector<std::string> RejectLocked(const GangKey& key, Gang& gang, const std::string& message,
                                        Rejection reason, SteadyClock::time_point now);
  // Rejects the waiting pods RejectLocked returned and notes the failure on the gang's object.
  // Without the lock.
  void Release(const GangKey& key, const std::vector<std::string>& uids,
               const std::string& message);
  // Ends the wait metric of an attempt whose first pod began waiting at `started`. Requires the
  // lock.
  void EndWaitLocked(Gang& gang, bool allowed, SteadyClock::time_point now);
  // Under a topology constraint, narrows `result` to the gang's domain (to the node planned for
  // `pod` while the attempt lacks its quorum), planning the attempt first when it has no plan. A
  // gang that no domain can take fails its attempt here. Without a constraint, success.
  framework::Status InDomain(framework::CycleState& state, const GangKey& key, const GangSpec& spec,
                             const api::Pod& pod, const std::vector<framework::NodeInfoPtr>& nodes,
                             framework::PreFilterResult* result);
  // The group of `pod` when it is usable and a gang, or (with `as_victim`) disrupted only as a
  // whole; nullopt otherwise.
  std::optional<framework::PodGroupHint> Group(const api::Pod& pod, bool as_victim) const;
  // The gang's members placed or bound (uids) and the rest (`pod` first, when it is not placed),
  // whatever its policy; with `placed_nodes`, also the nodes the placed ones are on.
  framework::PodGroupHint Members(const GangKey& key, const GangSpec& spec, const api::Pod& pod,
                                  std::vector<std::string>* placed_nodes) const;
  // When the gang's minResources exceed the cluster's free capacity, what is short.
  std::string MissingResources(const GangKey& key, const GangSpec& spec,
                               const std::vector<framework::NodeInfoPtr>& nodes) const;
  void RecordEvent(const GangKey& key, const std::string& type, const std::string& reason,
                   const std::string& note);

  const Args args_;
  framework::Handle& handle_;
  const std::shared_ptr<GangState> state_;
  Metrics metrics_;
  const TopologyPlacer placer_;
  // Last: stopped first, while everything it uses is still there.
  std::unique_ptr<GangWorker> worker_;
};

// The sources of gangs Berth knows, in the order a pod's gang is looked up.
std::vector<std::unique_ptr<GangSource>> DefaultSources(framework::Handle& handle);

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::coscheduling

#endif  // BERTH_PKG_PLUGINS_COSCHEDULING_COSCHEDULING_H_
