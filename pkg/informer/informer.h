#ifndef BERTH_PKG_INFORMER_INFORMER_H_
#define BERTH_PKG_INFORMER_INFORMER_H_

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/client/client.h"
#include "pkg/informer/reflector.h"
#include "pkg/informer/store.h"

namespace berth::informer {

// Callbacks for one consumer. Any of them may be empty. They run on the informer's reflector
// thread, one at a time and in the order the apiserver produced the changes, so they must be
// quick (push to a queue, update a cache) and must not block on the network.
template <typename T>
struct EventHandler {
  using Ptr = std::shared_ptr<const T>;
  std::function<void(const Ptr&)> on_add;
  std::function<void(const Ptr& old_object, const Ptr& new_object)> on_update;
  // Also called for objects found missing by a relist (deleted while no watch was open); the
  // object is then the last state the store had.
  std::function<void(const Ptr&)> on_delete;
};

// Reports an object the decoder rejected: the raw object and the error (which names the field).
// The object is skipped; the store keeps the last good version it had, if any.
using DecodeErrorHandler =
    std::function<void(const nlohmann::json& object, const std::string& error)>;
// Reports a watched delete of an object the store does not hold (its decoder rejected every
// version the informer saw, so no handler ever had it): the object as the apiserver sent it.
using UnstoredDeleteHandler = std::function<void(const nlohmann::json& object)>;

// What the factory, /readyz and metrics need of an informer of any type.
class InformerBase {
 public:
  virtual ~InformerBase() = default;
  virtual void Start() = 0;
  virtual void Stop() = 0;
  // True once the first complete list has been stored and its handlers called.
  virtual bool HasSynced() const = 0;
  virtual bool WaitForSync(std::chrono::milliseconds timeout) = 0;
  virtual const Reflector& reflector() const = 0;
  // The resource's plural, with its group when it has one: "pods", "poddisruptionbudgets.policy".
  std::string ResourceName() const {
    const client::Resource& r = reflector().options().resource;
    return r.group.empty() ? r.plural : r.plural + "." + r.group;
  }
};

// One resource kept in a local Store through a Reflector, with typed handlers. T must have
// `meta.Key()` and `meta.resource_version` (see pkg/api/types.h).
//
// Without a client (benchmarks, offline simulation) the informer never lists or watches: it is
// synced from the start and holds what the caller puts in with Upsert/Remove, which dispatch to
// the handlers exactly as watch events would.
template <typename T>
class Informer : public InformerBase, private ListWatchSink {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Decoder = std::function<T(const nlohmann::json&)>;
  // Decodes a listed or watched item's protobuf message directly, or returns std::nullopt to have
  // it decoded to JSON and passed to the Decoder, which must then give an equal object or the error
  // (see api::TryDecodeProtobufPod).
  using ProtobufDecoder = std::function<std::optional<T>(std::string_view message)>;

  Informer(std::shared_ptr<client::Client> client, ReflectorOptions options, Decoder decoder,
           ProtobufDecoder protobuf_decoder = nullptr)
      : decoder_(std::move(decoder)),
        protobuf_decoder_(std::move(protobuf_decoder)),
        has_client_(client != nullptr),
        synced_(!has_client_),
        reflector_(std::move(client), std::move(options), this) {
    if (!has_client_ || !reflector_.options().discover) served_ = true;
  }
  ~Informer() override { Stop(); }

  // Adds a consumer. When objects are already stored, they are replayed to it as adds first,
  // atomically with respect to later events.
  void AddEventHandler(EventHandler<T> handler) {
    std::lock_guard lock(dispatch_mu_);
    if (handler.on_add) {
      for (const auto& object : store_.List()) handler.on_add(object);
    }
    handlers_.push_back(std::move(handler));
  }

  // Calls `fn` once with whether the apiserver serves the resource, as soon as that is known (at
  // once when it already is). Only a resource discovered first (ReflectorOptions::discover) can
  // be unserved; such an informer stays empty and counts as synced.
  void OnServed(std::function<void(bool served)> fn) {
    std::lock_guard lock(dispatch_mu_);
    if (served_.has_value()) {
      fn(*served_);
    } else {
      served_handlers_.push_back(std::move(fn));
    }
  }

