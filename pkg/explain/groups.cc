#include "pkg/explain/groups.h"

#include <algorithm>
#include <tuple>

namespace berth::explain {

void GroupBuilder::Reset() {
  groups_.clear();
  last_ = 0;
  run_group_ = kNoGroup;
  nodes_ = 0;
  untracked_nodes_ = 0;
  untracked_ = false;
}

bool GroupBuilder::Matches(const Group& g, const framework::Status& status) const {
  // Interned names are equal exactly when their addresses are; groups made by AddMany have none.
  if (g.plugin_id != &status.plugin()) {
    if (g.plugin_id != nullptr || g.plugin != status.plugin()) return false;
  }
  if (g.code != status.code()) return false;
  if (g.fixed != nullptr && status.fixed_reasons() == g.fixed) return true;
  return status.reasons() == g.Reasons();
}

void GroupBuilder::Add(std::string_view node, const framework::Status& status) {
  run_group_ = kNoGroup;
  nodes_++;
  auto add_to = [&](Group& g) {
    g.nodes++;
    if (g.num_examples < g.examples.size()) g.examples[g.num_examples++] = node;
  };
  if (last_ < groups_.size() && Matches(groups_[last_], status)) {
    add_to(groups_[last_]);
    return;
  }
  for (size_t i = 0; i < groups_.size(); i++) {
    if (i != last_ && Matches(groups_[i], status)) {
      last_ = i;
      add_to(groups_[i]);
      return;
    }
  }
  if (groups_.size() >= kMaxTracked) {
    untracked_nodes_++;
    untracked_ = true;
    return;
  }
  Group& g = groups_.emplace_back();
  g.plugin_id = &status.plugin();
  g.code = status.code();
  g.fixed = status.fixed_reasons();
  if (g.fixed == nullptr) g.reasons = status.reasons();
  last_ = groups_.size() - 1;
  add_to(g);
}

size_t GroupBuilder::AddRun(const std::string& plugin, framework::Code code,
                            const framework::FixedReasons& reasons, int count) {
  run_group_ = kNoGroup;
  if (count <= 0) return 0;
  nodes_ += count;
  auto matches = [&](const Group& g) {
    return g.plugin_id == &plugin && g.code == code && g.fixed == &reasons;
  };
  // Runs of one verdict split by other verdicts mostly come back to the group they left.
  if (last_ < groups_.size() && matches(groups_[last_])) {
    run_group_ = last_;
  } else {
    for (size_t i = 0; i < groups_.size(); i++) {
      if (matches(groups_[i])) {
        run_group_ = i;
        break;
      }
    }
  }
  if (run_group_ == kNoGroup) {
    if (groups_.size() >= kMaxTracked) {
      untracked_nodes_ += count;
      untracked_ = true;
      return 0;
    }
    Group& g = groups_.emplace_back();
    g.plugin_id = &plugin;
    g.code = code;
    g.fixed = &reasons;
    run_group_ = groups_.size() - 1;
  }
  last_ = run_group_;
  Group& g = groups_[run_group_];
  g.nodes += count;
  return std::min(static_cast<size_t>(count), g.examples.size() - g.num_examples);
}

void GroupBuilder::AddExample(std::string_view node) {
  if (run_group_ == kNoGroup) return;
  Group& g = groups_[run_group_];
  if (g.num_examples < g.examples.size()) g.examples[g.num_examples++] = node;
}

void GroupBuilder::AddMany(int count, std::string_view plugin, const framework::Status& status,
                           const std::vector<std::string_view>& examples) {
  run_group_ = kNoGroup;
  if (count <= 0) return;
  nodes_ += count;
  if (groups_.size() >= kMaxTracked) {
    untracked_nodes_ += count;
    untracked_ = true;
    return;
  }
  Group& g = groups_.emplace_back();
  g.plugin = std::string(plugin);
  g.code = status.code();
  g.reasons = status.reasons();
  g.nodes = count;
  for (std::string_view name : examples) {
    if (g.num_examples == g.examples.size()) break;
    g.examples[g.num_examples++] = name;
  }
}

Verdicts GroupBuilder::Take() const {
  Verdicts out;
  out.groups_.reserve(groups_.size());
  for (const Group& g : groups_) {
    Verdicts::Group& v = out.groups_.emplace_back();
    v.plugin_id = g.plugin_id;
    v.plugin = g.plugin;
    v.code = g.code;
    v.fixed = g.fixed;
    v.reasons = g.reasons;
    v.nodes = g.nodes;
    for (size_t i = 0; i < g.num_examples; i++) v.examples[i] = std::string(g.examples[i]);
    v.num_examples = g.num_examples;
  }
  out.untracked_nodes_ = untracked_nodes_;
  out.untracked_ = untracked_;
  return out;
}

void Verdicts::Build(Attempt* out) const {
  std::vector<const Group*> order;
  order.reserve(groups_.size());
  for (const auto& g : groups_) order.push_back(&g);
  std::sort(order.begin(), order.end(), [](const Group* a, const Group* b) {
    return std::tie(b->nodes, a->Plugin(), a->Reasons()) <
           std::tie(a->nodes, b->Plugin(), b->Reasons());
  });
  out->groups.clear();
  out->other_groups = 0;
  out->other_nodes = untracked_nodes_;
  for (const Group* g : order) {
    if (out->groups.size() == kMaxGroups) {
      out->other_groups++;
      out->other_nodes += g->nodes;
      continue;
    }
    ReasonGroup& r = out->groups.emplace_back();
    r.plugin = Bounded(g->Plugin());
    r.code = framework::CodeName(g->code);
    r.reasons.reserve(g->Reasons().size());
    for (const auto& reason : g->Reasons()) r.reasons.push_back(Bounded(reason));
    r.nodes = g->nodes;
    r.examples.assign(g->examples.begin(),
                      g->examples.begin() + static_cast<std::ptrdiff_t>(g->num_examples));
  }
  // Verdicts beyond kMaxTracked were not told apart: count them as at least one more group.
  if (untracked_) out->other_groups++;
}

}  // namespace berth::explain
