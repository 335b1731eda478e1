#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_ALLOCATOR_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_ALLOCATOR_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/dra_types.h"
#include "pkg/api/types.h"
#include "pkg/plugins/dynamicresources/allocated_state.h"
#include "pkg/plugins/dynamicresources/device_selector.h"

namespace berth::plugins::dynamicresources {

class Inventory;

// Bounds one Allocate call. The search is exhaustive backtracking, so a pathological set of
// claims and devices can take very long; kube-scheduler bounds it with the Filter context.
struct AllocateOptions {
  // The most search steps (one step tries to place one device) before giving up; 0: no limit.
  int64_t max_steps = 0;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Set by another thread to stop the search (e.g. the scheduling cycle was abandoned).
  const std::atomic<bool>* cancelled = nullptr;
  // Only decide whether the claims fit: a kAllocated outcome then has no `results` (and no share
  // IDs were made). The search is the same, so a later call without it on the same node finds
  // the allocation this one found; Filter decides per node, Reserve builds the one it keeps.
  bool decide_only = false;
};

struct AllocateOutcome {
  enum class Kind {
    // `results` holds one allocation per claim, in the order of the claims (none with
    // AllocateOptions::decide_only).
    kAllocated,
    // The claims cannot be allocated on this node; `message` says why in upstream's words
    // ("cannot allocate all claims", or "invalid resource pools were encountered").
    kUnschedulable,
    // Something is wrong with a claim, a class or a selector; `message` is upstream's error.
    // kube-scheduler turns this into an error status (the pod is retried with backoff).
    kError,
    // The step budget, the deadline or the cancellation stopped the search; `message` says
    // which. kube-scheduler reports a timeout as an error status (retried with backoff).
    kAborted,
  };
  Kind kind = Kind::kUnschedulable;
  std::vector<api::AllocationResult> results;
  std::string message;
  // Search steps taken (upstream's allocateOne invocations), for tests and metrics.
  int64_t steps = 0;
};

// For explain: how the devices a node reaches narrow down to those one request (or one subrequest
// of a firstAvailable list) could be given were it its claim's only request (no constraint, no
// other request), stage by stage in the order the allocator checks them. The counts ignore which
// devices are allocated.
struct RequestDevices {
  // The request's name, or "request/subrequest".
  std::string request;
  std::string device_class;
  // The devices it needs: its count; for allocation mode All, every device that passes the
  // selectors and capacity (at least one).
  int64_t wanted = 0;
  // Devices of the class in pools that are incomplete or invalid, which give out no devices.
  int64_t of_class_unusable = 0;
  // Devices in complete, valid pools whose class selectors are true (and that reach the node, for
  // a slice that places each device).
  int64_t of_class = 0;
  // Of those, the ones whose request selectors are true.
  int64_t selected = 0;
  // Of those, the ones with room for the capacity the request asks for, none of it consumed.
  int64_t with_capacity = 0;
  // Of those, the ones without a NoSchedule or NoExecute taint the request does not tolerate.
  int64_t tolerated = 0;
  // Whether one of those draws on shared counters.
  bool draws_counters = false;
  // Whether Allocate gives the request alone its devices (the allocator's allocated devices
  // counted). Looked at only when tolerated >= wanted; unset otherwise, and when the search ran
  // out of steps or failed with an error.
  std::optional<bool> fits_alone;
};

// The structured-parameters device allocator of kube-scheduler v1.37 with its default feature
// gates (upstream's "incubating" allocator): admin access, prioritized lists (firstAvailable),
// partitionable devices (shared counters), device taints and tolerations, binding conditions,
// consumable capacity with fractional ranges, matchAttribute and distinctAttribute constraints.
//
// For one node it searches, claim by claim and request by request, the devices of the pools the
// node reaches, in pool order (driver, pool; pools with binding conditions last), slice name
// order and device order, backtracking on failure; the first complete solution wins. So the
// devices chosen are the ones upstream chooses.
//
// Not done here (the plugin's job): the admin-access namespace label, claims with fields of alpha
// features (unsupported_fields), extended-resource claims.
//
// Thread-safety: immutable after construction (but for the inventory's selector memo, which is
// thread-safe); Allocate may be called concurrently (one node per Filter worker). The evaluator
// must outlive the allocator.
class Allocator {
 public:
  using ShareIdGenerator = std::function<std::string()>;

