#ifndef BERTH_PKG_EXPLAIN_GROUPS_H_
#define BERTH_PKG_EXPLAIN_GROUPS_H_

// Folds per-node verdicts into groups of identical ones (plugin, code and reasons), counting the
// nodes of each and keeping the first few names, in one pass over the statuses Filter left.
//
// Cheap enough for every scheduling cycle: a verdict's plugin name is interned and most reason
// lists are shared (framework::FixedReasons), so a status usually matches a group by address,
// and such a group holds the two addresses rather than copies; runs of nodes with one verdict
// (every node short of cpu) are added at once. Names are kept as views until Take.
//
// Not thread-safe: one builder per scheduling thread, reused across cycles (Reset). What Take
// returns owns its data and may be built into a record on any thread.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/explain/record.h"
#include "pkg/framework/interface.h"

namespace berth::explain {

// One group of nodes with the same verdict. `Name` holds the example node names: views while the
// builder runs (into the snapshot), copies once taken.
template <typename Name>
struct VerdictGroup {
  // Interned, or null with `plugin` set (groups made by AddMany).
  const std::string* plugin_id = nullptr;
  std::string plugin;
  framework::Code code = framework::Code::kSuccess;
  // The shared reasons the group was made from, or null with `reasons` set: later statuses made
  // from them match without comparing text.
  const framework::FixedReasons* fixed = nullptr;
  std::vector<std::string> reasons;
  int nodes = 0;
  std::array<Name, kExamplesPerGroup> examples{};
  size_t num_examples = 0;

  const std::string& Plugin() const { return plugin_id != nullptr ? *plugin_id : plugin; }
  const std::vector<std::string>& Reasons() const {
    return fixed != nullptr ? fixed->reasons() : reasons;
  }
};

// One attempt's verdicts as GroupBuilder::Take hands them over: plugin names and shared reasons
// by address (both live for the process), other text and the example node names copied.
class Verdicts {
 public:
  // Writes the groups into `out`, largest first (then by plugin and reasons), at most kMaxGroups
  // of them; the rest are counted in other_groups/other_nodes.
  void Build(Attempt* out) const;
  bool empty() const { return groups_.empty() && !untracked_; }

 private:
  friend class GroupBuilder;
  using Group = VerdictGroup<std::string>;
  std::vector<Group> groups_;
  int untracked_nodes_ = 0;
  bool untracked_ = false;
};

class GroupBuilder {
 public:
  // Distinct verdicts tracked in one pass; nodes with further ones are counted as "other".
  static constexpr size_t kMaxTracked = 32;

  void Reset();
  // `node` must stay valid until Take (a view of the snapshot's node name).
  void Add(std::string_view node, const framework::Status& status);
  // A run of `count` nodes with one verdict made from shared reasons: `plugin` is the interned
  // name as Status::plugin() returns it. Returns how many of the run's nodes the group still
  // takes as examples, for AddExample: the caller looks names up only for those. Grouping a run
  // at a time keeps a pass over thousands of rejected nodes at a comparison per node; Add is for
  // verdicts with reasons of their own.
  size_t AddRun(const std::string& plugin, framework::Code code,
                const framework::FixedReasons& reasons, int count);
  // An example node of the last AddRun's group; must stay valid until Take.
  void AddExample(std::string_view node);
  // `count` nodes that share a verdict without a status each (nodes PreFilter ruled out);
  // `examples` (at most kExamplesPerGroup are kept) must stay valid until Take.
  void AddMany(int count, std::string_view plugin, const framework::Status& status,
               const std::vector<std::string_view>& examples = {});
  // Nodes added so far.
  int nodes() const { return nodes_; }

  // The groups so far, detached from the node names they were given as views.
  Verdicts Take() const;
  // Take().Build(out).
  void Build(Attempt* out) const { Take().Build(out); }

 private:
  using Group = VerdictGroup<std::string_view>;
  bool Matches(const Group& g, const framework::Status& status) const;

  std::vector<Group> groups_;
  size_t last_ = 0;
  // The index of the last AddRun's group; kNoGroup when it was not tracked.
  static constexpr size_t kNoGroup = kMaxTracked;
  size_t run_group_ = kNoGroup;
  int nodes_ = 0;
  int untracked_nodes_ = 0;
  bool untracked_ = false;
};

}  // namespace berth::explain

#endif  // BERTH_PKG_EXPLAIN_GROUPS_H_
