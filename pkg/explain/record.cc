#include "pkg/explain/record.h"

#include <algorithm>
#include <string>

#include "pkg/util/strings.h"
#include "pkg/util/time.h"

namespace berth::explain {
namespace {

// What an allocation of `n` bytes costs glibc's malloc: a size word, rounded up to 16, at least 32.
size_t Chunk(size_t n) { return n == 0 ? 0 : std::max<size_t>(32, (n + 8 + 15) & ~size_t{15}); }

// Heap bytes a string holds beyond the object itself (libstdc++ keeps 15 chars inline).
size_t HeapBytes(const std::string& s) { return s.capacity() > 15 ? Chunk(s.capacity() + 1) : 0; }

size_t HeapBytes(const std::vector<std::string>& v) {
  size_t bytes = Chunk(v.capacity() * sizeof(std::string));
  for (const auto& s : v) bytes += HeapBytes(s);
  return bytes;
}

std::string VerdictLabel(const std::string& code) {
  if (code == "UnschedulableAndUnresolvable") return "unresolvable";
  if (code == "Unschedulable") return "unschedulable";
  if (code == "Pending") return "pending";
  if (code == "Error") return "error";
  return code;
}

// Rows of cells, each column as wide as its widest cell, two spaces apart, with `indent`.
std::string Table(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); i++) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); i++) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string Plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::string Bounded(std::string_view text) {
  if (text.size() <= kMaxTextBytes) return std::string(text);
  size_t cut = kMaxTextBytes;
  // Back up over UTF-8 continuation bytes so a character is never split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) cut--;
  return std::string(text.substr(0, cut)) + "...";
}

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kUnschedulable:
      return "Unschedulable";
    case Outcome::kError:
      return "Error";
    case Outcome::kBound:
      return "Bound";
    case Outcome::kFailedAfterSelection:
      return "FailedAfterSelection";
  }
  return "Unknown";
}

size_t Attempt::ApproxBytes() const {
  // With the control block make_shared puts beside it.
  size_t bytes = Chunk(sizeof(Attempt) + 16) + HeapBytes(pod) + HeapBytes(uid) +
                 HeapBytes(profile) + HeapBytes(message) + HeapBytes(pre_filter) +
                 HeapBytes(post_filter) + HeapBytes(nominated_node) + HeapBytes(node);
  bytes += Chunk(groups.capacity() * sizeof(ReasonGroup));
  for (const auto& g : groups) {
    bytes += HeapBytes(g.plugin) + HeapBytes(g.code) + HeapBytes(g.reasons) + HeapBytes(g.examples);
  }
  bytes += Chunk(scores.capacity() * sizeof(NodeScores));
  for (const auto& s : scores) {
    bytes += HeapBytes(s.node) + Chunk(s.plugins.capacity() * sizeof(PluginScore));
  }
  return bytes;
}

std::string Hint::Text() const {
  if (group_pods > 0) {
    return change + " (" + Plural(group_pods, "pod", "pods") + " fit together, on " +
           Plural(nodes, "node", "nodes") + ")";
  }
  return change + " (fits " + Plural(nodes, "node", "nodes") + ")";
}