  void SetDecodeErrorHandler(DecodeErrorHandler handler) {
    std::lock_guard lock(dispatch_mu_);
    decode_error_handler_ = std::move(handler);
  }
  void SetUnstoredDeleteHandler(UnstoredDeleteHandler handler) {
    std::lock_guard lock(dispatch_mu_);
    unstored_delete_handler_ = std::move(handler);
  }

  void Start() override {
    if (has_client_) reflector_.Start();
  }
  void Stop() override { reflector_.Stop(); }

  bool HasSynced() const override { return synced_.load(); }

  bool WaitForSync(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(sync_mu_);
    return sync_cv_.wait_for(lock, timeout, [this] { return synced_.load(); });
  }

  // For a client-less informer: an add or update, and a delete, as if watched.
  void Upsert(const Ptr& object) {
    std::lock_guard lock(dispatch_mu_);
    Watched(object);
  }
  void Remove(const std::string& key) {
    std::lock_guard lock(dispatch_mu_);
    Deleted(key, nullptr);
  }
  // For a client-less informer: an object as a watch event brings it, decoded (or reported as
  // malformed) exactly as the reflector's events are.
  void InjectWatchEvent(client::WatchEventType type, const nlohmann::json& object) {
    WatchEvent(type, object);
  }

  Store<T>& store() { return store_; }
  const Store<T>& store() const { return store_; }
  const Reflector& reflector() const override { return reflector_; }
  uint64_t decode_errors() const { return decode_errors_.load(); }

 private:
  std::optional<T> Decode(const nlohmann::json& object) {
    try {
      return decoder_(object);
    } catch (const std::exception& e) {
      decode_errors_++;
      std::string where = reflector_.options().resource.plural;
      if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
        where += " " + meta->value("namespace", std::string()) + "/" +
                 meta->value("name", std::string());
      }
      spdlog::warn("skipping malformed object {}: {}", where, e.what());
      if (decode_error_handler_) decode_error_handler_(object, e.what());
      return std::nullopt;
    }
  }

  static std::string KeyOf(const nlohmann::json& object) {
    auto meta = object.find("metadata");
    if (meta == object.end() || !meta->is_object()) return "";
    std::string ns = meta->value("namespace", std::string());
    std::string name = meta->value("name", std::string());
    return ns.empty() ? name : ns + "/" + name;
  }

  void ReplaceBegin() override {
    staged_.clear();
    staged_malformed_.clear();
    // A list into an empty store replaces nothing, so its items are applied as they are decoded,
    // while the rest of the body is still arriving, rather than all after its last byte (on a
    // large cluster, a good part of start-up). A list that fails midway leaves them in the store;
    // the next one then finds the store non-empty and stages as usual, deleting what is gone.
    apply_as_listed_ = store_.Size() == 0;
  }

  void ReplaceItem(const nlohmann::json& object) override {
    std::lock_guard lock(dispatch_mu_);
    if (auto decoded = Decode(object)) {
      Listed(std::move(*decoded));
    } else if (auto key = KeyOf(object); !key.empty() && !apply_as_listed_) {
      staged_malformed_.insert(std::move(key));
    }
  }

  bool ReplaceProtobufItem(std::string_view message) override {
    if (!protobuf_decoder_) return false;
    std::optional<T> decoded = protobuf_decoder_(message);
    if (!decoded) return false;
    std::lock_guard lock(dispatch_mu_);
    Listed(std::move(*decoded));
    return true;
  }

  // One well-formed listed object: applied at once or staged (see ReplaceBegin). Called with
  // dispatch_mu_ held.
  void Listed(T&& object) {
    auto ptr = std::make_shared<const T>(std::move(object));
    std::string key = ptr->meta.Key();
    if (apply_as_listed_) {
      Apply(key, ptr);
    } else {
      staged_.emplace(std::move(key), std::move(ptr));
    }
  }

  // Stores one listed object and tells the handlers, unless the store already has that version.
  // Called with dispatch_mu_ held.
  void Apply(const std::string& key, const Ptr& object) {
    const auto [old, stored] = store_.UpsertIfChanged(key, object);
    if (!stored) return;
    if (old) {
      for (auto& h : handlers_) {
        if (h.on_update) h.on_update(old, object);
      }
    } else {
      for (auto& h : handlers_) {
        if (h.on_add) h.on_add(object);
      }
    }
  }

