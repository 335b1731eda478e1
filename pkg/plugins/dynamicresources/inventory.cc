#include "pkg/plugins/dynamicresources/inventory.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "pkg/informer/factory.h"

namespace berth::plugins::dynamicresources {
namespace {

// The memo's bytes (one per device and expression), whatever the number of devices: room for
// every class's selectors and a few dozen distinct claim selectors at 100k devices.
constexpr size_t kMemoBudgetBytes = size_t{16} << 20;

// Attribute columns: one pointer per device and attribute name a constraint uses; room for a
// few dozen names at 100k devices.
constexpr size_t kColumnBudgetBytes = size_t{32} << 20;

constexpr uint8_t kUnknown = 0;
constexpr uint8_t kNoMatch = 1;
constexpr uint8_t kMatch = 2;

}  // namespace

Inventory::Inventory(const std::vector<api::DeviceClassPtr>& classes,
                     const std::vector<api::ResourceSlicePtr>& slices,
                     const std::vector<api::DeviceTaintRule>& taint_rules,
                     const DeviceSelectorEvaluator& evaluator)
    : evaluator_(evaluator),
      slices_(ApplyDeviceTaintRules(slices, taint_rules)),
      index_of_id_(0, IndexHash{&device_ids_}, IndexEqual{&device_ids_}) {
  for (const api::DeviceClassPtr& device_class : classes) {
    classes_.emplace(device_class->meta.name, device_class);
  }
  for (const api::ResourceSlicePtr& slice : slices_) {
    all_slices_.push_back(slice.get());
    if (slice->spec.node_name && !slice->spec.node_name->empty()) {
      slices_by_node_[*slice->spec.node_name].push_back(slice.get());
    } else {
      slices_without_node_.push_back(slice.get());
    }
    first_device_.emplace(slice.get(), devices_);
    devices_ += slice->spec.devices.size();
    for (const api::Device& device : slice->spec.devices) {
      device_ids_.push_back(DeviceId{slice->spec.driver, slice->spec.pool.name, device.name});
      const bool plain =
          std::none_of(device.capacity.begin(), device.capacity.end(), [](const auto& capacity) {
            return capacity.second.request_policy.has_value() || capacity.second.value.Negative();
          });
      plain_capacity_.push_back(plain ? 1 : 0);
      const bool whole =
          plain && !device.allow_multiple_allocations && device.consumes_counters.empty();
      whole_device_.push_back(whole ? 1 : 0);
    }
  }
  index_of_id_.reserve(devices_);
  for (size_t i = 0; i < devices_; i++) index_of_id_.insert(i);
  if (slices_without_node_.empty()) {
    for (const auto& [name, node_slices] : slices_by_node_) {
      // A slice with a node name reaches exactly the node of that name, so a node that has
      // only its name stands for every node of that name.
      api::Node node;
      node.meta.name = name;
      NodePools& entry = pools_by_node_[name];
      entry.pools = GatherPools(node_slices, node, all_slices_);
      IndexFirstDevices(&entry.pools);
      entry.whole_devices = WholeDevices(entry.pools);
      entry.slot = pools_by_node_.size() - 1;
    }
  }
  std::vector<const NodePools*> by_slot(pools_by_node_.size());
  for (const auto& [name, entry] : pools_by_node_) by_slot[entry.slot] = &entry;
  // The shared slot of nodes without slices comes last, with no devices.
  for (size_t slot = 0; slot <= by_slot.size(); slot++) {
    range_offset_.push_back(static_cast<uint32_t>(ranges_.size()));
    const bool whole =
        slices_without_node_.empty() && (slot == by_slot.size() || by_slot[slot]->whole_devices);
    slot_whole_.push_back(whole ? 1 : 0);
    if (!whole || slot == by_slot.size()) continue;
    for (const Pool& pool : by_slot[slot]->pools) {
      for (size_t i = 0; i < pool.slices_targeting_node.size(); i++) {
        ranges_.push_back(
            {static_cast<uint32_t>(pool.first_devices[i]),
             static_cast<uint32_t>(pool.slices_targeting_node[i]->spec.devices.size())});
      }
    }
  }
  range_offset_.push_back(static_cast<uint32_t>(ranges_.size()));
  decisions_ = std::make_unique<DecisionMemo>(pools_by_node_.size() + 1);
  memo_capacity_ = devices_ == 0 ? 0 : std::max<size_t>(1, kMemoBudgetBytes / devices_);
  for (const auto& [name, device_class] : classes_) {
    for (const api::CelDeviceSelector& selector : device_class->selectors) {
      if (class_memo_.contains(selector.expression)) continue;
      if (std::atomic<uint8_t>* memo = AddMemo(selector.expression)) {
        class_memo_.emplace(selector.expression, memo);
      }
    }
  }
}

const api::DeviceClass* Inventory::Class(std::string_view name) const {
  auto it = classes_.find(name);
  return it == classes_.end() ? nullptr : it->second.get();
}

const std::vector<Pool>* Inventory::PoolsFor(const api::Node& node,
                                             std::vector<Pool>* scratch) const {
  static const std::vector<Pool> kNone;
  if (slices_without_node_.empty()) {
    auto pools = pools_by_node_.find(node.Name());
    return pools == pools_by_node_.end() ? &kNone : &pools->second.pools;
  }
  auto by_name = slices_by_node_.find(node.Name());
  std::vector<const api::ResourceSlice*> for_node;
  if (by_name != slices_by_node_.end()) for_node = by_name->second;
  for_node.insert(for_node.end(), slices_without_node_.begin(), slices_without_node_.end());
  *scratch = GatherPools(for_node, node, all_slices_);
  IndexFirstDevices(scratch);
  return scratch;
}

std::vector<const api::ResourceSlice*> Inventory::SlicesOfPool(const api::Node& node,
                                                               const PoolId& id) const {
  std::vector<const api::ResourceSlice*> out;
  auto add = [&](const std::vector<const api::ResourceSlice*>& slices) {
    for (const api::ResourceSlice* slice : slices) {
      bool placed = false;
      if (slice->spec.driver != id.driver || slice->spec.pool.name != id.pool ||
          !slice->unsupported_fields.empty() || !SliceReachesNode(*slice, node, &placed)) {
        continue;
      }
      if (!out.empty() && slice->spec.pool.generation != out.front()->spec.pool.generation) {
        if (slice->spec.pool.generation < out.front()->spec.pool.generation) continue;
        out.clear();
      }
      out.push_back(slice);
    }
  };
  if (auto by_name = slices_by_node_.find(node.Name()); by_name != slices_by_node_.end()) {
    add(by_name->second);
  }
  add(slices_without_node_);
  return out;
}

bool Inventory::WholeDeviceRangesAt(size_t slot, const DeviceRange** begin,
                                    const DeviceRange** end) const {
  if (slot >= slot_whole_.size() || slot_whole_[slot] == 0) return false;
  *begin = ranges_.data() + range_offset_[slot];
  *end = ranges_.data() + range_offset_[slot + 1];
  return true;
}

size_t Inventory::SlotOf(const api::Node& node) const {
  auto pools = pools_by_node_.find(node.Name());
  // Every node without slices has none of the devices, so they share one decision.
  return pools == pools_by_node_.end() ? pools_by_node_.size() : pools->second.slot;
}

bool Inventory::WholeDevices(const std::vector<Pool>& pools) const {
  for (const Pool& pool : pools) {
    if (!pool.counter_sets.empty() ||
        pool.first_devices.size() != pool.slices_targeting_node.size()) {
      return false;
    }
    for (size_t s = 0; s < pool.slices_targeting_node.size(); s++) {
      const size_t first = pool.first_devices[s];
      if (first == kNoIndex) return false;
      const size_t count = pool.slices_targeting_node[s]->spec.devices.size();
      for (size_t i = first; i < first + count; i++) {
        if (whole_device_[i] == 0) return false;
      }
    }
  }
  return true;
}

const DeviceId* Inventory::DeviceIds(const api::ResourceSlice& slice) const {
  auto first = first_device_.find(&slice);
  return first == first_device_.end() ? nullptr : device_ids_.data() + first->second;
}

void Inventory::IndexFirstDevices(std::vector<Pool>* pools) const {
  for (Pool& pool : *pools) {
    pool.first_devices.clear();
    for (const api::ResourceSlice* slice : pool.slices_targeting_node) {
      pool.first_devices.push_back(FirstDevice(*slice));
    }
  }
}

const DeviceId* Inventory::DeviceIdAt(size_t index) const {
  return index < device_ids_.size() ? &device_ids_[index] : nullptr;
}

size_t Inventory::FirstDevice(const api::ResourceSlice& slice) const {
  auto first = first_device_.find(&slice);
  return first == first_device_.end() ? kNoIndex : first->second;
}

ExclusiveDevices Inventory::Exclusive(const AllocatedState& state) const {
  std::shared_ptr<const std::vector<uint8_t>> base_flags;
  if (state.base != nullptr) {
    {
      std::lock_guard lock(exclusive_mu_);
      if (exclusive_base_.lock() == state.base) base_flags = exclusive_base_flags_;
    }
    if (base_flags == nullptr) {
      // A base is usually the last one with a level of a few claims folded over it: then only
      // that level's devices are looked up.
      std::shared_ptr<const std::vector<uint8_t>> below;
      if (state.base->base != nullptr) {
        std::lock_guard lock(exclusive_mu_);
        if (exclusive_base_.lock() == state.base->base) below = exclusive_base_flags_;
      }
      std::shared_ptr<std::vector<uint8_t>> made;
      if (below != nullptr) {
        made = std::make_shared<std::vector<uint8_t>>(*below);
        MarkExclusive(*state.base, made.get(), /*levels=*/1);
      } else {
        made = std::make_shared<std::vector<uint8_t>>(devices_, 0);
        MarkExclusive(*state.base, made.get());
      }
      base_flags = made;
      std::lock_guard lock(exclusive_mu_);
      exclusive_base_ = state.base;
      exclusive_base_flags_ = base_flags;
    }
  }
  std::vector<size_t> own;
  for (const DeviceId& id : state.devices) {
    auto [begin, end] = index_of_id_.equal_range(id);
    for (auto it = begin; it != end; ++it) own.push_back(*it);
  }
  // A search tests a flag per device it looks at, on hundreds of nodes per cycle: past a few own
  // devices, one copy of the flags with them set costs less than a binary search per test.
  constexpr size_t kFlattenAbove = 16;
  if (own.size() > kFlattenAbove) {
    auto flat = base_flags != nullptr ? std::make_shared<std::vector<uint8_t>>(*base_flags)
                                      : std::make_shared<std::vector<uint8_t>>(devices_, 0);
    for (size_t index : own) (*flat)[index] = 1;
    return ExclusiveDevices(std::move(flat), {});
  }
  return ExclusiveDevices(std::move(base_flags), std::move(own));
}

void Inventory::MarkExclusive(const AllocatedState& state, std::vector<uint8_t>* flags,
                              size_t levels) const {
  for (const AllocatedState* level = &state; level != nullptr && levels > 0;
       level = level->base.get(), levels--) {
    for (const DeviceId& id : level->devices) {
      auto [begin, end] = index_of_id_.equal_range(id);
      for (auto it = begin; it != end; ++it) (*flags)[*it] = 1;
    }
  }
}

const api::DeviceAttribute* FindDeviceAttribute(const api::Device& device, std::string_view driver,
                                                std::string_view name) {
  if (auto it = device.attributes.find(name); it != device.attributes.end()) {
    return &it->second;
  }
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos || name.substr(0, slash) != driver) {
    return nullptr;
  }
  if (auto it = device.attributes.find(name.substr(slash + 1)); it != device.attributes.end()) {
    return &it->second;
  }
  return nullptr;
}

