#include "pkg/plugins/podtopologyspread/node_index.h"

#include <algorithm>

#include "pkg/plugins/nodeaffinity/nodeaffinity.h"

namespace berth::plugins::podtopologyspread {

int32_t CountMatchingPods(const std::vector<framework::PodInfoPtr>& pods,
                          const std::string& namespace_, const api::LabelSelector& selector) {
  if (selector.Empty()) return 0;
  int32_t count = 0;
  for (const framework::PodInfoPtr& info : pods) {
    const api::Pod& pod = *info->pod;
    if (pod.IsTerminating() || pod.meta.namespace_ != namespace_) continue;
    if (selector.Matches(pod.meta.labels)) count++;
  }
  return count;
}

void NodeIndex::Sync(const std::vector<framework::NodeInfoPtr>& nodes) {
  clock_++;
  Evict();
  const size_t n = nodes.size();
  if (infos_.size() != n) {
    infos_.resize(n);
    tainted_.resize(n, 0);
    for (KeyEntry& entry : keys_) entry.column->node_values.resize(n, -1);
    for (auto& column : counts_) column->counts.resize(n, 0);
    for (auto& column : affinities_) column->matches.resize(n, 0);
  }
  for (size_t i = 0; i < n; i++) {
    if (infos_[i] == nodes[i]) continue;
    infos_[i] = nodes[i];
    Refresh(i);
  }
  CompactKeys();
}

void NodeIndex::Refresh(size_t i) {
  const framework::NodeInfo& info = *infos_[i];
  const api::Node* node = info.node();
  tainted_[i] = node != nullptr && !node->spec.taints.empty() ? 1 : 0;
  for (KeyEntry& entry : keys_) entry.column->node_values[i] = entry.column->InternNode(info);
  for (auto& column : counts_) {
    column->counts[i] = CountMatchingPods(info.pods(), column->namespace_, column->selector);
  }
  for (auto& column : affinities_) column->matches[i] = Matches(column->selection, node);
}

void NodeIndex::CompactKeys() {
  for (KeyEntry& entry : keys_) {
    if (!entry.column->Stale()) continue;
    auto fresh = std::make_shared<KeyColumn>(entry.column->key());
    fresh->Fill(infos_);
    entry.column = std::move(fresh);
  }
}

char NodeIndex::Matches(const api::Pod& selection, const api::Node* node) {
  return node != nullptr && nodeaffinity::RequiredNodeAffinityMatches(selection, *node) ? 1 : 0;
}

namespace {

// Drops the least recently used columns beyond `max`, as long as they were not used in the
// previous cycle (last_used == clock - 1) or since.
template <typename Columns, typename LastUsed>
void EvictStale(Columns& columns, LastUsed last_used, uint64_t clock, size_t max) {
  while (columns.size() > max) {
    auto oldest =
        std::min_element(columns.begin(), columns.end(),
                         [&](const auto& a, const auto& b) { return last_used(a) < last_used(b); });
    if (last_used(*oldest) + 1 >= clock) break;
    columns.erase(oldest);
  }
}

}  // namespace

void NodeIndex::Evict() {
  EvictStale(
      affinities_, [](const auto& c) { return c->last_used; }, clock_, kMaxColumns);
  EvictStale(
      keys_, [](const KeyEntry& e) { return e.last_used; }, clock_, kMaxColumns);
  EvictStale(
      counts_, [](const auto& c) { return c->last_used; }, clock_, kMaxColumns);
}

KeyColumnPtr NodeIndex::Key(const std::string& key) {
  for (KeyEntry& entry : keys_) {
    if (entry.column->key() == key) {
      entry.last_used = clock_;
      return entry.column;
    }
  }
  auto column = std::make_shared<KeyColumn>(key);
  column->Fill(infos_);
  keys_.push_back({column, clock_});
  return column;
}

const std::vector<int32_t>& NodeIndex::Counts(const std::string& namespace_,
                                              const api::LabelSelector& selector) {
  for (auto& column : counts_) {
    if (column->namespace_ == namespace_ && column->selector == selector) {
      column->last_used = clock_;
      return column->counts;
    }
  }
  auto column = std::make_unique<CountColumn>();
  column->namespace_ = namespace_;
  column->selector = selector;
  column->last_used = clock_;
  column->counts.resize(infos_.size());
  for (size_t i = 0; i < infos_.size(); i++) {
    column->counts[i] = CountMatchingPods(infos_[i]->pods(), namespace_, selector);
  }
  counts_.push_back(std::move(column));
  return counts_.back()->counts;
}

const std::vector<char>& NodeIndex::RequiredAffinity(const api::Pod& pod) {
  const api::NodeAffinity* affinity = pod.spec.affinity && pod.spec.affinity->node_affinity
                                          ? &*pod.spec.affinity->node_affinity
                                          : nullptr;
  auto same_selection = [&](const api::Pod& selection) {
    if (selection.spec.node_selector != pod.spec.node_selector) return false;
    const api::NodeAffinity* other =
        selection.spec.affinity ? &*selection.spec.affinity->node_affinity : nullptr;
    if ((affinity && affinity->required) != (other != nullptr)) return false;
    return other == nullptr || other->required == affinity->required;
  };
  for (auto& column : affinities_) {
    if (same_selection(column->selection)) {
      column->last_used = clock_;
      return column->matches;
    }
  }
  auto column = std::make_unique<AffinityColumn>();
  column->selection.spec.node_selector = pod.spec.node_selector;
  if (affinity && affinity->required) {
    column->selection.spec.affinity.emplace().node_affinity.emplace().required = affinity->required;
  }
  column->last_used = clock_;
  column->matches.resize(infos_.size());
  for (size_t i = 0; i < infos_.size(); i++) {
    column->matches[i] = Matches(column->selection, infos_[i]->node());
  }
  affinities_.push_back(std::move(column));
  return affinities_.back()->matches;
}

}  // namespace berth::plugins::podtopologyspread
