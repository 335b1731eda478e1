#ifndef BERTH_PKG_QUEUE_POD_HEAP_H_
#define BERTH_PKG_QUEUE_POD_HEAP_H_

// A binary heap of queued pods that can also find, replace and remove a pod by uid in
// O(log n). activeQ (ordered by the QueueSort plugin) and backoffQ (ordered by backoff expiry)
// are both PodHeaps. A heap, not an ordered set, because QueueSort plugins are user code: a heap
// only needs `less` to be consistent while an element sits in it, never a total order.

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pkg/framework/types.h"

namespace berth::queue {

// Invariants: index_[items_[i]->pod().meta.uid] == i for every i; the heap property holds under
// `less_`; a uid appears at most once. The sort key of an element (whatever `less_` reads) must
// not change while the element is in the heap: callers Delete, change, then AddOrUpdate — or
// change and call AddOrUpdate with the same pointer, which re-sifts. Not thread-safe: the
// scheduling queue guards it with its mutex.
class PodHeap {
 public:
  using Less =
      std::function<bool(const framework::QueuedPodInfo&, const framework::QueuedPodInfo&)>;

  explicit PodHeap(Less less) : less_(std::move(less)) {}

  // Inserts, or replaces the entry with the same uid and restores the order.
  void AddOrUpdate(framework::QueuedPodInfoPtr pinfo) {
    const std::string& uid = pinfo->pod().meta.uid;
    auto it = index_.find(uid);
    if (it != index_.end()) {
      size_t i = it->second;
      items_[i] = std::move(pinfo);
      Fix(i);
      return;
    }
    items_.push_back(std::move(pinfo));
    index_.emplace(items_.back()->pod().meta.uid, items_.size() - 1);
    Up(items_.size() - 1);
  }

  // The removed entry, or null when the uid is not in the heap.
  framework::QueuedPodInfoPtr Delete(const std::string& uid) {
    auto it = index_.find(uid);
    if (it == index_.end()) return nullptr;
    return RemoveAt(it->second);
  }

  framework::QueuedPodInfoPtr Get(const std::string& uid) const {
    auto it = index_.find(uid);
    return it == index_.end() ? nullptr : items_[it->second];
  }
  bool Has(const std::string& uid) const { return index_.count(uid) != 0; }

  // Requires !empty().
  const framework::QueuedPodInfoPtr& Peek() const { return items_.front(); }
  // Requires !empty().
  framework::QueuedPodInfoPtr Pop() { return RemoveAt(0); }

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  // In heap order, not sorted.
  const std::vector<framework::QueuedPodInfoPtr>& items() const { return items_; }

 private:
  bool LessAt(size_t a, size_t b) const { return less_(*items_[a], *items_[b]); }

  void Swap(size_t a, size_t b) {
    std::swap(items_[a], items_[b]);
    index_[items_[a]->pod().meta.uid] = a;
    index_[items_[b]->pod().meta.uid] = b;
  }

  void Up(size_t i) {
    while (i > 0) {
      size_t parent = (i - 1) / 2;
      if (!LessAt(i, parent)) break;
      Swap(i, parent);
      i = parent;
    }
  }

  void Down(size_t i) {
    for (;;) {
      size_t smallest = i;
      size_t left = 2 * i + 1;
      size_t right = left + 1;
      if (left < items_.size() && LessAt(left, smallest)) smallest = left;
      if (right < items_.size() && LessAt(right, smallest)) smallest = right;
      if (smallest == i) return;
      Swap(i, smallest);
      i = smallest;
    }
  }

  void Fix(size_t i) {
    Up(i);
    Down(i);
  }

  framework::QueuedPodInfoPtr RemoveAt(size_t i) {
    size_t last = items_.size() - 1;
    if (i != last) Swap(i, last);
    framework::QueuedPodInfoPtr removed = std::move(items_.back());
    items_.pop_back();
    index_.erase(removed->pod().meta.uid);
    if (i < items_.size()) Fix(i);
    return removed;
  }

  Less less_;
  std::vector<framework::QueuedPodInfoPtr> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace berth::queue

#endif  // BERTH_PKG_QUEUE_POD_HEAP_H_
