#ifndef BERTH_E2E_CONSTRAINT_CHECK_H_
#define BERTH_E2E_CONSTRAINT_CHECK_H_

// An independent check of a final placement against the required constraints of the pods in it:
// node selectors, required pod affinity and anti-affinity, and DoNotSchedule topology spread
// (minDomains included). It reads the objects as the apiserver returns them and shares no code
// with the scheduler's plugins, so a plugin's mistake cannot hide behind the same mistake here.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace berth::e2e {

// Node name -> its labels.
using NodeLabels = std::map<std::string, std::map<std::string, std::string>>;

// Every broken rule, one sentence each naming the pod, the rule and the node; empty when the
// placement keeps them all. `pods` are Pod objects; unbound ones (no spec.nodeName) only count as
// absent. `nodes` are the nodes the pods may select from: a pod bound elsewhere breaks its node
// selector, and only these nodes make up spreading domains.
//
// Every pod was placed after all pods bound before it and nothing was ever removed, so the
// final state shows each rule as it stood at the pod's turn, with two readings of history: a
// self-matching required affinity term is met by a pod alone in its domain only when no other pod
// it matches is bound anywhere (it came first and the rest joined it); and a DoNotSchedule
// constraint held at every placement exactly when, with the pods it selects counted per domain,
// the pod's domain exceeds the smallest count (0 with fewer domains than minDomains) by no more
// than maxSkew, provided every pod it selects carries the same constraint.
std::vector<std::string> CheckRequiredConstraints(const std::vector<nlohmann::json>& pods,
                                                  const NodeLabels& nodes);

}  // namespace berth::e2e

#endif  // BERTH_E2E_CONSTRAINT_CHECK_H_
