#ifndef BERTH_PKG_CONFIG_GANG_PLUGINS_H_
#define BERTH_PKG_CONFIG_GANG_PLUGINS_H_

// kube-scheduler v1.37's gang plugins in a configuration file, read with the same meaning for
// Berth, whose gang scheduling is one plugin, Coscheduling (docs/gang-scheduling.md):
//
//   GangScheduling             is Coscheduling: enabled anywhere (multiPoint, preEnqueue, permit,
//                              placementFeasible) it enables Coscheduling; disabled in multiPoint
//                              or permit it disables Coscheduling there (and, when that leaves the
//                              profile without its queue order, PrioritySort sorts, as upstream).
//   TopologyPlacementGenerator enabled or disabled (multiPoint, placementGenerate) sets
//                              Coscheduling's topologyPlacement.
//   PodGroupPodsCount          its weight (multiPoint or placementScore, the latter first; 0
//                              meaning 1; disabled meaning 0) sets podGroupPodsCountWeight.
//   NodeResourcesFit           its weight in placementScore sets placementResourcesWeight.
//   percentageOfPlacementsToScore (profile, else global) sets Coscheduling's of the same name.
//
// Only names written in the file count ("*" in a disabled list does not switch these off), and
// Coscheduling args the file gives explicitly win over all of it. Internal to pkg/config.

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pkg/config/config.h"
#include "pkg/config/validate.h"

namespace berth::config {

inline constexpr std::string_view kCoscheduling = "Coscheduling";
inline constexpr std::string_view kGangScheduling = "GangScheduling";
inline constexpr std::string_view kTopologyPlacementGenerator = "TopologyPlacementGenerator";
inline constexpr std::string_view kPodGroupPodsCount = "PodGroupPodsCount";

// Coscheduling's args that concern only its own profile's gang placement, not the queue order
// that every profile shares (ValidateCommonQueueSort leaves them out of its comparison).
inline constexpr std::array<std::string_view, 4> kCoschedulingPlacementArgs = {
    "topologyPlacement", "podGroupPodsCountWeight", "placementResourcesWeight",
    "percentageOfPlacementsToScore"};

inline constexpr char kPercentageOfPlacements[] = "percentageOfPlacementsToScore";

// Whether `name` is one of kube-scheduler's gang plugins that Berth reads as Coscheduling's
// settings rather than as a plugin of its own.
bool IsUpstreamGangPlugin(std::string_view name);

// `known_plugins` and the upstream gang plugins: names a file may use.
std::set<std::string> WithGangPlugins(const std::set<std::string>& known_plugins);

// Upstream's pod-group extension points, which have no place in Berth's Plugins.
struct PodGroupPluginSets {
  PluginSet placement_generate, placement_score, placement_feasible, pod_group_post_filter;
};
// Each of them: its key in the file format and its member.
const std::array<std::pair<std::string_view, PluginSet PodGroupPluginSets::*>, 4>& PodGroupPoints();

// Reads the upstream gang plugins out of one profile's decoded, not yet merged, plugin sets:
// rewrites `custom` so that it names only Berth plugins, and returns the Coscheduling args they
// mean (an empty object when none). Refused uses are added to `issues` with their field paths
// under `path` (the profile's, "profiles[0]"); the indices are those of the file, as `custom`
// still is on entry.
nlohmann::json TranslateGangPlugins(const std::string& path, Plugins& custom,
                                    const PodGroupPluginSets& pod_group,
                                    const std::set<std::string>& known_plugins,
                                    std::vector<ConfigIssue>& issues);

// The problems of the args of a pluginConfig entry of an upstream gang plugin, as an
// ArgsValidator returns them: kube-scheduler's take none, so only null or an empty object (with at
// most apiVersion and kind) is accepted.
std::vector<ConfigIssue> CheckGangPluginArgs(const std::string& name, const nlohmann::json& args);
// `validate_args` (which may be empty) for Berth's plugins, CheckGangPluginArgs for the upstream
// gang plugins.
ArgsValidator WithGangArgsCheck(ArgsValidator validate_args);

// After validation: drops the pluginConfig entries of upstream gang plugins and adds `args` to
// Coscheduling's (creating its entry when there is none), each key only where the file did not
// give it.
void ApplyGangArgs(Profile& profile, const nlohmann::json& args);

}  // namespace berth::config

#endif  // BERTH_PKG_CONFIG_GANG_PLUGINS_H_
