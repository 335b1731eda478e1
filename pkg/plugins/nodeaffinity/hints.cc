#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pkg/plugins/helper/describe.h"
#include "pkg/plugins/nodeaffinity/nodeaffinity.h"

// NodeAffinity's hints (framework::HintPlugin), in a file of their own so that the Filter they
// explain compiles as it did without them.

namespace berth::plugins::nodeaffinity {

std::vector<framework::PodChange> NodeAffinity::SuggestChanges(
    const framework::CycleState&, const api::Pod& pod,
    std::span<const framework::NodeInfo* const> rejected, std::span<const framework::Status* const>,
    const framework::Status*) const {
  // The nodes the pod's own selection rejects (not addedAffinity).
  std::vector<const api::Node*> nodes;
  for (const framework::NodeInfo* info : rejected) {
    const api::Node* node = info->node();
    if (node != nullptr &&
        (!added_.required || added_.required->Matches(node->meta.labels, node->Name())))
      nodes.push_back(node);
  }
  if (nodes.empty()) return {};
  struct Candidate {
    std::string what;
    std::function<void(api::Pod&)> apply;
    // Rejected nodes it excludes, with an example's label.
    int excludes = 0;
    std::vector<std::pair<std::string, std::string>> examples;
  };
  constexpr size_t kExamples = 3;
  auto label_of = [](const api::Node& node, const std::string& key) {
    const std::string* value = node.meta.labels.Find(key);
    return value ? key + "=" + *value : "no " + key + " label";
  };
  std::vector<Candidate> candidates;
  for (const auto& [key, value] : pod.spec.node_selector) {
    Candidate c;
    c.what.append("remove nodeSelector ").append(key).append("=").append(value);
    c.apply = [key = key](api::Pod& p) {
      std::vector<api::StringMap::Entry> kept;
      for (const auto& entry : p.spec.node_selector) {
        if (entry.first != key) kept.push_back(entry);
      }
      p.spec.node_selector = api::StringMap(std::move(kept));
    };
    for (const api::Node* node : nodes) {
      const std::string* have = node->meta.labels.Find(key);
      if (have != nullptr && *have == value) continue;
      c.excludes++;
      if (c.examples.size() < kExamples)
        c.examples.emplace_back(node->Name(), label_of(*node, key));
    }
    candidates.push_back(std::move(c));
  }
  const api::NodeSelector* required = nullptr;
  if (pod.spec.affinity && pod.spec.affinity->node_affinity &&
      pod.spec.affinity->node_affinity->required) {
    required = &*pod.spec.affinity->node_affinity->required;
  }
  if (required != nullptr) {
    for (size_t t = 0; t < required->terms.size(); t++) {
      const api::NodeSelectorTerm& term = required->terms[t];
      const size_t size = term.match_expressions.size() + term.match_fields.size();
      for (size_t r = 0; r < size; r++) {
        const bool field = r >= term.match_expressions.size();
        const api::Requirement& req = field ? term.match_fields[r - term.match_expressions.size()]
                                            : term.match_expressions[r];
        Candidate c;
        const std::string described =
            field ? "field " + helper::DescribeRequirement(req) : helper::DescribeRequirement(req);
        // A term left without requirements matches nothing: the last one goes with its term,
        // and the last term with the whole required affinity.
        if (size == 1 && required->terms.size() == 1) {
          c.what = "remove required node affinity (" + described + ")";
          c.apply = [](api::Pod& p) { p.spec.affinity->node_affinity->required.reset(); };
        } else if (size == 1) {
          continue;
        } else {
          c.what = "remove " + described + " from required node affinity" +
                   (required->terms.size() > 1 ? " term " + std::to_string(t + 1) : "");
          c.apply = [t, r, field, first_field = term.match_expressions.size()](api::Pod& p) {
            api::NodeSelectorTerm& changed = p.spec.affinity->node_affinity->required->terms[t];
            if (field) {
              changed.match_fields.erase(changed.match_fields.begin() +
                                         static_cast<std::ptrdiff_t>(r - first_field));
            } else {
              changed.match_expressions.erase(changed.match_expressions.begin() +
                                              static_cast<std::ptrdiff_t>(r));
            }
          };
        }
        for (const api::Node* node : nodes) {
          const bool matches =
              field ? req.MatchesValue(node->Name()) : req.Matches(node->meta.labels);
          if (matches) continue;
          c.excludes++;
          if (c.examples.size() < kExamples) {
            c.examples.emplace_back(node->Name(),
                                    field ? "name " + node->Name() : label_of(*node, req.key));
          }
        }
        candidates.push_back(std::move(c));
      }
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.excludes > b.excludes; });
  constexpr size_t kSuggested = 2;
  std::vector<framework::PodChange> out;
  for (auto& c : candidates) {
    if (out.size() == kSuggested || c.excludes == 0) break;
    framework::PodChange change;
    change.description = std::move(c.what);
    change.apply = std::move(c.apply);
    change.details.emplace_back("excludes", std::to_string(c.excludes) + " of the " +
                                                std::to_string(nodes.size()) +
                                                " nodes it rejected");
    for (auto& example : c.examples) change.details.push_back(std::move(example));
    out.push_back(std::move(change));
  }
  return out;
}

}  // namespace berth::plugins::nodeaffinity