const AttributeColumn* Inventory::AttributesFor(std::string_view name) const {
  std::lock_guard lock(memo_mu_);
  if (auto it = columns_.find(name); it != columns_.end()) return it->second.get();
  const size_t bytes_per_column = std::max<size_t>(1, devices_) * sizeof(void*);
  if ((columns_.size() + 1) * bytes_per_column > kColumnBudgetBytes) return nullptr;
  auto column = std::make_unique<AttributeColumn>();
  column->reserve(devices_);
  for (const api::ResourceSlice* slice : all_slices_) {
    for (const api::Device& device : slice->spec.devices) {
      column->push_back(FindDeviceAttribute(device, slice->spec.driver, name));
    }
  }
  return columns_.emplace(std::string(name), std::move(column)).first->second.get();
}

std::atomic<uint8_t>* Inventory::MemoFor(std::string_view expression) const {
  if (auto it = class_memo_.find(expression); it != class_memo_.end()) return it->second;
  std::lock_guard lock(memo_mu_);
  return AddMemo(expression);
}

std::atomic<uint8_t>* Inventory::AddMemo(std::string_view expression) const {
  if (auto it = memo_.find(expression); it != memo_.end()) return it->second.get();
  if (memo_.size() >= memo_capacity_) return nullptr;
  Memo memo(new std::atomic<uint8_t>[devices_]);
  for (size_t i = 0; i < devices_; i++) memo[i].store(kUnknown, std::memory_order_relaxed);
  return memo_.emplace(std::string(expression), std::move(memo)).first->second.get();
}

