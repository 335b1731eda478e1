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
