#ifndef BERTH_PKG_EXTENDER_WIRE_H_
#define BERTH_PKG_EXTENDER_WIRE_H_

// kube-scheduler's extender protocol (k8s.io/kube-scheduler/extender/v1) on the wire: the request
// bodies as Go's encoding/json writes them (Go's field names, `null` for unset pointers, the pod
// and nodes as the apiserver's v1 JSON of what Berth decoded), and the responses read as Go reads
// them (pkg/extender/go_json.h). Pure; thread-safe; the decoders are fuzzed (make fuzz).

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"

namespace berth::extender::wire {

// ExtenderArgs, for filter and prioritize: the node names (nodeCacheCapable) or the Node objects.
std::string ExtenderArgs(const api::Pod& pod, std::span<const framework::NodeInfo* const> nodes,
                         bool node_cache_capable);

// ExtenderPreemptionArgs: victims as whole pods, or as UIDs (MetaVictims) when nodeCacheCapable.
std::string PreemptionArgs(const api::Pod& pod,
                           const std::map<std::string, framework::ExtenderVictims>& victims,
                           bool node_cache_capable);

// ExtenderBindingArgs.
std::string BindingArgs(const api::Pod& pod, const std::string& node);

// ExtenderFilterResult. Unset lists (absent or null) are nullopt, as Go's nil pointers.
struct FilterResult {
  std::optional<std::vector<std::string>> node_names;
  std::optional<std::vector<std::string>> nodes;  // Nodes.items[].metadata.name.
  std::map<std::string, std::string> failed_nodes;
  std::map<std::string, std::string> failed_and_unresolvable_nodes;
  std::string error;
};
FilterResult DecodeFilterResult(std::string_view body);

// HostPriorityList, in the order sent (a host listed twice counts twice, as upstream).
std::vector<framework::ExtenderScore> DecodeHostPriorityList(std::string_view body);

struct MetaVictims {
  std::vector<std::string> pod_uids;
  int64_t num_pdb_violations = 0;
};
// ExtenderPreemptionResult.NodeNameToMetaVictims; a node mapped to null has no value.
std::map<std::string, std::optional<MetaVictims>> DecodePreemptionResult(std::string_view body);

// ExtenderBindingResult.Error ("" for success).
std::string DecodeBindingResult(std::string_view body);

}  // namespace berth::extender::wire

#endif  // BERTH_PKG_EXTENDER_WIRE_H_
