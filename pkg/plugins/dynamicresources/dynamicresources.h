#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DYNAMICRESOURCES_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DYNAMICRESOURCES_H_

// DynamicResources: a pod that asks for devices through ResourceClaims goes only where its claims
// can be allocated, and its claims get allocated and reserved for it, as kube-scheduler v1.37
// does with its default feature gates.
//
// PreEnqueue holds a pod back until every claim it names exists (a claim made from a template
// appears in the pod's status once the resourceclaim controller made it). PreFilter gathers the
// claims, refuses claims that name a missing DeviceClass and claims another pod's allocation is
// still in flight for, and prepares the allocator over every published device not yet allocated.
// Filter checks that an allocated claim's node selector admits the node and, for the claims to
// allocate, searches the devices the node reaches. Score prefers nodes where firstAvailable
// requests got an earlier choice. Reserve marks the chosen allocations in flight, so the next
// pods' cycles see those devices as taken. PreBind writes the allocation (with the
// delete-protection finalizer) and adds the pod to status.reservedFor, then waits for devices with
// binding conditions. PostFilter deallocates one allocated claim that kept the pod from every
// node and nobody else uses, so the next attempt can choose other devices. Unreserve undoes
// Reserve and PreBind's reservation.
//
// Args (DynamicResourcesArgs):
//   filterTimeout: "10s"    (>= 0; 0: no limit) the most one node's device search may take
//   bindingTimeout: "600s"  (>= 1s) the longest PreBind waits for binding conditions
//
// Extended resources a DeviceClass serves (its extendedResourceName, or the implicit
// deviceclass.resource.kubernetes.io/<class>): on a node that does not offer one as allocatable
// (where NodeResourcesFit leaves it to this plugin), Filter allocates devices for an in-memory
// claim built from the containers' requests as upstream builds it; PreBind creates that claim,
// writes its allocation and names it in the pod's status.extendedResourceClaimStatus; Unreserve and
// PostFilter delete it again.
//
// Not supported (the pod stays Pending and says so): claims or classes with fields of features
// that are alpha in v1.37 (recorded by the decoders in unsupported_fields); slices with them are
// left out.
//
// A claim, class or slice the informer could not decode is named on the pod with the decoder's
// error (see MalformedObjects): PreFilter rejects a pod whose claim or class cannot be read, and
// where the claims do not fit, Filter adds the slices that cannot be read for that node.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"
#include "pkg/informer/lister.h"
#include "pkg/plugins/dynamicresources/cel_selector_evaluator.h"
#include "pkg/plugins/dynamicresources/claim_tracker.h"
#include "pkg/plugins/dynamicresources/malformed_objects.h"
#include "pkg/plugins/helper/node_list_tracker.h"

