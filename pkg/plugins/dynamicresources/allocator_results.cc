#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pkg/plugins/dynamicresources/allocation_run.h"

namespace berth::plugins::dynamicresources {
namespace {

bool SameRequirement(const api::Requirement& a, const api::Requirement& b) {
  if (a.key != b.key || a.op != b.op) {
    return false;
  }
  std::set<std::string> va(a.values.begin(), a.values.end());
  std::set<std::string> vb(b.values.begin(), b.values.end());
  return va == vb;
}

void AddNewRequirements(const std::vector<api::Requirement>& from,
                        std::vector<api::Requirement>& to) {
  for (const api::Requirement& requirement : from) {
    bool present = std::any_of(to.begin(), to.end(), [&](const api::Requirement& existing) {
      return SameRequirement(existing, requirement);
    });
    if (!present) {
      to.push_back(requirement);
    }
  }
}

}  // namespace

std::optional<std::string> AllocationRun::BuildResults(std::vector<api::AllocationResult>* out) {
  out->resize(claims_.size());
  for (size_t c = 0; c < claims_.size(); ++c) {
    const api::ResourceClaim& claim = *claims_[c];
    api::AllocationResult& allocation = (*out)[c];
    for (const DeviceResult& internal : results_[c]) {
      api::DeviceRequestAllocationResult& result = allocation.results.emplace_back();
      result.request =
          internal.parent_name.empty() ? internal.name : internal.parent_name + "/" + internal.name;
      result.driver = internal.id->driver;
      result.pool = internal.id->pool;
      result.device = internal.id->device;
      result.admin_access = internal.admin_access;
      result.tolerations = internal.request->tolerations;
      result.binding_conditions = internal.device->binding_conditions;
      result.binding_failure_conditions = internal.device->binding_failure_conditions;
      result.share_id = internal.share_id;
      result.consumed_capacity = internal.consumed;
    }

    // Class configuration: each class's entries once, naming every request the class served.
    std::map<std::string, std::pair<size_t, size_t>, std::less<>> class_ranges;
    const auto& requests = claim.spec.requests;
    for (size_t i = 0; i < requests.size(); ++i) {
      const RequestEntry& entry = entries_[c][i];
      const RequestData& rd = entry.alternatives[entry.has_subrequests ? entry.selected : 0];
      if (rd.device_class == nullptr) {
        continue;
      }
      const std::string name = rd.ResultName();
      if (auto range = class_ranges.find(rd.device_class->meta.name); range != class_ranges.end()) {
        for (size_t k = range->second.first; k < range->second.second; ++k) {
          allocation.config[k].requests.push_back(name);
        }
        continue;
      }
      const size_t begin = allocation.config.size();
      for (const api::DeviceClassConfiguration& config : rd.device_class->config) {
        allocation.config.push_back(api::DeviceAllocationConfiguration{
            true, {name}, config.driver, config.parameters_json});
      }
      class_ranges.emplace(rd.device_class->meta.name,
                           std::make_pair(begin, allocation.config.size()));
    }
    auto selected_name = [&](size_t i) -> std::optional<std::string> {
      const RequestEntry& entry = entries_[c][i];
      if (!entry.has_subrequests) {
        return std::nullopt;
      }
      return entry.alternatives[entry.selected].ResultName();
    };
    auto names = [](const std::vector<std::string>& list, const std::string& name) {
      return std::find(list.begin(), list.end(), name) != list.end();
    };
    // Claim configuration: kept when it applies to a request or to the chosen subrequest.
    for (const api::DeviceClaimConfiguration& config : claim.spec.config) {
      bool applies = config.requests.empty();
      for (size_t i = 0; i < requests.size() && !applies; ++i) {
        const std::optional<std::string> sub = selected_name(i);
        applies = names(config.requests, requests[i].name) || (sub && names(config.requests, *sub));
      }
      if (applies) {
        allocation.config.push_back(api::DeviceAllocationConfiguration{
            false, config.requests, config.driver, config.parameters_json});
      }
    }
    // A configuration naming every request applies to all: say so with an empty list.
    for (api::DeviceAllocationConfiguration& config : allocation.config) {
      if (config.requests.empty()) {
        continue;
      }
      bool all = true;
      for (size_t i = 0; i < requests.size() && all; ++i) {
        if (names(config.requests, requests[i].name)) {
          continue;
        }
        auto sub = selected_name(i);
        all = sub && names(config.requests, *sub);
      }
      if (all) {
        config.requests.clear();
      }
    }

    // Node selector: the node itself when any device is local to it (or binds to it), else the
    // union of the requirements of the devices' node selectors, else none (reachable anywhere).
    api::NodeSelectorTerm term;
    bool local = false;
    for (const DeviceResult& internal : results_[c]) {
      const api::ResourceSlice& slice = *internal.slice;
      const bool per_device = slice.spec.per_device_node_selection;
      const std::optional<std::string>& node_name =
          per_device ? internal.device->node_name : slice.spec.node_name;
      const std::optional<api::NodeSelector>& selector =
          per_device ? internal.device->node_selector : slice.spec.node_selector;
      if ((node_name && !node_name->empty()) || internal.device->binds_to_node) {
        local = true;
        break;
      }
      if (!selector) {
        continue;
      }
      if (selector->terms.size() > 1) {
        return "create NodeSelector for claim " + claim.meta.name +
               ": unsupported ResourceSlice.NodeSelector with " +
               std::to_string(selector->terms.size()) + " terms";
      }
      if (selector->terms.size() == 1) {
        AddNewRequirements(selector->terms[0].match_fields, term.match_fields);
        AddNewRequirements(selector->terms[0].match_expressions, term.match_expressions);
      }
    }
    if (local) {
      api::NodeSelectorTerm node_term;
      node_term.match_fields.push_back(
          api::Requirement{"metadata.name", api::SelectorOperator::kIn, {node_.Name()}, 0});
      allocation.node_selector = api::NodeSelector{{std::move(node_term)}};
    } else if (!term.match_fields.empty() || !term.match_expressions.empty()) {
      allocation.node_selector = api::NodeSelector{{std::move(term)}};
    }
  }
  return std::nullopt;
}

}  // namespace berth::plugins::dynamicresources
