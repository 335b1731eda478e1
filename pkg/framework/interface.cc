#include "pkg/framework/interface.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace berth::framework {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kSuccess:
      return "Success";
    case Code::kError:
      return "Error";
    case Code::kUnschedulable:
      return "Unschedulable";
    case Code::kUnschedulableAndUnresolvable:
      return "UnschedulableAndUnresolvable";
    case Code::kWait:
      return "Wait";
    case Code::kSkip:
      return "Skip";
    case Code::kPending:
      return "Pending";
  }
  return "Unknown";
}

PluginName::PluginName(std::string_view name) {
  static std::mutex mu;
  // A node-based set: interned strings never move, so the pointers handed out stay valid.
  static std::set<std::string, std::less<>> names;
  std::lock_guard lock(mu);
  auto it = names.find(name);
  if (it == names.end()) it = names.emplace(name).first;
  name_ = &*it;
}

const std::string& PluginName::Empty() {
  static const std::string empty;
  return empty;
}

void NodeToStatus::Set(std::string_view node, Status status) {
  entries_.push_back({node, std::move(status)});
}

const Status& NodeToStatus::Get(std::string_view node) const {
  std::call_once(index_once_, [this] {
    index_.reserve(entries_.size());
    for (size_t i = 0; i < entries_.size(); i++) index_.emplace(entries_[i].node, i);
  });
  auto it = index_.find(node);
  return it == index_.end() ? absent_ : entries_[it->second].status;
}

std::string CountNodeReasons(int num_all_nodes, const NodeToStatus& statuses) {
  std::map<std::string, int> reasons;
  // Runs of equal reason lists (every node short of cpu) are counted once per run: with a pod
  // that fits nowhere there is one status per node of the cluster.
  const std::vector<std::string>* run = nullptr;
  int run_length = 0;
  auto flush = [&] {
    if (run != nullptr) {
      for (const auto& reason : *run) reasons[reason] += run_length;
    }
  };
  for (const auto& entry : statuses.entries()) {
    const auto& entry_reasons = entry.status.reasons();
    if (run != nullptr && *run == entry_reasons) {
      run_length++;
      continue;
    }
    flush();
    run = &entry_reasons;
    run_length = 1;
  }
  flush();
  const int absent = num_all_nodes - static_cast<int>(statuses.size());
  if (absent > 0) {
    for (const auto& reason : statuses.absent_nodes_status().reasons()) reasons[reason] += absent;
  }
  std::vector<std::string> parts;
  parts.reserve(reasons.size());
  for (const auto& [reason, count] : reasons) parts.push_back(std::to_string(count) + " " + reason);
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out += ", ";
    out += part;
  }
  return out;
}

std::string Status::Message() const {
  std::string out;
  for (const auto& reason : reasons()) {
    if (!out.empty()) out += ", ";
    out += reason;
  }
  return out;
}

template <typename Change>
void CycleState::Publish(Change change) {
  std::lock_guard lock(write_mu_);
  const Entries* current = current_.load(std::memory_order_relaxed);
  Entries& next = versions_.emplace_back();
  if (current) {
    next.reserve(current->size() + 1);
    next.assign(current->begin(), current->end());
  }
  change(next);
  current_.store(&next, std::memory_order_release);
}

CycleState::Entry CycleState::Store(std::string_view key, const std::string* id,
                                    std::shared_ptr<StateData> data) {
  const std::string_view stored_key =
      id != nullptr ? std::string_view(*id) : std::string_view(keys_.emplace_back(key));
  return {stored_key, id, &data_.emplace_back(std::move(data))};
}

void CycleState::Put(const std::string& key, const std::string* id,
                     std::shared_ptr<StateData> data) {
  Publish([&](Entries& entries) {
    for (auto& entry : entries) {
      if (entry.key != key) continue;
      entry.data = &data_.emplace_back(std::move(data));
      if (id != nullptr) entry.id = id;
      return;
    }
    entries.push_back(Store(key, id, std::move(data)));
  });
}

void CycleState::Write(const std::string& key, std::shared_ptr<StateData> data) {
  Put(key, nullptr, std::move(data));
}

