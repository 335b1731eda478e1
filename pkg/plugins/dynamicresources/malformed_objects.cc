#include "pkg/plugins/dynamicresources/malformed_objects.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "pkg/api/dra_types.h"
#include "pkg/informer/factory.h"

namespace berth::plugins::dynamicresources {
namespace {

using json = nlohmann::json;

// How many malformed slices one node's message names before it only counts the rest.
constexpr size_t kSlicesNamed = 3;

// "namespace/name", or the name of a cluster-scoped object, as ObjectMeta::Key makes it; empty
// when the raw object has no name.
std::string KeyOf(const json& object) {
  auto meta = object.find("metadata");
  if (!object.is_object() || meta == object.end() || !meta->is_object()) return "";
  const json* name = meta->contains("name") ? &(*meta)["name"] : nullptr;
  if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    return "";
  }
  auto ns = meta->find("namespace");
  if (ns == meta->end() || !ns->is_string() || ns->get_ref<const std::string&>().empty()) {
    return name->get<std::string>();
  }
  return ns->get<std::string>() + "/" + name->get<std::string>();
}

// The node a raw slice is published for; empty when it names none (or names it so badly that
// which node is unknown: its devices are then missing wherever they might have been).
std::string SliceNodeOf(const json& object) {
  auto spec = object.find("spec");
  if (!object.is_object() || spec == object.end() || !spec->is_object()) return "";
  auto node = spec->find("nodeName");
  return node != spec->end() && node->is_string() ? node->get<std::string>() : "";
}

// Records what `informer` rejects and forgets it once a good version or a delete arrives.
template <typename T>
void Subscribe(informer::Informer<T>& informer, MalformedObjects::Kind kind,
               const std::weak_ptr<MalformedObjects>& weak) {
  using Ptr = std::shared_ptr<const T>;
  informer::EventHandler<T> handler;
  handler.on_add = [weak, kind](const Ptr& object) {
    if (auto m = weak.lock()) m->Clear(kind, object->meta.Key());
  };
  handler.on_update = [weak, kind](const Ptr&, const Ptr& object) {
    if (auto m = weak.lock()) m->Clear(kind, object->meta.Key());
  };
  handler.on_delete = handler.on_add;
  informer.AddEventHandler(std::move(handler));
  informer.SetDecodeErrorHandler([weak, kind](const json& object, const std::string& error) {
    auto m = weak.lock();
    const std::string key = KeyOf(object);
    if (m == nullptr || key.empty()) return;
    m->Record(kind, key, error,
              kind == MalformedObjects::Kind::kSlice ? SliceNodeOf(object) : std::string());
  });
  informer.SetUnstoredDeleteHandler([weak, kind](const json& object) {
    auto m = weak.lock();
    const std::string key = KeyOf(object);
    if (m != nullptr && !key.empty()) m->Clear(kind, key);
  });
}

}  // namespace

std::shared_ptr<MalformedObjects> MalformedObjects::For(
    informer::SharedInformerFactory& informers) {
  struct Slot {
    std::weak_ptr<MalformedObjects> records;
    // The claim informer's store it was made for: a factory made where a destroyed one was gets
    // records of its own.
    const void* store = nullptr;
  };
  static std::mutex mu;
  static std::map<const informer::SharedInformerFactory*, Slot> slots;
  informer::Informer<api::ResourceClaim>& claims = informers.For<api::ResourceClaim>();
  informer::Informer<api::DeviceClass>& classes = informers.For<api::DeviceClass>();
  informer::Informer<api::ResourceSlice>& slices = informers.For<api::ResourceSlice>();
  std::lock_guard lock(mu);
  Slot& slot = slots[&informers];
  std::shared_ptr<MalformedObjects> records = slot.records.lock();
  if (records == nullptr || slot.store != &claims.store()) {
    records = std::make_shared<MalformedObjects>();
    slot = {records, &claims.store()};
    Subscribe(claims, Kind::kClaim, records);
    Subscribe(classes, Kind::kClass, records);
    Subscribe(slices, Kind::kSlice, records);
  }
  return records;
}

void MalformedObjects::Record(Kind kind, const std::string& key, std::string error,
                              std::string node) {
  std::lock_guard lock(mu_);
  Records& records = Of(kind);
  auto [it, added] = records.by_key.try_emplace(key);
  if (!added) records.order.erase(it->second.sequence);
  it->second = {std::move(error), std::move(node), next_sequence_++};
  records.order.emplace(it->second.sequence, key);
  while (records.by_key.size() > kMaxRecords) {
    records.by_key.erase(records.order.begin()->second);
    records.order.erase(records.order.begin());
  }
  CountOf(kind).store(records.by_key.size(), std::memory_order_release);
}

void MalformedObjects::Clear(Kind kind, const std::string& key) {
  // Most events are of objects never malformed; they need not wait for the lock. A kind is
  // recorded and cleared by its informer's one thread, so the count read here is current.
  if (CountOf(kind).load(std::memory_order_acquire) == 0) return;
  std::lock_guard lock(mu_);
  Records& records = Of(kind);
  auto it = records.by_key.find(key);
  if (it == records.by_key.end()) return;
  records.order.erase(it->second.sequence);
  records.by_key.erase(it);
  CountOf(kind).store(records.by_key.size(), std::memory_order_release);
}

std::string MalformedObjects::Error(Kind kind, const std::string& key) const {
  std::lock_guard lock(mu_);
  const Records& records = Of(kind);
  auto it = records.by_key.find(key);
  return it == records.by_key.end() ? std::string() : it->second.error;
}

std::string MalformedObjects::SliceNotes(const std::string& node) const {
  if (counts_[static_cast<int>(Kind::kSlice)].load(std::memory_order_acquire) == 0) return "";
  std::string notes;
  size_t more = 0;
  std::lock_guard lock(mu_);
  size_t named = 0;
  for (const auto& [name, entry] : Of(Kind::kSlice).by_key) {
    if (!entry.node.empty() && entry.node != node) continue;
    if (named == kSlicesNamed) {
      more++;
      continue;
    }
    named++;
    notes += "; ResourceSlice " + name + " cannot be read: " + entry.error;
  }
  if (more > 0) notes += "; " + std::to_string(more) + " more ResourceSlices cannot be read";
  return notes;
}

}  // namespace berth::plugins::dynamicresources
