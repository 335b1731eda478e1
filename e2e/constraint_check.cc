#include "e2e/constraint_check.h"

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>

namespace berth::e2e {
namespace {

using Labels = std::map<std::string, std::string>;

Labels LabelsOf(const nlohmann::json& pod) {
  Labels out;
  const auto& meta = pod["metadata"];
  if (meta.contains("labels")) {
    for (const auto& [k, v] : meta["labels"].items()) out[k] = v.get<std::string>();
  }
  return out;
}

// A label selector as the API defines it: every matchLabels pair and every expression must hold;
// an empty selector selects everything.
bool Selects(const nlohmann::json& selector, const Labels& labels) {
  if (selector.contains("matchLabels")) {
    for (const auto& [k, v] : selector["matchLabels"].items()) {
      auto it = labels.find(k);
      if (it == labels.end() || it->second != v.get<std::string>()) return false;
    }
  }
  if (selector.contains("matchExpressions")) {
    for (const auto& e : selector["matchExpressions"]) {
      const std::string op = e.at("operator");
      auto it = labels.find(e.at("key").get<std::string>());
      std::set<std::string> values;
      if (e.contains("values")) {
        for (const auto& v : e["values"]) values.insert(v.get<std::string>());
      }
      bool in = it != labels.end() && values.count(it->second) > 0;
      if (op == "In" && !in) return false;
      if (op == "NotIn" && it != labels.end() && values.count(it->second) > 0) return false;
      if (op == "Exists" && it == labels.end()) return false;
      if (op == "DoesNotExist" && it != labels.end()) return false;
      if (op != "In" && op != "NotIn" && op != "Exists" && op != "DoesNotExist") {
        throw std::invalid_argument("matchExpressions operator " + op + " is not a label operator");
      }
    }
  }
  return true;
}

struct PlacedPod {
  const nlohmann::json* object;
  std::string name, ns, node;
  Labels labels;
};

// The namespaces an affinity term reaches: those it names, or its pod's own.
std::set<std::string> TermNamespaces(const nlohmann::json& term, const std::string& own) {
  if (term.contains("namespaceSelector")) {
    throw std::invalid_argument("affinity term namespaceSelector is outside this check");
  }
  std::set<std::string> out;
  if (term.contains("namespaces")) {
    for (const auto& n : term["namespaces"]) out.insert(n.get<std::string>());
  }
  if (out.empty()) out.insert(own);
  return out;
}

std::vector<nlohmann::json> RequiredTerms(const nlohmann::json& spec, const char* kind) {
  std::vector<nlohmann::json> out;
  if (!spec.contains("affinity") || !spec["affinity"].contains(kind)) return out;
  const auto& field = spec["affinity"][kind];
  if (!field.contains("requiredDuringSchedulingIgnoredDuringExecution")) return out;
  for (const auto& t : field["requiredDuringSchedulingIgnoredDuringExecution"]) out.push_back(t);
  return out;
}

class Checker {
 public:
  Checker(const std::vector<nlohmann::json>& pods, const NodeLabels& nodes) : nodes_(nodes) {
    for (const auto& p : pods) {
      const std::string node = p["spec"].value("nodeName", "");
      if (node.empty()) continue;
      bound_.push_back({&p, p["metadata"]["name"], p["metadata"]["namespace"], node, LabelsOf(p)});
    }
  }

  std::vector<std::string> Run() {
    for (const auto& pod : bound_) {
      const auto node = nodes_.find(pod.node);
      if (node == nodes_.end()) {
        Fail(pod, "is bound to " + pod.node + ", not one of the nodes it may select");
        continue;
      }
      CheckNodeSelector(pod, node->second);
      const auto& spec = (*pod.object)["spec"];
      for (const auto& term : RequiredTerms(spec, "podAffinity")) CheckAffinity(pod, term);
      for (const auto& term : RequiredTerms(spec, "podAntiAffinity")) CheckAntiAffinity(pod, term);
      if (spec.contains("topologySpreadConstraints")) {
        for (const auto& c : spec["topologySpreadConstraints"]) {
          if (c.value("whenUnsatisfiable", "") == "DoNotSchedule") CheckSpread(pod, c);
        }
      }
    }
    return violations_;
  }

 private:
  void Fail(const PlacedPod& pod, const std::string& what) {
    violations_.push_back(pod.ns + "/" + pod.name + " on " + pod.node + " " + what);
  }

  std::string Value(const std::string& node, const std::string& key) const {
    const auto& labels = nodes_.at(node);
    auto it = labels.find(key);
    return it == labels.end() ? "" : it->second;
  }

  bool HasKey(const std::string& node, const std::string& key) const {
    auto n = nodes_.find(node);
    return n != nodes_.end() && n->second.count(key) > 0;
  }

  void CheckNodeSelector(const PlacedPod& pod, const Labels& node_labels) {
    const auto& spec = (*pod.object)["spec"];
    if (!spec.contains("nodeSelector")) return;
    for (const auto& [k, v] : spec["nodeSelector"].items()) {
      auto it = node_labels.find(k);
      if (it == node_labels.end() || it->second != v.get<std::string>()) {
        Fail(pod, "breaks its nodeSelector " + k + "=" + v.get<std::string>());
      }
    }
  }

