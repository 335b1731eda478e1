#ifndef BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DECISION_MEMO_H_
#define BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DECISION_MEMO_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
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
// Thread-safety: Intern, Find, Remember and hits may be called concurrently (Filter runs on many
// nodes at once). Find writes nothing shared: a slot's decisions are published as an immutable
// copy that Remember replaces, so that the cores filtering neighbouring nodes do not take the
// slots' cache lines from each other on every lookup (with two cores on different physical
// cores, that traffic had made a cycle over 5,000 nodes slower on two threads than on one).
// Reclaim frees the replaced copies; it must not run while a Find or Remember does.
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
                               const std::string& state) const {
    return FindIf(slot, claims, [&](std::string_view kept) { return kept == state; });
  }
  // The same, where `same_state(kept)` tells whether the node's devices are allocated as the
  // state kept with the decisions says (so that the caller need not build its state to compare).
  template <typename SameState>
  std::optional<Decision> FindIf(size_t slot, const std::shared_ptr<const Claims>& claims,
                                 const SameState& same_state) const {
    if (slot >= size_ || claims == nullptr) return std::nullopt;
    const SlotData* data = slots_[slot].data.load(std::memory_order_acquire);
    if (data == nullptr) return std::nullopt;
    const Entry* found = nullptr;
    for (const Entry& decided : data->entries) {
      if (decided.claims == claims.get()) found = &decided;
    }
    if (found == nullptr || !same_state(std::string_view(data->state))) return std::nullopt;
    CountHit();
    return found->decision;
  }
  // Remembers the decision beside the slot's others for the same state; a new state drops them.
  void Remember(size_t slot, const std::shared_ptr<const Claims>& claims, std::string state,
                Decision decision);

  // Frees the copies Remember replaced. Call it where no Find or Remember runs: the plugin does in
  // PreFilter, as every Filter of a memo's nodes runs between one PreFilter and the next, on the
  // scheduling thread's turn (a dry run takes that turn too).
  void Reclaim();

  // Decisions found; for tests.
  uint64_t hits() const;

 private:
  void CountHit() const;

  // The most claims kept (and decisions per slot): pods of a few dozen templates or classes.
  static constexpr size_t kMaxClaims = 64;

  // Remember on one slot from two threads at once is rare (a node is filtered once per cycle):
  // a flag costs one atomic exchange.
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
  // A slot's decisions: immutable once published.
  struct SlotData {
    // The node's state the entries were decided in.
    std::string state;
    std::vector<Entry> entries;
  };
  struct alignas(64) Slot {
    // What Find reads: owned's object, published with release order.
    std::atomic<const SlotData*> data{nullptr};
    // Guards owned and the replacing of data.
    SlotLock lock;
    std::unique_ptr<const SlotData> owned;
  };
  // Hits counted per thread, a cache line each, so that counting writes nothing another core
  // reads.
  struct alignas(64) HitCount {
    std::atomic<uint64_t> hits{0};
  };
  static constexpr size_t kHitCounts = 16;

  const size_t size_;
  std::unique_ptr<Slot[]> slots_;
  mutable std::array<HitCount, kHitCounts> hit_counts_;
  std::mutex mu_;
  // Guarded by mu_; only ever appended to, at most kMaxClaims.
  std::vector<std::shared_ptr<const Claims>> interned_;
  // Guarded by mu_: the slot data Remember replaced, until Reclaim.
  std::vector<std::unique_ptr<const SlotData>> retired_;
};

}  // namespace berth::plugins::dynamicresources

#endif  // BERTH_PKG_PLUGINS_DYNAMICRESOURCES_DECISION_MEMO_H_
