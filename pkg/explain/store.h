#ifndef BERTH_PKG_EXPLAIN_STORE_H_
#define BERTH_PKG_EXPLAIN_STORE_H_

// The last attempt of every pending pod, and a short ring of recent binding decisions, within a
// memory cap.
//
// A pending pod's record is replaced by each new attempt, dropped when the pod is deleted or
// bound (a bound pod's decision moves to the ring of the last `recent_bound` ones). When the
// records' bytes (Attempt::ApproxBytes plus the indexes' share) pass `max_bytes`, the records
// least recently written go first, so what is evicted is what the scheduler has not looked at
// for longest.
//
// Thread-safe: the scheduling thread writes failed attempts, binding threads bound ones, event
// handlers forget deleted pods, and the serving threads read; one mutex guards everything and no
// call holds it for more than a map operation.

#include <cstddef>
#include <deque>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkg/explain/record.h"

namespace berth::explain {

struct StoreOptions {
  size_t max_bytes = 64ull << 20;
  size_t recent_bound = 256;
};

class Store {
 public:
  explicit Store(StoreOptions options = {}) : options_(options) {}

  // Records a pending pod's attempt, replacing its previous one.
  void Record(const AttemptPtr& attempt);
  // The pod was bound: its pending record goes, and this decision joins the ring.
  void Bound(AttemptPtr attempt);
  // The pod was deleted, or bound by something else.
  void Forget(const std::string& uid);

  // The pod's pending record; else its latest bound decision still in the ring; else null.
  AttemptPtr Find(const std::string& pod_key) const;
  // Every pending pod's record, newest first.
  std::vector<AttemptPtr> Pending() const;
  // The ring, newest first.
  std::vector<AttemptPtr> Recent() const;

  size_t bytes() const;
  size_t pending_count() const;
  const StoreOptions& options() const { return options_; }

 private:
  struct Entry {
    AttemptPtr attempt;
    size_t bytes = 0;
    std::list<std::string>::iterator order;
  };
  // Charged per entry beyond the attempt: the uid and key strings in both maps and the list,
  // and their nodes.
  static size_t IndexBytes(const Attempt& attempt);
  void EraseLocked(std::unordered_map<std::string, Entry>::iterator it);
  void EvictLocked();

  const StoreOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> by_uid_;
  std::unordered_map<std::string, std::string> uid_by_key_;
  // Uids, least recently written first.
  std::list<std::string> order_;
  std::deque<AttemptPtr> recent_;
  size_t bytes_ = 0;
  size_t recent_bytes_ = 0;
};

}  // namespace berth::explain

#endif  // BERTH_PKG_EXPLAIN_STORE_H_