  // Bound pods other than `pod` in `namespaces` that `selector` selects.
  std::vector<const PlacedPod*> Selected(const PlacedPod& pod, const nlohmann::json& selector,
                                         const std::set<std::string>& namespaces) const {
    std::vector<const PlacedPod*> out;
    for (const auto& other : bound_) {
      if (&other == &pod || namespaces.count(other.ns) == 0) continue;
      if (Selects(selector, other.labels)) out.push_back(&other);
    }
    return out;
  }

  void CheckAffinity(const PlacedPod& pod, const nlohmann::json& term) {
    const std::string key = term.at("topologyKey");
    if (!HasKey(pod.node, key)) {
      Fail(pod, "has required pod affinity over " + key + ", a label its node lacks");
      return;
    }
    const auto namespaces = TermNamespaces(term, pod.ns);
    const nlohmann::json selector = term.value("labelSelector", nlohmann::json());
    // A term without a selector selects no pod.
    const auto peers =
        selector.is_null() ? std::vector<const PlacedPod*>{} : Selected(pod, selector, namespaces);
    const std::string domain = Value(pod.node, key);
    for (const PlacedPod* peer : peers) {
      if (HasKey(peer->node, key) && Value(peer->node, key) == domain) return;
    }
    const bool selects_itself =
        !selector.is_null() && namespaces.count(pod.ns) > 0 && Selects(selector, pod.labels);
    if (selects_itself && peers.empty()) return;
    Fail(pod, "has no pod its required affinity term selects in its " + key + " domain " + domain +
                  (selects_itself ? " although such pods are bound elsewhere" : ""));
  }

  void CheckAntiAffinity(const PlacedPod& pod, const nlohmann::json& term) {
    const std::string key = term.at("topologyKey");
    if (!HasKey(pod.node, key) || !term.contains("labelSelector")) return;
    const std::string domain = Value(pod.node, key);
    for (const PlacedPod* other :
         Selected(pod, term["labelSelector"], TermNamespaces(term, pod.ns))) {
      if (HasKey(other->node, key) && Value(other->node, key) == domain) {
        std::string what = "shares its ";
        what.append(key).append(" domain ").append(domain).append(" with ").append(other->name);
        Fail(pod, what + ", which its required anti-affinity term selects");
      }
    }
  }

  void CheckSpread(const PlacedPod& pod, const nlohmann::json& constraint) {
    const std::string key = constraint.at("topologyKey");
    const int max_skew = constraint.at("maxSkew");
    const int min_domains = constraint.value("minDomains", 1);
    if (!HasKey(pod.node, key)) {
      Fail(pod, "has a DoNotSchedule spread over " + key + ", a label its node lacks");
      return;
    }
    // Domains are those of the nodes the pod's node selector admits (nodeAffinityPolicy Honor,
    // the default); the pods counted are the ones the constraint selects in the pod's namespace.
    const auto& spec = (*pod.object)["spec"];
    std::map<std::string, int> counts;
    std::set<std::string> eligible;
    for (const auto& [name, labels] : nodes_) {
      bool admitted = labels.count(key) > 0;
      if (spec.contains("nodeSelector")) {
        for (const auto& [k, v] : spec["nodeSelector"].items()) {
          auto it = labels.find(k);
          admitted = admitted && it != labels.end() && it->second == v.get<std::string>();
        }
      }
      if (!admitted) continue;
      eligible.insert(name);
      counts[labels.at(key)];
    }
    const nlohmann::json selector = constraint.value("labelSelector", nlohmann::json::object());
    for (const auto& other : bound_) {
      if (other.ns != pod.ns || eligible.count(other.node) == 0) continue;
      if (Selects(selector, other.labels)) counts[Value(other.node, key)]++;
    }
    int min = std::numeric_limits<int>::max();
    for (const auto& [domain, count] : counts) min = std::min(min, count);
    if (static_cast<int>(counts.size()) < min_domains) min = 0;
    const std::string domain = Value(pod.node, key);
    const int skew = counts[domain] - min;
    if (skew > max_skew) {
      Fail(pod, "is one of " + std::to_string(counts[domain]) + " selected pods in " + key + " " +
                    domain + ", " + std::to_string(skew) + " above the least domain (" +
                    std::to_string(counts.size()) + " domains, minDomains " +
                    std::to_string(min_domains) + "), over maxSkew " + std::to_string(max_skew));
    }
  }

  const NodeLabels& nodes_;
  std::vector<PlacedPod> bound_;
  std::vector<std::string> violations_;
};

}  // namespace

std::vector<std::string> CheckRequiredConstraints(const std::vector<nlohmann::json>& pods,
                                                  const NodeLabels& nodes) {
  return Checker(pods, nodes).Run();
}

}  // namespace berth::e2e