std::optional<bool> Inventory::Selects(std::atomic<uint8_t>* memo, std::string_view expression,
                                       const api::ResourceSlice& slice, size_t device_index,
                                       SelectorResult* error) const {
  const size_t first = FirstDevice(slice);
  return SelectsAt(memo, expression, slice, device_index,
                   first == kNoIndex ? kNoIndex : first + device_index, error);
}

std::optional<bool> Inventory::SelectsAt(std::atomic<uint8_t>* memo, std::string_view expression,
                                         const api::ResourceSlice& slice, size_t device_index,
                                         size_t inventory_index, SelectorResult* error) const {
  const api::Device& device = slice.spec.devices[device_index];
  const size_t index = inventory_index;
  if (index == kNoIndex) memo = nullptr;
  if (memo != nullptr) {
    const uint8_t known = memo[index].load(std::memory_order_relaxed);
    if (known != kUnknown) return known == kMatch;
  }
  SelectorResult result = evaluator_.Evaluate(expression, slice.spec.driver, device);
  if (result.failure != SelectorResult::Failure::kNone) {
    *error = std::move(result);
    return std::nullopt;
  }
  // Relaxed: every writer stores the same value, and a reader that misses it evaluates again.
  if (memo != nullptr) {
    memo[index].store(result.matches ? kMatch : kNoMatch, std::memory_order_relaxed);
  }
  return result.matches;
}