nlohmann::json ToJson(const Attempt& a) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : a.groups) {
    groups.push_back({{"plugin", g.plugin},
                      {"code", g.code},
                      {"reasons", g.reasons},
                      {"nodes", g.nodes},
                      {"examples", g.examples}});
  }
  nlohmann::json scores = nlohmann::json::array();
  for (size_t i = 0; i < a.scores.size(); i++) {
    const auto& s = a.scores[i];
    nlohmann::json plugins = nlohmann::json::array();
    for (const auto& p : s.plugins) {
      plugins.push_back({{"plugin", std::string(p.plugin)},
                         {"score", p.normalised()},
                         {"weight", p.weight},
                         {"weighted", p.weighted}});
    }
    scores.push_back(
        {{"node", s.node}, {"chosen", i == 0}, {"total", s.total}, {"plugins", plugins}});
  }
  return {{"pod", a.pod},
          {"uid", a.uid},
          {"profile", a.profile},
          {"time", util::FormatRfc3339Milli(a.time)},
          {"attempt", a.attempt},
          {"outcome", std::string(OutcomeName(a.outcome))},
          {"message", a.message},
          {"nodes", {{"total", a.num_nodes}, {"evaluated", a.evaluated}, {"feasible", a.feasible}}},
          {"preFilter", a.pre_filter},
          {"groups", groups},
          {"otherGroups", a.other_groups},
          {"otherNodes", a.other_nodes},
          {"postFilter", a.post_filter},
          {"nominatedNode", a.nominated_node},
          {"node", a.node},
          {"scores", scores}};
}

nlohmann::json ToJson(const Explanation& e) {
  nlohmann::json out = {{"dryRun", e.dry_run}};
  out["attempt"] = e.attempt ? ToJson(*e.attempt) : nlohmann::json(nullptr);
  nlohmann::json hints = nlohmann::json::array();
  for (const auto& h : e.hints) {
    nlohmann::json details = nlohmann::json::array();
    for (const auto& [name, detail] : h.details) {
      details.push_back({{"name", name}, {"detail", detail}});
    }
    nlohmann::json hint = {{"plugin", h.plugin},
                           {"change", h.change},
                           {"nodes", h.nodes},
                           {"text", h.Text()},
                           {"details", details}};
    if (h.group_pods > 0) hint["groupPods"] = h.group_pods;
    hints.push_back(std::move(hint));
  }
  out["hints"] = hints;
  out["notes"] = e.notes;
  out["cutShort"] = e.cut_short;
  if (e.hints_computed) {
    out["hintsCheckedAt"] = util::FormatRfc3339Milli(e.hints_time);
    out["hintsCheckedNodes"] = e.hints_nodes;
    out["feasibleNow"] = e.feasible_now;
  }
  if (!e.group.empty()) {
    out["group"] = {{"name", e.group},
                    {"needs", e.group_needs},
                    {"fitTogetherNow", e.group_fit_now},
                    {"standIns", e.group_stand_ins}};
  }
  return out;
}

std::string SummaryLine(const Attempt& a) {
  std::string reason = a.message.empty() ? std::string(OutcomeName(a.outcome)) : a.message;
  return util::FormatRfc3339Milli(a.time) + "  " + a.pod + "  " + reason;
}

