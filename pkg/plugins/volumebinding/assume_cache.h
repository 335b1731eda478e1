#ifndef BERTH_PKG_PLUGINS_VOLUMEBINDING_ASSUME_CACHE_H_
#define BERTH_PKG_PLUGINS_VOLUMEBINDING_ASSUME_CACHE_H_

// The objects of one kind (volumes or claims) as the informer has them, with the versions the
// scheduler assumed on top: Reserve assumes a volume bound to its claim, or a claim annotated
// with its pod's node, before PreBind writes it, so the next pods' cycles see it as taken.
//
// Invariant: an assumed object is seen only while the informer still has the resourceVersion it
// was assumed from. Once the informer stores another version (the write came back, or someone
// else changed the object) or loses the object, the assumption is dropped and the informer's
// object is seen again.
//
// Thread-safe. Kept in a shared_ptr: the informer's event handlers hold it.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pkg/informer/informer.h"
#include "pkg/plugins/helper/volumes.h"

namespace berth::plugins::volumebinding {

template <typename T>
class AssumeCache {
 public:
  using Ptr = std::shared_ptr<const T>;
  // The index key of an object (a volume's class); empty: no index is kept.
  using IndexFn = std::function<std::string(const T&)>;

  // `resource` names the kind in "not found" errors ("persistentvolumes").
  static std::shared_ptr<AssumeCache> New(informer::Informer<T>& informer, std::string resource,
                                          IndexFn index = nullptr) {
    auto cache =
        std::make_shared<AssumeCache>(&informer.store(), std::move(resource), std::move(index));
    informer::EventHandler<T> handler;
    std::weak_ptr<AssumeCache> weak = cache;
    handler.on_add = [weak](const Ptr& object) {
      if (auto c = weak.lock()) c->Stored(nullptr, object);
    };
    handler.on_update = [weak](const Ptr& old_object, const Ptr& object) {
      if (auto c = weak.lock()) c->Stored(old_object, object);
    };
    handler.on_delete = [weak](const Ptr& object) {
      if (auto c = weak.lock()) c->Deleted(object);
    };
    informer.AddEventHandler(std::move(handler));
    return cache;
  }

  // The assumed version when it is still current, else the informer's object; null with `error`
  // set (`<resource> "<key>" not found`) when the informer has none.
  Ptr Get(const std::string& key, std::string* error) const {
    std::lock_guard lock(mu_);
    Ptr stored = GetAPIObjLocked(key, error);
    if (!stored) return nullptr;
    auto it = assumed_.find(key);
    if (it == assumed_.end() ||
        it->second->meta.resource_version != stored->meta.resource_version) {
      return stored;
    }
    return it->second;
  }

  // The informer's object, ignoring any assumption.
  Ptr GetAPIObj(const std::string& key, std::string* error) const {
    std::lock_guard lock(mu_);
    return GetAPIObjLocked(key, error);
  }

  // The objects whose index key is `value`, each as Get would return it.
  std::vector<Ptr> ByIndex(const std::string& value) const {
    std::lock_guard lock(mu_);
    std::vector<Ptr> out;
    auto bucket = index_.find(value);
    if (bucket == index_.end()) return out;
    out.reserve(bucket->second.size());
    for (const auto& [key, object] : bucket->second) {
      auto assumed = assumed_.find(key);
      const bool current = assumed != assumed_.end() &&
                           assumed->second->meta.resource_version == object->meta.resource_version;
      out.push_back(current ? assumed->second : object);
    }
    return out;
  }

  // Assumes `object`, which must be a change of the informer's current version (same
  // resourceVersion); false with `error` otherwise.
  bool Assume(Ptr object, std::string* error) {
    const std::string key = object->meta.Key();
    std::lock_guard lock(mu_);
    Ptr stored = GetAPIObjLocked(key, error);
    if (!stored) return false;
    if (stored->meta.resource_version != object->meta.resource_version) {
      *error = "\"" + key + "\" is out of sync (stored: " + stored->meta.resource_version +
               ", assume: " + object->meta.resource_version + ")";
      return false;
    }
    assumed_[key] = std::move(object);
    return true;
  }

  // Drops the assumption of `object`'s version, if it is the one assumed.
  void Restore(const T& object) {
    std::lock_guard lock(mu_);
    auto it = assumed_.find(object.meta.Key());
    if (it != assumed_.end() && it->second->meta.resource_version == object.meta.resource_version) {
      assumed_.erase(it);
    }
  }

  // Calls `fn` after every change the informer delivers, outside the cache's lock.
  void OnChange(std::function<void()> fn) {
    std::lock_guard lock(mu_);
    listeners_.push_back(std::move(fn));
  }

  // Use New, which also subscribes the cache to the informer.
  AssumeCache(const informer::Store<T>* store, std::string resource, IndexFn index)
      : store_(store), resource_(std::move(resource)), index_fn_(std::move(index)) {}

 private:
  Ptr GetAPIObjLocked(const std::string& key, std::string* error) const {
    Ptr stored = store_->Get(key);
    if (!stored && error != nullptr) *error = helper::NotFoundMessage(resource_, key);
    return stored;
  }

  void Expire(const std::string& key, const Ptr& now) {
    auto it = assumed_.find(key);
    if (it == assumed_.end()) return;
    if (!now || now->meta.resource_version != it->second->meta.resource_version) assumed_.erase(it);
  }

  void Stored(const Ptr& old_object, const Ptr& object) {
    std::vector<std::function<void()>> listeners;
    {
      std::lock_guard lock(mu_);
      const std::string key = object->meta.Key();
      if (index_fn_) {
        if (old_object) Unindex(*old_object);
        index_[index_fn_(*object)][key] = object;
      }
      Expire(key, object);
      listeners = listeners_;
    }
    for (const auto& fn : listeners) fn();
  }

  void Deleted(const Ptr& object) {
    std::vector<std::function<void()>> listeners;
    {
      std::lock_guard lock(mu_);
      if (index_fn_) Unindex(*object);
      Expire(object->meta.Key(), nullptr);
      listeners = listeners_;
    }
    for (const auto& fn : listeners) fn();
  }

  void Unindex(const T& object) {
    auto bucket = index_.find(index_fn_(object));
    if (bucket == index_.end()) return;
    bucket->second.erase(object.meta.Key());
    if (bucket->second.empty()) index_.erase(bucket);
  }

  const informer::Store<T>* store_;
  const std::string resource_;
  const IndexFn index_fn_;
  mutable std::mutex mu_;
  // Guarded by mu_.
  std::unordered_map<std::string, Ptr> assumed_;
  // Index key -> object key -> the informer's object. Ordered, so listing is deterministic.
  std::unordered_map<std::string, std::map<std::string, Ptr>> index_;
  std::vector<std::function<void()>> listeners_;
};

}  // namespace berth::plugins::volumebinding

#endif  // BERTH_PKG_PLUGINS_VOLUMEBINDING_ASSUME_CACHE_H_
