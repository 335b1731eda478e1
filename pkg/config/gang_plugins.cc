#include "pkg/config/gang_plugins.h"

#include <algorithm>
#include <iterator>

#include "pkg/yaml/yaml.h"

namespace berth::config {
namespace {

using yaml::Quote;

constexpr std::string_view kPrioritySort = "PrioritySort";
constexpr std::string_view kNodeResourcesFit = "NodeResourcesFit";
// The range of Coscheduling's weight args.
constexpr int32_t kMaxPlacementWeight = 100;

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

bool Named(const std::vector<PluginRef>& refs, std::string_view name) {
  return std::any_of(refs.begin(), refs.end(),
                     [name](const PluginRef& ref) { return ref.name == name; });
}

// How the file sets one plugin at one of upstream's pod-group extension points, read as
// kube-scheduler reads it: the point's own enabled entry first (its weight), then a disabled entry
// there, then multiPoint's enabled and disabled entries. Nullopt when the file names it in none.
struct Setting {
  bool enabled = false;
  int32_t weight = 0;  // 0: upstream's default, 1.
  std::string weight_path;
};

std::optional<Setting> ReadSetting(std::string_view name, const PluginSet& point,
                                   const std::string& point_path, const PluginSet* multi_point,
                                   const std::string& multi_point_path) {
  auto enabled_in = [name](const PluginSet& set,
                           const std::string& set_path) -> std::optional<Setting> {
    for (size_t i = 0; i < set.enabled.size(); ++i) {
      if (set.enabled[i].name == name) {
        return Setting{true, set.enabled[i].weight, Index(set_path + ".enabled", i) + ".weight"};
      }
    }
    if (Named(set.disabled, name)) return Setting{};
    return std::nullopt;
  };
  if (auto s = enabled_in(point, point_path)) return s;
  if (multi_point != nullptr) return enabled_in(*multi_point, multi_point_path);
  return std::nullopt;
}

// A placement weight as Coscheduling takes it: 0 when disabled, upstream's 1 for an unset weight.
std::optional<int32_t> PlacementWeight(const std::optional<Setting>& setting, std::string_view name,
                                       std::string_view arg, std::vector<ConfigIssue>& issues) {
  if (!setting) return std::nullopt;
  if (!setting->enabled) return 0;
  if (setting->weight > kMaxPlacementWeight) {
    issues.push_back(
        {setting->weight_path,
         std::string(name) + "'s placement weight becomes Coscheduling's " + std::string(arg) +
             " in berth-scheduler, which must be in the range [0, " +
             std::to_string(kMaxPlacementWeight) + "], got " + std::to_string(setting->weight)});
    return std::nullopt;
  }
  return setting->weight == 0 ? 1 : setting->weight;
}

// Upstream's pod-group extension points accept only the plugins that carry a Coscheduling setting.
void CheckPodGroupPoints(const std::string& plugins_path, const PodGroupPluginSets& pod_group,
                         std::vector<ConfigIssue>& issues) {
  struct Point {
    std::string_view key;
    const PluginSet* set;
    std::vector<std::string_view> allowed;
    std::string_view why;
  };
  const Point points[] = {
      {"placementGenerate",
       &pod_group.placement_generate,
       {kTopologyPlacementGenerator},
       "only TopologyPlacementGenerator can be enabled there in berth-scheduler (it turns on "
       "Coscheduling's topologyPlacement)"},
      {"placementScore",
       &pod_group.placement_score,
       {kPodGroupPodsCount, kNodeResourcesFit},
       "only PodGroupPodsCount and NodeResourcesFit can be enabled there in berth-scheduler (their "
       "weights become Coscheduling's podGroupPodsCountWeight and placementResourcesWeight)"},
      {"placementFeasible",
       &pod_group.placement_feasible,
       {kGangScheduling},
       "only GangScheduling can be enabled there in berth-scheduler (it enables Coscheduling)"},
      {"podGroupPostFilter",
       &pod_group.pod_group_post_filter,
       {},
       "the podGroupPostFilter extension point is not supported by berth-scheduler "
       "(DefaultPreemption preempts for a whole gang at postFilter)"},
  };
  for (const Point& point : points) {
    for (size_t i = 0; i < point.set->enabled.size(); ++i) {
      const std::string& name = point.set->enabled[i].name;
      if (name.empty() ||
          std::find(point.allowed.begin(), point.allowed.end(), name) != point.allowed.end()) {
        continue;
      }
      issues.push_back(
          {Index(plugins_path + "." + std::string(point.key) + ".enabled", i) + ".name",
           std::string(point.why) + "; got " + Quote(name)});
    }
  }
}

// Upstream's gang plugins enabled at one of Berth's extension points must be where upstream runs
// them.
void CheckRegularPoints(const std::string& plugins_path, const Plugins& custom,
                        std::vector<ConfigIssue>& issues) {
  for (const ExtensionPoint& point : ExtensionPoints()) {
    const PluginSet& set = custom.*point.set;
    for (size_t i = 0; i < set.enabled.size(); ++i) {
      const std::string& name = set.enabled[i].name;
      std::string where;
      if (name == kGangScheduling) {
        if (point.key == "multiPoint" || point.key == "preEnqueue" || point.key == "permit") {
          continue;
        }
        where =
            "GangScheduling (Coscheduling in berth-scheduler) runs at preEnqueue, permit and "
            "placementFeasible; enable it there or in multiPoint";
      } else if (name == kTopologyPlacementGenerator) {
        if (point.key == "multiPoint") continue;
        where = "TopologyPlacementGenerator can be enabled only in multiPoint or placementGenerate";
      } else if (name == kPodGroupPodsCount) {
        if (point.key == "multiPoint") continue;
        where = "PodGroupPodsCount can be enabled only in multiPoint or placementScore";
      } else {
        continue;
      }
      issues.push_back(
          {Index(plugins_path + "." + std::string(point.key) + ".enabled", i) + ".name",
           where + ", not at " + std::string(point.key)});
    }
  }
}

// Renames GangScheduling to Coscheduling in `refs`, keeping its place; an entry that would repeat
// Coscheduling (named in `refs` already, or elsewhere when `already_named`) is dropped instead.
// Returns whether `refs` named GangScheduling.
bool RenameGang(std::vector<PluginRef>& refs, bool already_named) {
  bool found = false;
  bool named = already_named || Named(refs, kCoscheduling);
  std::vector<PluginRef> out;
  out.reserve(refs.size());
  for (PluginRef& ref : refs) {
    if (ref.name != kGangScheduling) {
      out.push_back(std::move(ref));
      continue;
    }
    found = true;
    if (!named) {
      out.push_back({std::string(kCoscheduling), 0});
      named = true;
    }
  }
  refs = std::move(out);
  return found;
}

void Erase(std::vector<PluginRef>& refs, std::string_view name) {
  std::erase_if(refs, [name](const PluginRef& ref) { return ref.name == name; });
}

}  // namespace

bool IsUpstreamGangPlugin(std::string_view name) {
  return name == kGangScheduling || name == kTopologyPlacementGenerator ||
         name == kPodGroupPodsCount;
}

std::set<std::string> WithGangPlugins(const std::set<std::string>& known_plugins) {
  std::set<std::string> out = known_plugins;
  for (std::string_view name : {kGangScheduling, kTopologyPlacementGenerator, kPodGroupPodsCount}) {
    out.emplace(name);
  }
  return out;
}

const std::array<std::pair<std::string_view, PluginSet PodGroupPluginSets::*>, 4>&
PodGroupPoints() {
  static const std::array<std::pair<std::string_view, PluginSet PodGroupPluginSets::*>, 4> kPoints =
      {{{"placementGenerate", &PodGroupPluginSets::placement_generate},
        {"placementScore", &PodGroupPluginSets::placement_score},
        {"placementFeasible", &PodGroupPluginSets::placement_feasible},
        {"podGroupPostFilter", &PodGroupPluginSets::pod_group_post_filter}}};
  return kPoints;
}

nlohmann::json TranslateGangPlugins(const std::string& path, Plugins& custom,
                                    const PodGroupPluginSets& pod_group,
                                    const std::set<std::string>& known_plugins,
                                    std::vector<ConfigIssue>& issues) {
  const std::string plugins_path = path + ".plugins";
  const std::string multi_path = plugins_path + ".multiPoint";
  CheckPodGroupPoints(plugins_path, pod_group, issues);
  CheckRegularPoints(plugins_path, custom, issues);

  // Read before `custom` changes, so the paths are the file's.
  nlohmann::json args = nlohmann::json::object();
  if (auto generator =
          ReadSetting(kTopologyPlacementGenerator, pod_group.placement_generate,
                      plugins_path + ".placementGenerate", &custom.multi_point, multi_path)) {
    args["topologyPlacement"] = generator->enabled;
  }
  if (auto weight = PlacementWeight(
          ReadSetting(kPodGroupPodsCount, pod_group.placement_score,
                      plugins_path + ".placementScore", &custom.multi_point, multi_path),
          kPodGroupPodsCount, "podGroupPodsCountWeight", issues)) {
    args["podGroupPodsCountWeight"] = *weight;
  }
  // Only placementScore: a NodeResourcesFit weight in multiPoint is set for node scoring.
  if (auto weight = PlacementWeight(ReadSetting(kNodeResourcesFit, pod_group.placement_score,
                                                plugins_path + ".placementScore", nullptr, ""),
                                    kNodeResourcesFit, "placementResourcesWeight", issues)) {
    args["placementResourcesWeight"] = *weight;
  }

  // GangScheduling enabled anywhere enables Coscheduling, which runs at all of its points: Berth's
  // gang logic is not split by extension point. At permit (a point both have) it keeps its place.
  RenameGang(custom.multi_point.enabled, false);
  bool enable = RenameGang(custom.permit.enabled, false);
  if (Named(custom.pre_enqueue.enabled, kGangScheduling) ||
      Named(pod_group.placement_feasible.enabled, kGangScheduling)) {
    Erase(custom.pre_enqueue.enabled, kGangScheduling);
    enable = true;
  }
  if (enable && !Named(custom.multi_point.enabled, kCoscheduling)) {
    custom.multi_point.enabled.push_back({std::string(kCoscheduling), 0});
  }
  // Disabled where Coscheduling runs (multiPoint, permit), it disables Coscheduling there, unless
  // the same set enables it. Elsewhere Coscheduling does not run, so there is nothing to disable.
  bool gang_disabled = false;
  for (PluginSet* set : {&custom.multi_point, &custom.permit}) {
    bool enabled_here = Named(set->enabled, kCoscheduling);
    bool renamed = RenameGang(set->disabled, enabled_here);
    if (set == &custom.multi_point && renamed && !enabled_here) gang_disabled = true;
  }
  // Coscheduling was also the queue order, PrioritySort's in kube-scheduler; with gangs off the
  // profile sorts as kube-scheduler's does, unless the file chose its own queue order.
  if (gang_disabled && known_plugins.contains(std::string(kPrioritySort)) &&
      custom.queue_sort.enabled.empty() && !Named(custom.multi_point.enabled, kPrioritySort)) {
    custom.multi_point.enabled.push_back({std::string(kPrioritySort), 0});
  }
  // The rest of the upstream names are settings now, read above, or no-ops.
  for (const ExtensionPoint& point : ExtensionPoints()) {
    PluginSet& set = custom.*point.set;
    for (std::string_view name :
         {kGangScheduling, kTopologyPlacementGenerator, kPodGroupPodsCount}) {
      Erase(set.disabled, name);
      if (name != kGangScheduling) Erase(set.enabled, name);
    }
  }
  return args;
}

std::vector<ConfigIssue> CheckGangPluginArgs(const std::string& name, const nlohmann::json& args) {
  bool empty = args.is_null();
  if (args.is_object()) {
    empty = std::all_of(args.items().begin(), args.items().end(), [](const auto& item) {
      return item.key() == "apiVersion" || item.key() == "kind";
    });
  }
  if (empty) return {};
  return {{"", "kube-scheduler's " + name +
                   " takes no args; in berth-scheduler gangs are configured by Coscheduling's args "
                   "(permitWaitingTimeSeconds, podGroupBackoffSeconds, topologyPlacement, "
                   "podGroupPodsCountWeight, placementResourcesWeight, "
                   "percentageOfPlacementsToScore)"}};
}

ArgsValidator WithGangArgsCheck(ArgsValidator validate_args) {
  return [validate_args = std::move(validate_args)](const std::string& plugin,
                                                    const nlohmann::json& args) {
    if (IsUpstreamGangPlugin(plugin)) return CheckGangPluginArgs(plugin, args);
    return validate_args ? validate_args(plugin, args) : std::vector<ConfigIssue>{};
  };
}

void ApplyGangArgs(Profile& profile, const nlohmann::json& args) {
  std::erase_if(profile.plugin_config,
                [](const PluginConfig& pc) { return IsUpstreamGangPlugin(pc.name); });
  if (args.empty()) return;
  auto it = std::find_if(profile.plugin_config.begin(), profile.plugin_config.end(),
                         [](const PluginConfig& pc) { return pc.name == kCoscheduling; });
  if (it == profile.plugin_config.end()) {
    profile.plugin_config.push_back({std::string(kCoscheduling), nlohmann::json::object()});
    it = std::prev(profile.plugin_config.end());
  }
  // Validation has passed, so the args are an object or absent.
  if (!it->args.is_object()) it->args = nlohmann::json::object();
  for (const auto& [key, value] : args.items()) {
    if (!it->args.contains(key)) it->args[key] = value;
  }
}

}  // namespace berth::config
