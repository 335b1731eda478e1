#include "pkg/plugins/helper/describe.h"

#include <algorithm>
#include <map>

namespace berth::plugins::helper {

std::string DescribeRequirement(const api::Requirement& r) {
  auto values = [&] {
    std::string out;
    for (const auto& v : r.values) out += (out.empty() ? "" : ", ") + v;
    return "(" + out + ")";
  };
  switch (r.op) {
    case api::SelectorOperator::kIn:
      return r.key + " In " + values();
    case api::SelectorOperator::kNotIn:
      return r.key + " NotIn " + values();
    case api::SelectorOperator::kExists:
      return r.key + " Exists";
    case api::SelectorOperator::kDoesNotExist:
      return r.key + " DoesNotExist";
    case api::SelectorOperator::kGt:
      return r.key + " Gt " + std::to_string(r.number);
    case api::SelectorOperator::kLt:
      return r.key + " Lt " + std::to_string(r.number);
  }
  return r.key;
}

std::string DescribeSelector(const api::LabelSelector& selector) {
  if (selector.requirements.empty()) return "everything";
  std::string out;
  for (const auto& r : selector.requirements) {
    if (!out.empty()) out += ", ";
    if (r.op == api::SelectorOperator::kIn && r.values.size() == 1) {
      out += r.key + "=" + r.values.front();
    } else {
      out += DescribeRequirement(r);
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> Domains(
    std::span<const framework::NodeInfo* const> nodes, const std::string& topology_key,
    size_t limit) {
  std::map<std::string, int> counts;
  int unlabelled = 0;
  for (const framework::NodeInfo* node : nodes) {
    const api::Node* n = node->node();
    if (n == nullptr) continue;
    if (const std::string* value = n->meta.labels.Find(topology_key)) {
      counts[topology_key + "=" + *value]++;
    } else {
      unlabelled++;
    }
  }
  std::vector<std::pair<std::string, int>> order(counts.begin(), counts.end());
  if (unlabelled > 0) order.emplace_back("no " + topology_key + " label", unlabelled);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < order.size() && i < limit; i++) {
    out.emplace_back(order[i].first,
                     std::to_string(order[i].second) + (order[i].second == 1 ? " node" : " nodes"));
  }
  return out;
}

}  // namespace berth::plugins::helper
