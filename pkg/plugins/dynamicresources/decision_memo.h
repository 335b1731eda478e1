#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DECISION_MEMO_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DECISION_MEMO_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pkg/api/dra_types.h"

namespace berth::plugins::dynamicresources {

// Filter's decide-only outcomes (do the pod's claims fit on a node), remembered per node across
// scheduling cycles by the inventory they were decided over. The search is deterministic: with
// the same inventory, the same claims to allocate and the same allocated devices on the node
// (Allocator::NodeAllocationState), it reaches the same outcome. Pods made from one template ask
// the same, and most nodes a cycle looks at did not change since a cycle last looked, so most of
// them are decided by comparing a few bytes instead of searching again.
//
// Thread-safety: every method may be called concurrently (Filter runs on many nodes at once).
class DecisionMemo {
 public:
  // Per claim to allocate, in order: its namespace and spec (all a search reads of it).
  using Claims = std::vector<std::pair<std::string, api::ResourceClaimSpec>>;

  struct Decision {
    bool fits = false;
    // Why not, when it does not fit (upstream's words); empty for the usual "cannot allocate all
    // claims", so that finding the decision of a node that does not fit allocates nothing.
    std::string message;
  };

  // Room for one decision per node slot (Inventory::SlotOf).
  explicit DecisionMemo(size_t slots);
  DecisionMemo(const DecisionMemo&) = delete;
  DecisionMemo& operator=(const DecisionMemo&) = delete;

  // The claims equal to `claims` that the memo remembers decisions for, else `claims`, which it
  // then keeps for its lifetime; null when it keeps too many already (then nothing is remembered
  // for them). Called once per cycle, so that each node compares a pointer, not the claims.
  std::shared_ptr<const Claims> Intern(std::shared_ptr<const Claims> claims);

  // The decision remembered for the slot and claims (as Intern returned them), when the node's
  // devices are allocated as they were then (`state`, Allocator::SlotAllocationState).
  std::optional<Decision> Find(size_t slot, const std::shared_ptr<const Claims>& claims,
                               const std::string& state) const;
  // Remembers the decision beside the slot's others for the same state; a new state drops them.
  void Remember(size_t slot, const std::shared_ptr<const Claims>& claims, std::string state,
                Decision decision);

  // Decisions found; for tests (walks every slot).
  uint64_t hits() const;

 private:
  // The most claims kept (and decisions per slot): pods of a few dozen templates or classes.
  static constexpr size_t kMaxClaims = 64;

  // A slot is read by the one Filter call of its node in a cycle, so its lock is practically
  // never contended: a flag costs one atomic exchange, where a mutex also costs a call and
  // widens every slot of thousands (which the cycle reads in turn) by a cache line.
  class SlotLock {
   public:
    void lock() {
      while (locked_.exchange(true, std::memory_order_acquire)) {
        while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
      }
    }
    void unlock() { locked_.store(false, std::memory_order_release); }

   private:
    std::atomic<bool> locked_{false};
  };
  struct Entry {
    // One of interned_, alive as long as the memo.
    const Claims* claims = nullptr;
    Decision decision;
  };
  // A cache line each: neighbouring nodes are often filtered on different cores, and the lock
  // and the hit count are written on every lookup.
  struct alignas(64) Slot {
    mutable SlotLock lock;
    // Guarded by lock.
    mutable uint32_t hits = 0;
    // The node's state the entries were decided in.
    std::string state;
    std::vector<Entry> entries;
  };

  const size_t size_;
  std::unique_ptr<Slot[]> slots_;
  std::mutex mu_;
  // Guarded by mu_; only ever appended to, at most kMaxClaims.
  std::vector<std::shared_ptr<const Claims>> interned_;
};

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DECISION_MEMO_H_
