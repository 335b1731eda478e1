#ifndef BERTH_PKG_PLUGINS_HELPER_DESCRIBE_H_
#define BERTH_PKG_PLUGINS_HELPER_DESCRIBE_H_

// Selectors and topology domains as a person reads them, for the changes plugins suggest
// (framework::HintPlugin).

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"

namespace berth::plugins::helper {

// "disktype In (ssd)", "zone NotIn (a, b)", "gpu Exists", "cores Gt 8".
std::string DescribeRequirement(const api::Requirement& requirement);
// Requirements joined with ", "; matchLabels read as "app=web"; "everything" when empty.
std::string DescribeSelector(const api::LabelSelector& selector);

// The domains of `topology_key` among `nodes`, the most nodes first, at most `limit` of them:
// ("zone=us-east-1a", "3 nodes"), with nodes lacking the label as ("no zone label", "2 nodes").
std::vector<std::pair<std::string, std::string>> Domains(
    std::span<const framework::NodeInfo* const> nodes, const std::string& topology_key,
    size_t limit);

}  // namespace berth::plugins::helper

#endif  // BERTH_PKG_PLUGINS_HELPER_DESCRIBE_H_