namespace berth::plugins::dynamicresources {

class InventoryCache;
class Inventory;
class Allocator;
class State;

inline constexpr std::string_view kName = "DynamicResources";

struct Args {
  std::chrono::milliseconds filter_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds binding_timeout{std::chrono::seconds(600)};
};

// Parses DynamicResourcesArgs (null for the defaults). Throws framework::InvalidArgs naming the
// field.
Args ParseArgs(const nlohmann::json& args);

// The name of the claim a pod's spec.resourceClaims entry refers to. An error (upstream's words)
// when the entry names a template whose claim the controller has not made yet, or names nothing.
struct PodClaimName {
  // Unset: the entry needs no claim (the controller decided so).
  std::optional<std::string> name;
  // The claim came from a template: it must be owned by the pod.
  bool must_check_owner = false;
};
std::optional<std::string> ResolvePodClaimName(const api::Pod& pod,
                                               const api::PodResourceClaim& entry,
                                               PodClaimName* out);

// PreEnqueue, PreFilter, Reserve, Unreserve and PostFilter run on the scheduling thread; Filter
// and Score on many threads at once (the cycle state guards what Filter writes); PreBind on the
// binding threads. The claim tracker is thread-safe.
class DynamicResources final : public framework::PreEnqueuePlugin,
                               public framework::PreFilterPlugin,
                               public framework::PreFilterExtensions,
                               public framework::FilterPlugin,
                               public framework::PostFilterPlugin,
                               public framework::PreScorePlugin,
                               public framework::ScorePlugin,
                               public framework::ScoreExtensions,
                               public framework::ReservePlugin,
                               public framework::PreBindPlugin,
                               public framework::EnqueueExtensions,
                               public framework::HintPlugin {
 public:
  DynamicResources(Args args, framework::Handle& handle);

  std::string_view Name() const override { return kName; }

  framework::Status PreEnqueue(const api::Pod& pod) override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::PreFilterExtensions* Extensions() override { return this; }
  // Preemption's dry run: a removed pod's allocated claims that no pod left on the node (nor
  // anyone else) is reserved for count as free for the next Filter calls on this state, as the
  // resourceclaim controller deallocates them once the pod is gone; adding the pod back counts
  // them again. Upstream v1.37 has no such extension (its Filter leaves DRA nodes out of
  // preemption); Berth's Filter rejects a node resolvably only where lower-priority pods on it
  // hold claims, so preemption looks at those nodes alone.
  framework::Status AddPod(framework::CycleState& state, const api::Pod& pod_to_schedule,
                           const framework::PodInfo& pod_to_add,
                           const framework::NodeInfo& node) override;
  framework::Status RemovePod(framework::CycleState& state, const api::Pod& pod_to_schedule,
                              const framework::PodInfo& pod_to_remove,
                              const framework::NodeInfo& node) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  framework::Status PostFilter(framework::CycleState& state, const api::Pod& pod,
                               const framework::NodeToStatus& filtered_node_status,
                               framework::PostFilterResult* result) override;
  // Skips Score unless a claim has firstAvailable requests: every node would score 0.
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             std::span<const framework::NodeInfo* const> nodes) override;
  framework::Status Score(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node, int64_t* score) override;
  framework::ScoreExtensions* GetScoreExtensions() override { return this; }
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   framework::NodeScoreList& scores) override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const std::string& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod,
                 const std::string& node) override;
  framework::Status PreBindPreFlight(framework::CycleState& state, const api::Pod& pod,
                                     const std::string& node) override;
  framework::Status PreBind(framework::CycleState& state, const api::Pod& pod,
                            const std::string& node) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  // For explain: per claim to allocate, which of the rejected nodes could give its devices alone,
  // where the devices that match are taken, and where none match (or too few); per allocated
  // claim, that the pod can go only where its allocation is (notes). Where a request asks for more
  // devices than any of those nodes can give, the most one of them can: a change to the claim,
  // which explain checks with the claim so changed (ChangedClaims).
  std::vector<framework::PodChange> SuggestChanges(
      const framework::CycleState& state, const api::Pod& pod,
      std::span<const framework::NodeInfo* const> rejected,
      std::span<const framework::Status* const> statuses,
      const framework::Status* pre_filter) const override;

  // Calls `fn` (when set) for each claim of the pod, in spec order; upstream's error for the first
  // entry that cannot be used yet (its claim not made, missing, being deleted, or not the pod's).
  // `malformed` (when given) is set when the error is a claim the apiserver serves but Berth
  // cannot decode.
  std::optional<std::string> ClaimsOf(
      const api::Pod& pod, const std::function<void(const api::ResourceClaimPtr& claim)>& fn,
      bool* malformed = nullptr) const;

  ClaimTracker& tracker() { return *tracker_; }
  MalformedObjects& malformed() { return *malformed_; }
  // The inventory the next cycle allocates over; for tests.
  std::shared_ptr<const Inventory> inventory();

 private:
  // The claim an earlier attempt made for the pod's extended resources, if any.
  api::ResourceClaimPtr ExistingExtendedClaim(const api::Pod& pod) const;
  // Filter's rejection of a node the claims do not fit: upstream's shared reasons, followed by
  // the malformed slices whose devices the node might have had, when there are any.
  framework::Status CannotAllocate(const api::Node& node) const;
  // The allocator Filter searches with: the cycle's, or in a preemption dry run that removed pods
  // holding claims, one that sees their devices free (null, with `error` set, when the state
  // cannot be gathered).
  const Allocator* FilterAllocator(const State& state, framework::Status* error) const;
  // The claims of `pod` that are allocated (its own and the one made for its extended resources),
  // as the tracker sees them now.
  std::vector<api::ResourceClaimPtr> AllocatedClaimsOf(const api::Pod& pod) const;
  const Args args_;
  framework::Handle& handle_;
  std::shared_ptr<ClaimTracker> tracker_;
  std::shared_ptr<MalformedObjects> malformed_;
  informer::Lister<api::DeviceClass> classes_;
  CelSelectorEvaluator evaluator_;
  // Slices (with DeviceTaintRules, where the apiserver serves them), classes, and what the
  // allocator derives from them alone. Declared after evaluator_, which it uses.
  std::shared_ptr<InventoryCache> inventory_;

  // Each node's slot in the inventory's decisions, by its position in the snapshot's node list,
  // so that Filter finds a node's decision without looking its name up. Written by PreFilter
  // (the scheduling thread, or a dry run between cycles) for the inventory `slots_of_`; read by
  // that cycle's Filter calls, on any thread, for NodeInfos node_list_ lists.
  helper::NodeListTracker node_list_;
  std::vector<uint32_t> slot_at_;
  // By the same positions: the lowest priority of a pod on the node that names claims (INT32_MAX
  // when none does), so that Filter tells nodes where preemption could free devices without
  // walking the node's pods.
  std::vector<int32_t> claims_floor_at_;
  std::weak_ptr<const Inventory> slots_of_;
};

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DYNAMICRESOURCES_H_