InventoryCache::InventoryCache(informer::SharedInformerFactory& informers,
                               const DeviceSelectorEvaluator& evaluator)
    : evaluator_(evaluator),
      classes_(informers.ListerFor<api::DeviceClass>()),
      slices_(informers.ListerFor<api::ResourceSlice>()),
      taint_rules_(informers.ListerFor<api::DeviceTaintRule>()),
      generation_(std::make_shared<std::atomic<uint64_t>>(1)) {
  std::weak_ptr<std::atomic<uint64_t>> weak = generation_;
  auto subscribe = [&weak](auto& informer) {
    using T = typename std::remove_reference_t<decltype(informer)>::Ptr::element_type;
    auto bump = [weak] {
      if (auto generation = weak.lock()) generation->fetch_add(1, std::memory_order_release);
    };
    informer::EventHandler<std::remove_const_t<T>> handler;
    handler.on_add = [bump](const auto&) { bump(); };
    handler.on_update = [bump](const auto&, const auto&) { bump(); };
    handler.on_delete = [bump](const auto&) { bump(); };
    informer.AddEventHandler(std::move(handler));
  };
  subscribe(informers.For<api::DeviceClass>());
  subscribe(informers.For<api::ResourceSlice>());
  subscribe(informers.For<api::DeviceTaintRule>());
}

std::shared_ptr<const Inventory> InventoryCache::Get() {
  const uint64_t generation = generation_->load(std::memory_order_acquire);
  std::lock_guard lock(mu_);
  if (inventory_ != nullptr && built_generation_ == generation) return inventory_;
  std::vector<api::DeviceTaintRule> rules;
  for (const auto& rule : taint_rules_.List()) rules.push_back(*rule);
  inventory_ =
      std::make_shared<const Inventory>(classes_.List(), slices_.List(), rules, evaluator_);
  built_generation_ = generation;
  builds_++;
  return inventory_;
}

uint64_t InventoryCache::builds() const {
  std::lock_guard lock(mu_);
  return builds_;
}

}  // namespace berth::plugins::dynamicresources
