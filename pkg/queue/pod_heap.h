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

// Invariants: for every i, items_[i].position points at index_[uid of items_[i]] and that value
// is i; the heap property holds under `less_`; a uid appears at most once. The sort key of an
// element (whatever `less_` reads) must not change while the element is in the heap: callers
// Delete, change, then AddOrUpdate — or change and call AddOrUpdate with the same pointer, which
// re-sifts. Not thread-safe: the scheduling queue guards it with its mutex.
class PodHeap {
 public:
  using Less =
      std::function<bool(const framework::QueuedPodInfo&, const framework::QueuedPodInfo&)>;

  explicit PodHeap(Less less) : less_(std::move(less)) {}

  // Inserts, or replaces the entry with the same uid and restores the order.
  void AddOrUpdate(framework::QueuedPodInfoPtr pinfo) {
    auto [it, inserted] = index_.try_emplace(pinfo->pod().meta.uid, items_.size());
    if (!inserted) {
      size_t i = it->second;
      items_[i].pinfo = std::move(pinfo);
      Fix(i);
      return;
    }
    items_.push_back({std::move(pinfo), &it->second});
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
    return it == index_.end() ? nullptr : items_[it->second].pinfo;
  }
  bool Has(const std::string& uid) const { return index_.count(uid) != 0; }

  // Requires !empty().
  const framework::QueuedPodInfoPtr& Peek() const { return items_.front().pinfo; }
  // Requires !empty().
  framework::QueuedPodInfoPtr Pop() { return RemoveAt(0); }

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  // In heap order, not sorted.
  std::vector<framework::QueuedPodInfoPtr> items() const {
    std::vector<framework::QueuedPodInfoPtr> out;
    out.reserve(items_.size());
    for (const auto& item : items_) out.push_back(item.pinfo);
    return out;
  }

 private:
  struct Item {
    framework::QueuedPodInfoPtr pinfo;
    // This item's value in index_: unordered_map never moves its elements, so a sift updates
    // positions without hashing a uid per swap.
    size_t* position;
  };

  bool LessAt(size_t a, size_t b) const { return less_(*items_[a].pinfo, *items_[b].pinfo); }

  void Swap(size_t a, size_t b) {
    std::swap(items_[a], items_[b]);
    *items_[a].position = a;
    *items_[b].position = b;
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
    framework::QueuedPodInfoPtr removed = std::move(items_.back().pinfo);
    items_.pop_back();
    index_.erase(removed->pod().meta.uid);
    if (i < items_.size()) Fix(i);
    return removed;
  }

  Less less_;
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace berth::queue

#endif  // BERTH_PKG_QUEUE_POD_HEAP_H_