  void ReplaceEnd() override {
    {
      std::lock_guard lock(dispatch_mu_);
      for (auto& [key, object] : staged_) Apply(key, object);
      // Everything in the store came from this list when it was applied as listed.
      const std::vector<std::string> keys =
          apply_as_listed_ ? std::vector<std::string>() : store_.Keys();
      for (const auto& key : keys) {
        if (staged_.count(key) || staged_malformed_.count(key)) continue;
        if (Ptr old = store_.Remove(key)) {
          for (auto& h : handlers_) {
            if (h.on_delete) h.on_delete(old);
          }
        }
      }
      staged_.clear();
      staged_malformed_.clear();
    }
    {
      std::lock_guard lock(sync_mu_);
      synced_ = true;
    }
    sync_cv_.notify_all();
  }

  void WatchEvent(client::WatchEventType type, const nlohmann::json& object) override {
    std::lock_guard lock(dispatch_mu_);
    if (type == client::WatchEventType::kDeleted) {
      // The final state may be malformed too; the key is all a delete needs.
      Ptr final_state;
      try {
        final_state = std::make_shared<const T>(decoder_(object));
      } catch (const std::exception&) {
      }
      if (!Deleted(KeyOf(object), final_state) && unstored_delete_handler_) {
        unstored_delete_handler_(object);
      }
      return;
    }
    auto decoded = Decode(object);
    if (!decoded) return;
    Watched(std::make_shared<const T>(std::move(*decoded)));
  }

  bool WatchProtobufPod(client::WatchEventType type, std::string_view message,
                        std::string* resource_version) override {
    if (!protobuf_decoder_) return false;
    std::optional<T> decoded = protobuf_decoder_(message);
    if (!decoded) return false;
    *resource_version = decoded->meta.resource_version;
    auto object = std::make_shared<const T>(std::move(*decoded));
    std::lock_guard lock(dispatch_mu_);
    if (type == client::WatchEventType::kDeleted) {
      Deleted(object->meta.Key(), object);
    } else {
      Watched(object);
    }
    return true;
  }

  void Discovered(bool served) override {
    {
      std::lock_guard lock(dispatch_mu_);
      served_ = served;
      for (auto& fn : served_handlers_) fn(served);
      served_handlers_.clear();
    }
    if (served) return;
    {
      std::lock_guard lock(sync_mu_);
      synced_ = true;
    }
    sync_cv_.notify_all();
  }

  // A watched add or update. Called with dispatch_mu_ held.
  void Watched(const Ptr& object) {
    Ptr old = store_.Upsert(object->meta.Key(), object);
    for (auto& h : handlers_) {
      if (old) {
        if (h.on_update) h.on_update(old, object);
      } else if (h.on_add) {
        h.on_add(object);
      }
    }
  }

  // A watched delete; handlers get `final_state`, or the stored object when it is null. False
  // when the store did not hold the object. Called with dispatch_mu_ held.
  bool Deleted(const std::string& key, const Ptr& final_state) {
    Ptr old = store_.Remove(key);
    if (!old) return false;
    for (auto& h : handlers_) {
      if (h.on_delete) h.on_delete(final_state ? final_state : old);
    }
    return true;
  }

  Decoder decoder_;
  ProtobufDecoder protobuf_decoder_;
  Store<T> store_;
  // Serializes handler registration against event dispatch.
  std::mutex dispatch_mu_;
  std::vector<EventHandler<T>> handlers_;
  DecodeErrorHandler decode_error_handler_;
  UnstoredDeleteHandler unstored_delete_handler_;
  // Guarded by dispatch_mu_.
  std::optional<bool> served_;
  std::vector<std::function<void(bool)>> served_handlers_;
  // Reflector-thread only.
  std::unordered_map<std::string, Ptr> staged_;
  std::unordered_set<std::string> staged_malformed_;
  bool apply_as_listed_ = false;

  const bool has_client_;
  std::atomic<bool> synced_;
  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  std::atomic<uint64_t> decode_errors_{0};
  // Declared last: its thread calls back into the members above, so it must stop first.
  Reflector reflector_;
};

}  // namespace berth::informer

#endif  // BERTH_PKG_INFORMER_INFORMER_H_
