#ifndef BERTH_PKG_INFORMER_STORE_H_
#define BERTH_PKG_INFORMER_STORE_H_

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace berth::informer {

// A thread-safe map from "namespace/name" to immutable objects. Readers take a shared lock and
// get shared_ptrs, so an object stays alive while a reader holds it even if the store replaces it.
template <typename T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;

  struct Replaced {
    Ptr old;  // Null when the key was new.
    bool stored = false;
  };

  // Inserts or replaces; returns the previous object (null when new).
  Ptr Upsert(const std::string& key, Ptr object) {
    return Put(key, std::move(object), /*skip_same_version=*/false).old;
  }

  // As Upsert, except that an object whose resourceVersion equals the stored one's is not stored
  // (a relist returns objects unchanged since the last watch event).
  Replaced UpsertIfChanged(const std::string& key, Ptr object) {
    return Put(key, std::move(object), /*skip_same_version=*/true);
  }

  // Removes; returns the removed object (null when absent).
  Ptr Remove(const std::string& key) {
    std::unique_lock lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    Ptr old = std::move(it->second);
    items_.erase(it);
    return old;
  }

  Ptr Get(const std::string& key) const {
    std::shared_lock lock(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }

  std::vector<Ptr> List() const {
    std::shared_lock lock(mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [key, object] : items_) out.push_back(object);
    return out;
  }

  std::vector<std::string> Keys() const {
    std::shared_lock lock(mu_);
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const auto& [key, object] : items_) out.push_back(key);
    return out;
  }

  size_t Size() const {
    std::shared_lock lock(mu_);
    return items_.size();
  }

 private:
  Replaced Put(const std::string& key, Ptr object, bool skip_same_version) {
    std::unique_lock lock(mu_);
    auto [it, inserted] = items_.try_emplace(key, object);
    if (inserted) return {nullptr, true};
    if (skip_same_version && it->second->meta.resource_version == object->meta.resource_version) {
      return {it->second, false};
    }
    Replaced result{std::move(it->second), true};
    it->second = std::move(object);
    return result;
  }

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Ptr> items_;
};

}  // namespace berth::informer

#endif  // BERTH_PKG_INFORMER_STORE_H_
