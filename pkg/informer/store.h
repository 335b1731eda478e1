#ifndef BERTH_PKG_INFORMER_STORE_H_
#define BERTH_PKG_INFORMER_STORE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace berth::informer {

// A thread-safe map from "namespace/name" to immutable objects, with named secondary indexes.
// Readers take a shared lock and get shared_ptrs, so an object stays alive while a reader holds
// it even if the store replaces it. Index functions must be pure functions of the object.
template <typename T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;

  // Indexers must be added before the first object.
  void AddIndexer(const std::string& name, IndexFunc func) {
    std::unique_lock lock(mu_);
    indexers_[name] = std::move(func);
    indices_[name];
  }

  // Inserts or replaces; returns the previous object (null when new).
  Ptr Upsert(const std::string& key, Ptr object) {
    std::unique_lock lock(mu_);
    auto [it, inserted] = items_.try_emplace(key, object);
    Ptr old;
    if (!inserted) {
      old = std::move(it->second);
      it->second = object;
      Unindex(key, *old);
    }
    Index(key, *object);
    return old;
  }

  // Removes; returns the removed object (null when absent).
  Ptr Remove(const std::string& key) {
    std::unique_lock lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    Ptr old = std::move(it->second);
    items_.erase(it);
    Unindex(key, *old);
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

  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
    std::shared_lock lock(mu_);
    std::vector<Ptr> out;
    auto idx = indices_.find(index);
    if (idx == indices_.end()) return out;
    auto bucket = idx->second.find(value);
    if (bucket == idx->second.end()) return out;
    out.reserve(bucket->second.size());
    for (const auto& key : bucket->second) out.push_back(items_.at(key));
    return out;
  }

  size_t Size() const {
    std::shared_lock lock(mu_);
    return items_.size();
  }

 private:
  // Caller holds mu_ exclusively.
  void Index(const std::string& key, const T& object) {
    for (const auto& [name, func] : indexers_) {
      for (auto& value : func(object)) indices_[name][value].insert(key);
    }
  }
  void Unindex(const std::string& key, const T& object) {
    for (const auto& [name, func] : indexers_) {
      auto& index = indices_[name];
      for (const auto& value : func(object)) {
        auto bucket = index.find(value);
        if (bucket == index.end()) continue;
        bucket->second.erase(key);
        if (bucket->second.empty()) index.erase(bucket);
      }
    }
  }

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Ptr> items_;
  std::unordered_map<std::string, IndexFunc> indexers_;
  std::unordered_map<std::string, std::unordered_map<std::string, std::unordered_set<std::string>>>
      indices_;
};

}  // namespace berth::informer

#endif  // BERTH_PKG_INFORMER_STORE_H_