void CycleState::Write(const StateKey& key, std::shared_ptr<StateData> data) {
  Put(key.str(), key.id(), std::move(data));
}

// Newest first: keys are unique, so the order does not change the result, and the per-node
// reads of Score are for PreScore's entries, written after every PreFilter entry.
template <typename Match>
const CycleState::Entry* CycleState::FindEntry(Match match) const {
  const Entries* entries = current_.load(std::memory_order_acquire);
  if (!entries) return nullptr;
  for (auto it = entries->rbegin(); it != entries->rend(); ++it) {
    if (match(*it)) return &*it;
  }
  return nullptr;
}

StateData* CycleState::Find(const std::string& key) const {
  const Entry* entry = FindEntry([&](const Entry& e) { return e.key == key; });
  return entry ? entry->data->get() : nullptr;
}

StateData* CycleState::Find(const StateKey& key) const {
  const std::string* id = key.id();
  // An entry written as text has no id, and only its text can tell.
  const Entry* entry =
      FindEntry([&](const Entry& e) { return e.id == id || (e.id == nullptr && e.key == *id); });
  return entry ? entry->data->get() : nullptr;
}

std::shared_ptr<StateData> CycleState::ReadData(const std::string& key) const {
  const Entry* entry = FindEntry([&](const Entry& e) { return e.key == key; });
  return entry ? *entry->data : nullptr;
}

void CycleState::Delete(const std::string& key) {
  Publish([&](Entries& entries) {
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [&](const Entry& entry) { return entry.key == key; }),
                  entries.end());
  });
}

std::unique_ptr<CycleState> CycleState::Clone() const {
  auto copy = std::make_unique<CycleState>();
  if (const Entries* entries = current_.load(std::memory_order_acquire)) {
    copy->Publish([&](Entries& out) {
      out.reserve(entries->size());
      for (const auto& entry : *entries) {
        const std::shared_ptr<StateData>& data = *entry.data;
        out.push_back(copy->Store(entry.key, entry.id, data ? data->Clone() : nullptr));
      }
    });
  }
  copy->skip_filter_plugins = skip_filter_plugins;
  copy->skip_score_plugins = skip_score_plugins;
  copy->filter_skipped = filter_skipped;
  copy->record_plugin_metrics = record_plugin_metrics;
  copy->dry_run = dry_run;
  copy->ignored_plugins = ignored_plugins;
  return copy;
}

EventResource::EventResource(std::string_view name) {
  // Names are few (one per watched resource) and live for the process.
  static std::mutex mu;
  static std::set<std::string, std::less<>> names;
  std::lock_guard lock(mu);
  auto it = names.find(name);
  if (it == names.end()) it = names.emplace(name).first;
  name_ = *it;
}

bool ClusterEvent::Matches(const ClusterEvent& other) const {
  if (!resource.IsWildcard() && resource != other.resource) return false;
  return (actions & other.actions) != 0;
}

void FilterPlugin::FilterNodes(const CycleState& state, const api::Pod& pod,
                               std::span<const NodeInfo* const> nodes, std::span<Status> statuses) {
  for (size_t i = 0; i < nodes.size(); i++) {
    Status s = Filter(state, pod, *nodes[i]);
    if (!s.IsSuccess()) statuses[i] = std::move(s);
  }
}

Status ScorePlugin::ScoreNodes(const CycleState& state, const api::Pod& pod,
                               std::span<const NodeInfo* const> nodes,
                               std::span<NodeScore> scores) {
  for (size_t i = 0; i < nodes.size(); i++) {
    Status s = Score(state, pod, *nodes[i], &scores[i].score);
    if (!s.IsSuccess()) return s;
  }
  return {};
}

Status ScorePlugin::ScoreAsRunOfOne(const CycleState& state, const api::Pod& pod,
                                    const NodeInfo& node, int64_t* score) {
  const std::array<const NodeInfo*, 1> nodes = {&node};
  NodeScore result;
  Status status = ScoreNodes(state, pod, nodes, std::span<NodeScore>(&result, 1));
  *score = result.score;
  return status;
}

}  // namespace berth::framework