std::string ToText(const Explanation& e) {
  if (!e.attempt) return "no attempt recorded\n";
  const Attempt& a = *e.attempt;
  std::string out = "Pod " + a.pod + " (profile " + a.profile + ")\n";
  std::string outcome = std::string(OutcomeName(a.outcome));
  if (a.outcome == Outcome::kBound) {
    outcome = (e.dry_run ? "would bind to " : "bound to ") + a.node;
  } else if (a.outcome == Outcome::kFailedAfterSelection) {
    outcome = "chose " + a.node + ", then failed";
  } else if (a.outcome == Outcome::kUnschedulable) {
    outcome = e.dry_run ? "would not fit" : "Unschedulable";
  }
  if (e.dry_run) {
    out += "Dry run at " + util::FormatRfc3339Milli(a.time) +
           " (nothing assumed, reserved or bound): " + outcome + "\n";
  } else {
    out += "Last attempt: " + util::FormatRfc3339Milli(a.time) + ", attempt " +
           std::to_string(a.attempt) + ": " + outcome + "\n";
  }
  if (!a.message.empty()) out += "  " + a.message + "\n";
  out += "PreFilter: " +
         (a.pre_filter.empty() ? "passed, " + Plural(a.num_nodes, "node", "nodes") + " kept"
                               : a.pre_filter) +
         "\n";
  out += "Filter: " + std::to_string(a.evaluated) + " of " + Plural(a.num_nodes, "node", "nodes") +
         " evaluated, " + std::to_string(a.feasible) + " feasible\n";
  if (!a.groups.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"NODES", "PLUGIN", "VERDICT", "REASONS", "EXAMPLES"}};
    for (const auto& g : a.groups) {
      rows.push_back({std::to_string(g.nodes), g.plugin.empty() ? "-" : g.plugin,
                      VerdictLabel(g.code), util::Join(g.reasons, "; "),
                      util::Join(g.examples, ", ")});
    }
    if (a.other_groups > 0) {
      rows.push_back({std::to_string(a.other_nodes),
                      "(" + std::to_string(a.other_groups) + " more)", "", "other reasons", ""});
    }
    out += Table(rows, "  ");
  }
  if (!a.post_filter.empty()) out += "PostFilter: " + a.post_filter + "\n";
  if (!a.nominated_node.empty()) out += "Nominated node: " + a.nominated_node + "\n";
  if (!a.scores.empty()) {
    out += "Scores (normalised score x weight = weighted):\n";
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header = {"PLUGIN"};
    for (size_t i = 0; i < a.scores.size(); i++) {
      header.push_back(a.scores[i].node + (i == 0 ? " (chosen)" : ""));
    }
    rows.push_back(header);
    // Plugins in the chosen node's order; every scored node has the same ones.
    for (size_t p = 0; p < a.scores[0].plugins.size(); p++) {
      std::vector<std::string> row = {std::string(a.scores[0].plugins[p].plugin)};
      for (const auto& s : a.scores) {
        if (p >= s.plugins.size()) {
          row.emplace_back("-");
          continue;
        }
        const PluginScore& ps = s.plugins[p];
        row.push_back(std::to_string(ps.normalised()) + "x" + std::to_string(ps.weight) + "=" +
                      std::to_string(ps.weighted));
      }
      rows.push_back(row);
    }
    std::vector<std::string> total = {"TOTAL"};
    for (const auto& s : a.scores) total.push_back(std::to_string(s.total));
    rows.push_back(total);
    out += Table(rows, "  ");
  }
  const bool in_group = !e.group.empty();
  const bool fits_now = in_group ? e.group_fit_now >= e.group_needs : e.feasible_now > 0;
  if (e.hints_computed && in_group) {
    out += "Now (" + util::FormatRfc3339Milli(e.hints_time) +
           "): " + std::to_string(e.group_fit_now) + " of the " + std::to_string(e.group_needs) +
           " pods " + e.group + " needs fit together" +
           (fits_now ? "; its next attempt should place them.\n" : ".\n");
  }
  if (e.hints_computed && fits_now) {
    // A dry run that places the pod says so above; a recorded failure may be out of date.
    if (!e.dry_run && !in_group) {
      out += "Now (" + util::FormatRfc3339Milli(e.hints_time) + "): it fits " +
             Plural(e.feasible_now, "node", "nodes") + "; its next attempt should place it.\n";
    }
  } else if (e.hints_computed) {
    out += "What would make it fit (checked " + util::FormatRfc3339Milli(e.hints_time) +
           " against " + Plural(e.hints_nodes, "node", "nodes") + "):\n";
    if (e.hints.empty() && e.cut_short) {
      // Not every change was checked: that none was found says nothing.
      out += "  none found before the dry runs were cut short\n";
    } else if (e.hints.empty()) {
      out += in_group ? "  no change to the group's pods found that fits them together\n"
                      : "  no change to the pod found that opens a node\n";
    }
    for (const auto& h : e.hints) {
      out += "  - " + h.Text() + "\n";
      for (const auto& [name, detail] : h.details) {
        out.append("      ").append(name).append(": ").append(detail).append("\n");
      }
    }
  }
  for (const auto& note : e.notes) out += "Note: " + note + "\n";
  return out;
}

}  // namespace berth::explain