  // `allocated`: devices allocated in the cluster, including in-flight allocations.
  // `taint_rules`: DeviceTaintRules, applied to the slices' devices here.
  // `share_ids`: makes the share ID of each allocation of a multi-allocatable device; a random
  // (version 4) UUID when empty. Called from concurrent Allocate calls, so it must be
  // thread-safe.
  Allocator(AllocatedState allocated, const std::vector<api::DeviceClassPtr>& classes,
            const std::vector<api::ResourceSlicePtr>& slices,
            const std::vector<api::DeviceTaintRule>& taint_rules,
            const DeviceSelectorEvaluator& evaluator, ShareIdGenerator share_ids = {});
  // Over an inventory shared with other allocators (the scheduler's, built once per change of
  // slices, classes or taint rules); selectors are evaluated with the inventory's evaluator.
  Allocator(std::shared_ptr<const Inventory> inventory, AllocatedState allocated,
            ShareIdGenerator share_ids = {});

  AllocateOutcome Allocate(const api::Node& node, const std::vector<api::ResourceClaimPtr>& claims,
                           const AllocateOptions& options = {}) const;

  // For explain, off the scheduling path: RequestDevices per request of `claim` on `node`, in the
  // claim's order (a request with subrequests gives one per subrequest, in its order). Unset
  // when a class is missing or a selector cannot be evaluated (Allocate would fail with an
  // error). `options` bounds the searches fits_alone makes, together; `*steps` grows by theirs.
  std::optional<std::vector<RequestDevices>> DevicesPerRequest(const api::Node& node,
                                                               const api::ResourceClaim& claim,
                                                               const AllocateOptions& options,
                                                               int64_t* steps) const;

  // For DecisionMemo: whether a search on `node` reads nothing of the allocated state but which
  // of the node's devices are allocated (Inventory::WholeDeviceRangesAt, and no device anywhere
  // is shared). Then `*state` is one byte per device of the node's pools, '1' where allocated,
  // else '0' (a string: a node's few devices fit without an allocation): with the same inventory
  // and claims, equal bytes mean the same outcome. `*slot`: the node's slot in the inventory's
  // decisions().
  bool NodeAllocationState(const api::Node& node, std::string* state, size_t* slot) const;
  // The same for the node in `slot` (Inventory::SlotOf).
  bool SlotAllocationState(size_t slot, std::string* state) const;
  // Whether the node in `slot` has such a state at all (the allocated state holds no shares and
  // its pools are the node's by name, devices whole).
  bool SlotHasAllocationState(size_t slot) const;
  // Whether SlotAllocationState would give `state`, without making it; for a slot that has one.
  bool SlotAllocationStateIs(size_t slot, std::string_view state) const;

  const std::shared_ptr<const Inventory>& inventory() const { return inventory_; }

 private:
  friend class AllocationRun;

  std::shared_ptr<const Inventory> inventory_;
  AllocatedState allocated_;
  // The devices of the inventory allocated_ holds exclusively, by index, so the search tests a
  // byte rather than hashing an ID per device it looks at.
  ExclusiveDevices exclusive_;
  // allocated_ holds no shares, so which devices are allocated is all of it.
  bool exclusive_only_ = false;
  ShareIdGenerator share_ids_;
};

// The message kube-scheduler reports when the allocator finds no solution on a node.
inline constexpr std::string_view kCannotAllocateAllClaims = "cannot allocate all claims";

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_ALLOCATOR_H_
