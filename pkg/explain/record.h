#ifndef BERTH_PKG_EXPLAIN_RECORD_H_
#define BERTH_PKG_EXPLAIN_RECORD_H_

// What one scheduling attempt of a pod decided and why, kept so that a person can later ask "why
// is my pod Pending, and what would make it fit?" (/debug/pods, berth-scheduler explain).
//
// An Attempt is bounded whatever the cluster's size: nodes with the same verdict are one
// ReasonGroup (a count and at most kExamplesPerGroup names), at most kMaxGroups groups are kept
// (the rest are counted in other_groups/other_nodes), every text is cut at kMaxTextBytes, and
// only the chosen node and kAlternatives others keep their scores. ApproxBytes() is what the
// Store (pkg/explain/store.h) charges against its cap.
//
// Immutable once built and shared as AttemptPtr: any thread may read one without locks.

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/types.h"

namespace berth::explain {

inline constexpr size_t kMaxGroups = 8;
inline constexpr size_t kExamplesPerGroup = 3;
inline constexpr size_t kAlternatives = 3;
// Messages and reasons longer than this are cut (with "..."): a plugin may put anything in them.
inline constexpr size_t kMaxTextBytes = 512;
// Copies of a pod that explaining its group places for the members the group lacks, at most. A
// PodGroup's minMember is any int32 its author writes; each copy is a dry run over every node and
// a pod kept until the answer is made. 256 covers the gangs seen in practice (a copy stands in
// only for a member no one has created yet); beyond it, the answer says how many were tried.
inline constexpr int kMaxStandIns = 256;

// "text", or its first kMaxTextBytes bytes (on a UTF-8 boundary) followed by "...".
std::string Bounded(std::string_view text);

// Nodes that got the same verdict in one attempt.
struct ReasonGroup {
  // The plugin that rejected them; for nodes PreFilter ruled out, the plugins that narrowed the
  // node set, as upstream's message names them.
  std::string plugin;
  // framework::CodeName of the verdict: "Unschedulable", "UnschedulableAndUnresolvable",
  // "Pending", "Error".
  std::string code;
  std::vector<std::string> reasons;
  int nodes = 0;
  // At most kExamplesPerGroup node names; none when the verdict covered nodes never filtered.
  std::vector<std::string> examples;
};

struct PluginScore {
  // A view of the plugin's interned name (framework::PluginName), which lives for the process.
  std::string_view plugin;
  int64_t weight = 1;
  // The plugin's normalised score (0..100) times its weight.
  int64_t weighted = 0;
  int64_t normalised() const { return weight != 0 ? weighted / weight : 0; }
};

struct NodeScores {
  std::string node;
  int64_t total = 0;
  std::vector<PluginScore> plugins;
};

enum class Outcome {
  // Filter (or PreFilter) left no node; PostFilter may have nominated one.
  kUnschedulable,
  // A plugin or the cache failed; the pod is retried with backoff.
  kError,
  // A node was chosen and the pod bound there.
  kBound,
  // A node was chosen but Reserve, Permit or the binding cycle turned the pod away.
  kFailedAfterSelection,
};
std::string_view OutcomeName(Outcome outcome);

struct Attempt {
  std::string pod;  // namespace/name
  std::string uid;
  std::string profile;
  std::chrono::system_clock::time_point time;
  // The pod's attempt count when this one ran (1 for its first).
  int attempt = 0;
  Outcome outcome = Outcome::kUnschedulable;
  // The FailedScheduling message or error; empty for kBound.
  std::string message;

  // Nodes in the snapshot, nodes Filter ran on, and nodes that passed it.
  int num_nodes = 0;
  int evaluated = 0;
  int feasible = 0;
  // Empty when PreFilter let every node through; otherwise its rejection or which nodes it kept.
  std::string pre_filter;
  // Largest first.
  std::vector<ReasonGroup> groups;
  int other_groups = 0;
  int other_nodes = 0;
  std::string post_filter;
  std::string nominated_node;

  // The chosen node (kBound, kFailedAfterSelection).
  std::string node;
  // The chosen node's scores first, then up to kAlternatives others, best first. Empty when
  // scoring did not run (a single feasible node, or no Score plugin).
  std::vector<NodeScores> scores;

  // The pod as scheduled; not rendered, used to explain it again. Shared with the informer's
  // store, so it costs the record nothing while the pod exists.
  api::PodPtr pod_object;

  // The memory this attempt holds, as charged against the Store's cap.
  size_t ApproxBytes() const;
};
using AttemptPtr = std::shared_ptr<const Attempt>;

// One suggested change to the pod and how many nodes it was checked to open.
struct Hint {
  std::string plugin;
  std::string change;
  // Nodes that pass PreFilter and Filter once the change is applied; for a group's hint, the
  // nodes its pods were placed on.
  int nodes = 0;
  // What blocks the pod where it came closest, ("node-a", "cpu 300m short") or a domain.
  std::vector<std::pair<std::string, std::string>> details;
  // For a group's hint (a gang's): how many of its pods fit together with the change, counting
  // those already placed; 0 otherwise.
  int group_pods = 0;

  // "reduce cpu request by 300m (fits 3 nodes)"; for a group, "... (3 pods fit together, on 2
  // nodes)".
  std::string Text() const;
};

// The answer to "why": an attempt (recorded, or run just now by a dry run) and the hints checked
// against the cluster as it is now.
struct Explanation {
  AttemptPtr attempt;
  // The attempt was a dry run (simulate), not one the scheduler made.
  bool dry_run = false;
  std::vector<Hint> hints;
  // When the hints were checked, and on how many nodes; unset when none were computed.
  std::chrono::system_clock::time_point hints_time;
  int hints_nodes = 0;
  bool hints_computed = false;
  // Nodes the pod passes Filter on now (the dry run the hints start from); -1 when none ran.
  int feasible_now = -1;
  // For a pod that binds with its group or not at all: the group (`pod group "ns/name"`), how
  // many of its pods must be placed at once, and how many fit together now (its placed ones and
  // those of its pending pods that a dry run places one after the other).
  std::string group;
  int group_needs = 0;
  int group_fit_now = 0;
  // Copies of the pod the dry run tried for the members its group lacks (it lacks pods no one has
  // created yet). Bounded however many it lacks: see the notes for how the rest were judged.
  int group_stand_ins = 0;
  // The dry runs reached their time budget before every check was made: the hints and notes
  // cover only the checks that ran, and a note says so.
  bool cut_short = false;
  // What no change to the pod can fix, said plainly (whose anti-affinity keeps it out, how far
  // its group is from fitting).
  std::vector<std::string> notes;
};

nlohmann::json ToJson(const Attempt& attempt);
nlohmann::json ToJson(const Explanation& explanation);
// The human form: a summary, the verdict groups as a table, the scores of the chosen node beside
// the runners-up, and the hints.
std::string ToText(const Explanation& explanation);

// The one line of /debug/pods?pending=true: time, pod, reason.
std::string SummaryLine(const Attempt& attempt);

}  // namespace berth::explain

#endif  // BERTH_PKG_EXPLAIN_RECORD_H_
