#ifndef BERTH_PKG_INFORMER_LISTER_H_
#define BERTH_PKG_INFORMER_LISTER_H_

#include <memory>
#include <string>
#include <vector>

#include "pkg/informer/store.h"

namespace berth::informer {

// Read-only access to one resource's informer store, as upstream's listers give: by key, all, or
// one namespace's. Cheap to copy; valid while the factory that made it lives. Thread-safe (the
// store is); objects are immutable and shared, so a caller may keep them.
template <typename T>
class Lister {
 public:
  using Ptr = std::shared_ptr<const T>;

  explicit Lister(const Store<T>* store) : store_(store) {}

  // Null when absent. For cluster-scoped resources `namespace_` is empty.
  Ptr Get(const std::string& namespace_, const std::string& name) const {
    return store_->Get(namespace_.empty() ? name : namespace_ + "/" + name);
  }
  Ptr Get(const std::string& name) const { return store_->Get(name); }

  std::vector<Ptr> List() const { return store_->List(); }

  // Every object whose namespace is `namespace_`.
  std::vector<Ptr> List(const std::string& namespace_) const {
    std::vector<Ptr> out;
    for (auto& object : store_->List()) {
      if (object->meta.namespace_ == namespace_) out.push_back(std::move(object));
    }
    return out;
  }

  // Every object the predicate keeps (a label selector, a field).
  template <typename Predicate>
  std::vector<Ptr> ListIf(Predicate&& keep) const {
    std::vector<Ptr> out;
    for (auto& object : store_->List()) {
      if (keep(*object)) out.push_back(std::move(object));
    }
    return out;
  }

 private:
  const Store<T>* store_;
};

}  // namespace berth::informer

#endif  // BERTH_PKG_INFORMER_LISTER_H_
