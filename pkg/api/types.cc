#include "pkg/api/types.h"

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::api {
namespace {

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return sum;
}

int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t diff;
  if (__builtin_sub_overflow(a, b, &diff)) {
    return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return diff;
}

using Scalars = std::vector<std::pair<std::string, int64_t>>;

// Combines two name-sorted lists element-wise into `into`, treating a missing name as 0.
template <typename Op>
void MergeScalars(Scalars& into, const Scalars& other, Op op) {
  if (other.empty()) {
    return;
  }
  Scalars merged;
  merged.reserve(into.size() + other.size());
  auto a = into.begin();
  auto b = other.begin();
  while (a != into.end() || b != other.end()) {
    if (b == other.end() || (a != into.end() && a->first < b->first)) {
      merged.emplace_back(std::move(a->first), op(a->second, 0));
      ++a;
    } else if (a == into.end() || b->first < a->first) {
      merged.emplace_back(b->first, op(0, b->second));
      ++b;
    } else {
      merged.emplace_back(std::move(a->first), op(a->second, b->second));
      ++a;
      ++b;
    }
  }
  into = std::move(merged);
}

}  // namespace

StringMap::StringMap(std::vector<Entry> entries) : entries_(std::move(entries)) {
  auto strictly_less = [](const Entry& a, const Entry& b) { return a.first < b.first; };
  // Decoded JSON objects arrive sorted and unique already; only sort when they are not.
  if (std::adjacent_find(entries_.begin(), entries_.end(), [&](const Entry& a, const Entry& b) {
        return !strictly_less(a, b);
      }) == entries_.end()) {
    return;
  }
  std::stable_sort(entries_.begin(), entries_.end(), strictly_less);
  // Among equal keys the stable sort keeps input order, so the last of each run wins.
  std::vector<Entry> unique;
  unique.reserve(entries_.size());
  for (auto& entry : entries_) {
    if (!unique.empty() && unique.back().first == entry.first) {
      unique.back().second = std::move(entry.second);
    } else {
      unique.push_back(std::move(entry));
    }
  }
  entries_ = std::move(unique);
}

const std::string* StringMap::Find(std::string_view key) const {
  // Node label lookups run for every node a cycle filters, on labels nobody touched since the
  // last cycle. A binary search reads the text of each key it probes, and most label keys are too
  // long to be stored inline, so each probe is a cache miss; for the usual handful of labels a
  // scan that compares lengths first only ever reads the text of the key that matches.
  if (entries_.size() <= kLinearFindMax) {
    for (const Entry& e : entries_) {
      if (e.first.size() == key.size() && std::string_view(e.first) == key) return &e.second;
    }
    return nullptr;
  }
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Entry& e, std::string_view k) { return e.first < k; });
  if (it == entries_.end() || it->first != key) {
    return nullptr;
  }
  return &it->second;
}

void StringMap::Set(std::string key, std::string value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Entry& e, const std::string& k) { return e.first < k; });
  if (it != entries_.end() && it->first == key) {
    it->second = std::move(value);
  } else {
    entries_.emplace(it, std::move(key), std::move(value));
  }
}

int64_t ResourceList::Get(std::string_view name) const {
  if (name == kResourceCPU) {
    return milli_cpu;
  }
  if (name == kResourceMemory) {
    return memory;
  }
  if (name == kResourceEphemeralStorage) {
    return ephemeral_storage;
  }
  if (name == kResourcePods) {
    return pods;
  }
  auto it = std::lower_bound(scalar.begin(), scalar.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  if (it == scalar.end() || it->first != name) {
    return 0;
  }
  return it->second;
}

void ResourceList::Set(std::string_view name, int64_t amount) {
  if (name == kResourceCPU) {
    milli_cpu = amount;
  } else if (name == kResourceMemory) {
    memory = amount;
  } else if (name == kResourceEphemeralStorage) {
    ephemeral_storage = amount;
  } else if (name == kResourcePods) {
    pods = amount;
  } else {
    auto it = std::lower_bound(scalar.begin(), scalar.end(), name,
                               [](const auto& e, std::string_view n) { return e.first < n; });
    if (it != scalar.end() && it->first == name) {
      it->second = amount;
    } else {
      scalar.emplace(it, std::string(name), amount);
    }
  }
}

void ResourceList::Add(const ResourceList& other) {
  milli_cpu = SaturatingAdd(milli_cpu, other.milli_cpu);
  memory = SaturatingAdd(memory, other.memory);
  ephemeral_storage = SaturatingAdd(ephemeral_storage, other.ephemeral_storage);
  pods = SaturatingAdd(pods, other.pods);
  MergeScalars(scalar, other.scalar, SaturatingAdd);
}

void ResourceList::Subtract(const ResourceList& other) {
  milli_cpu = SaturatingSub(milli_cpu, other.milli_cpu);
  memory = SaturatingSub(memory, other.memory);
  ephemeral_storage = SaturatingSub(ephemeral_storage, other.ephemeral_storage);
  pods = SaturatingSub(pods, other.pods);
  MergeScalars(scalar, other.scalar, SaturatingSub);
}

void ResourceList::MaxWith(const ResourceList& other) {
  milli_cpu = std::max(milli_cpu, other.milli_cpu);
  memory = std::max(memory, other.memory);
  ephemeral_storage = std::max(ephemeral_storage, other.ephemeral_storage);
  pods = std::max(pods, other.pods);
  MergeScalars(scalar, other.scalar, [](int64_t a, int64_t b) { return std::max(a, b); });
}

bool ResourceList::IsZero() const {
  if (milli_cpu != 0 || memory != 0 || ephemeral_storage != 0 || pods != 0) {
    return false;
  }
  return std::all_of(scalar.begin(), scalar.end(), [](const auto& e) { return e.second == 0; });
}

std::string ObjectMeta::Key() const {
  if (namespace_.empty()) {
    return name;
  }
  std::string key;
  key.reserve(namespace_.size() + 1 + name.size());
  key += namespace_;
  key += '/';
  key += name;
  return key;
}

std::string_view TaintEffectName(TaintEffect effect) {
  switch (effect) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
    case TaintEffect::kAll:
      break;
  }
  return "";
}

std::string Taint::ToString() const {
  std::string out = key;
  if (!value.empty()) {
    out += '=';
    out += value;
  }
  out += ':';
  out += TaintEffectName(effect);
  return out;
}

bool Toleration::Tolerates(const Taint& taint) const {
  if (effect != TaintEffect::kAll && effect != taint.effect) {
    return false;
  }
  if (key.empty()) {
    // The apiserver only admits an empty key together with Exists ("tolerate everything").
    return op == TolerationOperator::kExists;
  }
  if (key != taint.key) {
    return false;
  }
  return op == TolerationOperator::kExists || value == taint.value;
}

bool TolerationsTolerate(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(),
                     [&](const Toleration& t) { return t.Tolerates(taint); });
}

}  // namespace berth::api
