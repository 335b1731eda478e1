#include "pkg/framework/runtime/framework.h"

#include <algorithm>
#include <set>
#include <type_traits>

#include "pkg/framework/runtime/run_helpers.h"

namespace berth::framework::runtime {
namespace {

using internal::AsError;
using internal::Clock;
using internal::PluginStart;
using internal::Since;

// Filter and Score plugins run once per node, and most are very cheap. Even in a sampled
// cycle, timing every call (a clock read and a histogram update per plugin per node) took longer
// than the calls, so a sampled cycle times them on one node in kTimedNodeStride.
constexpr int kTimedNodeStride = 16;

bool TimeNode(const CycleState& state, int node_index) {
  return state.record_plugin_metrics && node_index % kTimedNodeStride == 0;
}

// Times consecutive plugin calls with one clock read between each pair.
class PluginLap {
 public:
  explicit PluginLap(bool enabled) : enabled_(enabled) {
    if (enabled_) last_ = Clock::now();
  }
  void Record(PluginObserver* metrics, const Status& status) {
    if (!enabled_) return;
    const Clock::time_point now = Clock::now();
    metrics->ObserveDuration(status, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

 private:
  const bool enabled_;
  Clock::time_point last_;
};

// Stand-ins when no observer is configured (tests, benchmarks), so call sites need no branch.
class NoopPointObserver : public ExtensionPointObserver {
 public:
  void Observe(const Status&, double) override {}
};
class NoopPluginObserver : public PluginObserver {
 public:
  void ObserveDuration(const Status&, double) override {}
  void AddEvaluations(uint64_t) override {}
};
NoopPointObserver kNoopPoint;
NoopPluginObserver kNoopPlugin;
class NoopPreemptionMetrics : public PreemptionMetrics {
 public:
  void ObserveAttempt() override {}
  void ObserveVictims(size_t) override {}
};
NoopPreemptionMetrics kNoopPreemptionMetrics;

// An ordered set of names (insertion order kept), as upstream's orderedSet.
class OrderedNames {
 public:
  bool Insert(const std::string& name) {
    if (Has(name)) return false;
    list_.push_back(name);
    return true;
  }
  bool Has(const std::string& name) const {
    return std::find(list_.begin(), list_.end(), name) != list_.end();
  }
  void Erase(const std::string& name) {
    list_.erase(std::remove(list_.begin(), list_.end(), name), list_.end());
  }
  const std::vector<std::string>& list() const { return list_; }

 private:
  std::vector<std::string> list_;
};

}  // namespace

Framework::Framework(const Registry& registry, const config::Profile& profile, FrameworkDeps deps)
    : profile_name_(profile.scheduler_name), profile_(profile), deps_(std::move(deps)) {
  if (!deps_.waiting_pods) deps_.waiting_pods = std::make_shared<WaitingPods>();
  // Plugins reach both through the Handle from their factories on, so neither can come later.
  if (deps_.nominator == nullptr || deps_.informer_factory == nullptr) {
    throw FrameworkError("profile " + profile_name_ +
                         ": a framework needs a nominator and an informer factory");
  }
  const auto& p = profile.plugins;
  // Instantiate every plugin named anywhere, once, with its pluginConfig args.
  for (const config::ExtensionPoint& point : config::ExtensionPoints()) {
    for (const auto& ref : (p.*point.set).enabled) {
      if (plugins_.count(ref.name)) continue;
      auto factory = registry.find(ref.name);
      if (factory == registry.end()) {
        throw FrameworkError("profile " + profile_name_ + ": plugins." + std::string(point.key) +
                             ": plugin \"" + ref.name + "\" is not registered");
      }
      nlohmann::json args;
      for (const auto& pc : profile.plugin_config) {
        if (pc.name == ref.name) args = pc.args;
      }
      try {
        plugins_[ref.name] = factory->second(args, *this);
      } catch (const std::exception& e) {
        throw FrameworkError("profile " + profile_name_ + ": pluginConfig[" + ref.name +
                             "].args: " + e.what());
      }
    }
  }

  std::map<std::string, int64_t> weights;
  for (const auto& ref : p.score.enabled) weights[ref.name] = ref.weight == 0 ? 1 : ref.weight;

  // Specific extension point lists first, then MultiPoint expanded into them (upstream
  // expandMultiPointPlugins): plugins both in MultiPoint and a specific list keep the specific
  // position and come first; MultiPoint-only plugins follow; the rest of the specific list last.
  auto expand = [&](auto& out, const config::PluginSet& specific, const std::string& point,
                    std::string_view metric_point) {
    using P = typename std::remove_reference_t<decltype(out)>::value_type;
    using Interface = std::remove_pointer_t<decltype(P::plugin)>;
    OrderedNames enabled;
    for (const auto& ref : specific.enabled) {
      if (!dynamic_cast<Interface*>(plugins_.at(ref.name).get())) {
        std::string message = "profile " + profile_name_;
        message.append(": plugins.").append(point).append(": plugin \"").append(ref.name);
        message.append("\" does not extend ").append(point);
        throw FrameworkError(message);
      }
      if (!enabled.Insert(ref.name)) {
        throw FrameworkError("profile " + profile_name_ + ": plugins." + point + ": plugin \"" +
                             ref.name + "\" is enabled twice");
      }
    }
    std::set<std::string> disabled;
    for (const auto& ref : specific.disabled) disabled.insert(ref.name);
    std::vector<std::string> order;
    if (disabled.count("*")) {
      order = enabled.list();
    } else {
      OrderedNames multi;
      OrderedNames overrides;
      for (const auto& ref : p.multi_point.enabled) {
        if (!dynamic_cast<Interface*>(plugins_.at(ref.name).get())) continue;
        if (disabled.count(ref.name)) continue;
        if (enabled.Has(ref.name)) {
          overrides.Insert(ref.name);
          continue;
        }
        if (!multi.Insert(ref.name)) {
          throw FrameworkError("profile " + profile_name_ + ": plugins.multiPoint: plugin \"" +
                               ref.name + "\" already registered as " + point);
        }
        if (point == "score" && !weights.count(ref.name)) {
          weights[ref.name] = ref.weight == 0 ? 1 : ref.weight;
        }
      }
      for (const auto& name : enabled.list()) {
        if (overrides.Has(name)) order.push_back(name);
      }
      for (const auto& name : multi.list()) order.push_back(name);
      for (const auto& name : enabled.list()) {
        if (!overrides.Has(name)) order.push_back(name);
      }
    }
    for (const auto& name : order) {
      out.push_back({PluginName(name), dynamic_cast<Interface*>(plugins_.at(name).get()),
                     PluginMetrics(name, metric_point)});
    }
  };
  expand(pre_enqueue_, p.pre_enqueue, "preEnqueue", extension_point::kPreEnqueue);
  expand(queue_sort_, p.queue_sort, "queueSort", extension_point::kQueueSort);
  expand(pre_filter_, p.pre_filter, "preFilter", extension_point::kPreFilter);
  expand(filter_, p.filter, "filter", extension_point::kFilter);
  expand(post_filter_, p.post_filter, "postFilter", extension_point::kPostFilter);
  expand(pre_score_, p.pre_score, "preScore", extension_point::kPreScore);
  expand(score_, p.score, "score", extension_point::kScore);
  expand(reserve_, p.reserve, "reserve", extension_point::kReserve);
  expand(permit_, p.permit, "permit", extension_point::kPermit);
  expand(pre_bind_, p.pre_bind, "preBind", extension_point::kPreBind);
  expand(bind_, p.bind, "bind", extension_point::kBind);
  expand(post_bind_, p.post_bind, "postBind", extension_point::kPostBind);
  for (const auto& entry : score_) {
    score_weights_.push_back(weights.count(entry.name) ? weights[entry.name] : 1);
    normalize_metrics_.push_back(
        PluginMetrics(entry.name, extension_point::kScoreExtensionNormalize));
  }
  for (const auto& entry : reserve_) {
    unreserve_metrics_.push_back(PluginMetrics(entry.name, extension_point::kUnreserve));
  }
  static constexpr std::array<std::string_view, static_cast<size_t>(Point::kCount)> kPointNames = {
      extension_point::kPreEnqueue, extension_point::kPreFilter, extension_point::kFilter,
      extension_point::kPostFilter, extension_point::kPreScore,  extension_point::kScore,
      extension_point::kReserve,    extension_point::kUnreserve, extension_point::kPermit,
      extension_point::kPreBind,    extension_point::kBind,      extension_point::kPostBind};
  for (size_t i = 0; i < kPointNames.size(); i++) {
    point_metrics_[i] = deps_.observer
                            ? deps_.observer->ForExtensionPoint(kPointNames[i], profile_name_)
                            : &kNoopPoint;
  }
  for (const auto& [name, plugin] : plugins_) {
    if (auto* ext = dynamic_cast<EnqueueExtensions*>(plugin.get())) {
      enqueue_extensions_.push_back({PluginName(name), ext, &kNoopPlugin});
    }
  }

  if (queue_sort_.size() != 1) {
    throw FrameworkError("profile " + profile_name_ +
                         ": exactly one queueSort plugin is required, found " +
                         std::to_string(queue_sort_.size()));
  }
  if (bind_.empty()) {
    throw FrameworkError("profile " + profile_name_ + ": at least one bind plugin is required");
  }
}

Framework::~Framework() = default;

PluginObserver* Framework::PluginMetrics(const std::string& plugin, std::string_view point) {
  return deps_.observer ? deps_.observer->ForPlugin(plugin, point, profile_name_) : &kNoopPlugin;
}

void Framework::Observe(Point point, const Status& status, Clock::time_point start) const {
  point_metrics_[static_cast<size_t>(point)]->Observe(status, Since(start));
}

void Framework::ObservePlugin(const CycleState& state, PluginObserver* metrics,
                              const Status& status, Clock::time_point start) const {
  if (state.record_plugin_metrics) metrics->ObserveDuration(status, Since(start));
}

void Framework::RecordFilterPhase(const CycleState& state, const Status& status, double seconds,
                                  int64_t nodes_evaluated,
                                  const std::map<std::string, int64_t>& rejected_by) {
  point_metrics_[static_cast<size_t>(Point::kFilter)]->Observe(status, seconds);
  // Filter stops at the first plugin that rejects a node, so a plugin ran on every evaluated
  // node except those an earlier plugin rejected.
  int64_t reached = nodes_evaluated;
  for (const auto& [name, plugin, metrics] : filter_) {
    if (state.skip_filter_plugins.contains(name)) continue;
    if (reached > 0) metrics->AddEvaluations(static_cast<uint64_t>(reached));
    if (auto it = rejected_by.find(name); it != rejected_by.end()) reached -= it->second;
  }
}

Status Framework::RunPreEnqueuePlugins(const api::Pod& pod) {
  auto start = Clock::now();
  Status result;
  for (const auto& [name, plugin, metrics] : pre_enqueue_) {
    Status s = plugin->PreEnqueue(pod);
    if (s.IsSuccess()) continue;
    result = s.IsRejected() ? std::move(s.WithPlugin(name))
                            : AsError("running PreEnqueue plugin", name, s);
    break;
  }
  Observe(Point::kPreEnqueue, result, start);
  return result;
}

bool Framework::QueueSortLess(const QueuedPodInfo& a, const QueuedPodInfo& b) const {
  return queue_sort_.front().plugin->Less(a, b);
}

Status Framework::RunPreFilterPlugins(CycleState& state, const api::Pod& pod,
                                      const std::vector<NodeInfoPtr>& nodes,
                                      PreFilterResult* result,
                                      std::vector<std::string>* narrowed_by) {
  auto start = Clock::now();
  *result = PreFilterResult{};
  Status returned;
  std::vector<std::string> local_plugins;
  std::vector<std::string>& plugins_with_nodes = narrowed_by ? *narrowed_by : local_plugins;
  auto finish = [&](Status s) {
    // Filter runs per node and plugin; a flag per plugin spares a set lookup on each call.
    state.filter_skipped.assign(filter_.size(), 0);
    for (size_t i = 0; i < filter_.size(); i++) {
      state.filter_skipped[i] = state.skip_filter_plugins.contains(filter_[i].name) ||
                                        state.ignored_plugins.contains(filter_[i].name)
                                    ? 1
                                    : 0;
    }
    if (!state.dry_run) Observe(Point::kPreFilter, s, start);
    return s;
  };
  for (const auto& [name, plugin, metrics] : pre_filter_) {
    if (!state.ignored_plugins.empty() && state.ignored_plugins.contains(name)) continue;
    auto plugin_start = PluginStart(state);
    PreFilterResult r;
    Status s = plugin->PreFilter(state, pod, nodes, &r);
    ObservePlugin(state, metrics, s, plugin_start);
    if (s.IsSkip()) {
      state.skip_filter_plugins.insert(name);
      continue;
    }
    if (!state.dry_run) metrics->AddEvaluations(1);
    if (!s.IsSuccess()) {
      s.WithPlugin(name);
      if (s.code() == Code::kUnschedulableAndUnresolvable) return finish(std::move(s));
      if (s.code() == Code::kUnschedulable) {
        // Later PreFilters still run: their state is needed if preemption runs this cycle.
        returned = std::move(s);
        continue;
      }
      return finish(AsError("running PreFilter plugin", name, s));
    }
    if (!r.AllNodes()) {
      plugins_with_nodes.push_back(name);
      if (result->AllNodes()) {
        result->node_names = std::move(r.node_names);
      } else {
        std::set<std::string> both;
        std::set_intersection(result->node_names->begin(), result->node_names->end(),
                              r.node_names->begin(), r.node_names->end(),
                              std::inserter(both, both.begin()));
        result->node_names = std::move(both);
      }
      if (result->node_names->empty()) {
        std::string msg;
        if (plugins_with_nodes.size() == 1) {
          msg = "node(s) didn't satisfy plugin " + plugins_with_nodes[0];
        } else {
          msg = "node(s) didn't satisfy plugin(s) [";
          for (size_t i = 0; i < plugins_with_nodes.size(); i++) {
            msg += (i ? " " : "") + plugins_with_nodes[i];
          }
          msg += "] simultaneously";
        }
        return finish(Status::Unresolvable(msg));
      }
    }
  }
  return finish(std::move(returned));
}

Status Framework::RunPreFilterForPod(CycleState& state, const api::Pod& pod,
                                     PreFilterResult* result) {
  return RunPreFilterPlugins(state, pod, SnapshotSharedLister().List(), result);
}

namespace {

// The first group `of` finds for `pod` among `plugins`' HintPlugins, named after its plugin.
std::optional<PodGroupHint> FirstGroup(
    const std::map<std::string, PluginPtr, std::less<>>& plugins,
    std::optional<PodGroupHint> (HintPlugin::*of)(const api::Pod&) const, const api::Pod& pod) {
  for (const auto& [name, plugin] : plugins) {
    const auto* hinting = dynamic_cast<const HintPlugin*>(plugin.get());
    if (hinting == nullptr) continue;
    if (std::optional<PodGroupHint> group = (hinting->*of)(pod)) {
      group->plugin = name;
      return group;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<PodGroupHint> Framework::GroupOf(const api::Pod& pod) const {
  return FirstGroup(plugins_, &HintPlugin::GroupOf, pod);
}

std::optional<PodGroupHint> Framework::VictimGroupOf(const api::Pod& pod) const {
  return FirstGroup(plugins_, &HintPlugin::VictimGroupOf, pod);
}

Status Framework::RunPreFilterExtensionAddPod(CycleState& state, const api::Pod& pod,
                                              const PodInfo& to_add, const NodeInfo& node) {
  for (const auto& entry : pre_filter_) {
    PreFilterExtensions* ext = ActiveExtensions(state, entry);
    if (ext == nullptr) continue;
    Status s = ext->AddPod(state, pod, to_add, node);
    if (!s.IsSuccess()) return AsError("running AddPod on PreFilter plugin", entry.name, s);
  }
  return {};
}

Status Framework::RunPreFilterExtensionRemovePod(CycleState& state, const api::Pod& pod,
                                                 const PodInfo& to_remove, const NodeInfo& node) {
  for (const auto& entry : pre_filter_) {
    PreFilterExtensions* ext = ActiveExtensions(state, entry);
    if (ext == nullptr) continue;
    Status s = ext->RemovePod(state, pod, to_remove, node);
    if (!s.IsSuccess()) return AsError("running RemovePod on PreFilter plugin", entry.name, s);
  }
  return {};
}

PreFilterExtensions* Framework::ActiveExtensions(const CycleState& state,
                                                 const Entry<PreFilterPlugin>& entry) {
  // Most plugins have no extensions: asking that first spares a lookup in the skipped set for
  // each of them, which a gang's placement simulation repeats for every pod it has placed.
  PreFilterExtensions* ext = entry.plugin->Extensions();
  return ext == nullptr || state.skip_filter_plugins.contains(entry.name) ? nullptr : ext;
}

bool Framework::HasActivePreFilterExtensions(const CycleState& state) const {
  return std::any_of(pre_filter_.begin(), pre_filter_.end(),
                     [&](const auto& entry) { return ActiveExtensions(state, entry) != nullptr; });
}

bool Framework::FilterSkipped(const CycleState& state, size_t plugin) const {
  // The flags are the set's summary when PreFilter ran on this state; a caller that filled the
  // set by hand (or changed it since) is read from the set.
  if (state.filter_skipped.size() == filter_.size()) return state.filter_skipped[plugin] != 0;
  return state.skip_filter_plugins.contains(filter_[plugin].name);
}

Status Framework::RunFilterPlugins(const CycleState& state, const api::Pod& pod,
                                   const NodeInfo& node, int node_index) {
  PluginLap lap(TimeNode(state, node_index));
  for (size_t i = 0; i < filter_.size(); i++) {
    const auto& [name, plugin, metrics] = filter_[i];
    if (FilterSkipped(state, i)) continue;
    Status s = plugin->Filter(state, pod, node);
    lap.Record(metrics, s);
    if (s.IsSuccess()) continue;
    if (!s.IsRejected()) return AsError("running filter plugin", name, s);
    s.WithPlugin(name);
    return s;
  }
  return {};
}

Status Framework::RunFilterPluginsWithNominatedPods(const CycleState& state, const api::Pod& pod,
                                                    const NodeInfo& node, int node_index) {
  std::vector<PodInfoPtr> nominated;
  for (auto& p : deps_.nominator->NominatedPodsForNode(node.name())) {
    if (p->pod->meta.uid != pod.meta.uid && p->pod->spec.priority >= pod.spec.priority) {
      nominated.push_back(std::move(p));
    }
  }
  if (nominated.empty()) return RunFilterPlugins(state, pod, node, node_index);
  // With the nominated pods first: the pod must not take room they were promised...
  auto state_with = state.Clone();
  auto node_with = node.Clone();
  for (const auto& p : nominated) {
    node_with->AddPod(p);
    Status s = RunPreFilterExtensionAddPod(*state_with, pod, *p, *node_with);
    if (!s.IsSuccess()) return s;
  }
  Status status = RunFilterPlugins(*state_with, pod, *node_with, node_index);
  if (!status.IsSuccess()) return status;
  // ...and must also fit without them, since they may never land there.
  return RunFilterPlugins(state, pod, node, node_index);
}

void Framework::RunFilterPluginsOnNodes(const CycleState& state, const api::Pod& pod,
                                        std::span<const NodeInfo* const> nodes, int first_index,
                                        std::span<Status> statuses) {
  if (deps_.nominator->HasNominatedPods()) {
    for (size_t i = 0; i < nodes.size(); i++) {
      Status s = RunFilterPluginsWithNominatedPods(state, pod, *nodes[i],
                                                   first_index + static_cast<int>(i));
      if (!s.IsSuccess()) statuses[i] = std::move(s);
    }
    return;
  }
  // Per-thread scratch, grown once. `left` holds the positions in `nodes` that every plugin so far
  // passed, `left_nodes` the same nodes; `plugin_statuses` is what one plugin returns for them.
  thread_local std::vector<size_t> left_scratch;
  thread_local std::vector<const NodeInfo*> left_nodes_scratch;
  thread_local std::vector<Status> plugin_statuses_scratch;
  std::vector<size_t>& left = left_scratch;
  std::vector<const NodeInfo*>& left_nodes = left_nodes_scratch;
  std::vector<Status>& plugin_statuses = plugin_statuses_scratch;
  left.resize(nodes.size());
  left_nodes.assign(nodes.begin(), nodes.end());
  for (size_t i = 0; i < nodes.size(); i++) left[i] = i;
  if (plugin_statuses.size() < nodes.size()) plugin_statuses.resize(nodes.size());

  // In a sampled cycle plugins are timed on the nodes whose pass position is a multiple of
  // kTimedNodeStride, as RunFilterPlugins does; here by timing the plugin's call over the run and
  // recording its mean per node, with the timed node's own status.
  const int next_timed = (first_index + kTimedNodeStride - 1) / kTimedNodeStride * kTimedNodeStride;
  const bool timed =
      state.record_plugin_metrics && next_timed < first_index + static_cast<int>(nodes.size());
  const size_t timed_position = static_cast<size_t>(next_timed - first_index);

  for (size_t p = 0; p < filter_.size() && !left.empty(); p++) {
    const auto& [name, plugin, metrics] = filter_[p];
    if (FilterSkipped(state, p)) continue;
    const Clock::time_point start = timed ? Clock::now() : Clock::time_point();
    const std::span<Status> out(plugin_statuses.data(), left.size());
    plugin->FilterNodes(state, pod, left_nodes, out);
    if (timed) {
      const double seconds = Since(start) / static_cast<double>(left.size());
      for (size_t j = 0; j < left.size(); j++) {
        if (left[j] == timed_position) metrics->ObserveDuration(out[j], seconds);
      }
    }
    // Most runs lose no node to a plugin; the list is compacted from the first one lost.
    size_t kept = 0;
    while (kept < left.size() && out[kept].IsSuccess()) kept++;
    for (size_t j = kept; j < left.size(); j++) {
      Status& s = out[j];
      if (s.IsSuccess()) {
        left[kept] = left[j];
        left_nodes[kept] = left_nodes[j];
        kept++;
        continue;
      }
      Status& dest = statuses[left[j]];
      if (s.IsRejected()) {
        dest = std::move(s.WithPlugin(name));
      } else {
        dest = AsError("running filter plugin", name, s);
      }
      s = Status();
    }
    left.resize(kept);
    left_nodes.resize(kept);
  }
}

Status Framework::RunPostFilterPlugins(CycleState& state, const api::Pod& pod,
                                       const NodeToStatus& statuses, PostFilterResult* result) {
  auto start = Clock::now();
  std::vector<std::string> reasons;
  std::string rejector;
  std::string silent_rejector;
  Status out;
  bool decided = false;
  for (const auto& [name, plugin, metrics] : post_filter_) {
    PostFilterResult r;
    Status s = plugin->PostFilter(state, pod, statuses, &r);
    if (s.IsSuccess()) {
      *result = std::move(r);
      out = std::move(s);
      decided = true;
      break;
    }
    if (s.code() == Code::kUnschedulableAndUnresolvable) {
      out = std::move(s.WithPlugin(name));
      decided = true;
      break;
    }
    if (!s.IsRejected()) {
      out = AsError("running PostFilter plugin", name, s);
      decided = true;
      break;
    }
    if (!r.nominated_node_name.empty() || r.clear_nomination) *result = std::move(r);
    // The rejector is the first plugin that said why; one rejecting without a reason (a plugin
    // with nothing to do for this pod) is named only when none did.
    if (rejector.empty() && !s.reasons().empty()) rejector = name;
    if (silent_rejector.empty()) silent_rejector = name;
    reasons.insert(reasons.end(), s.reasons().begin(), s.reasons().end());
  }
  if (!decided) {
    out = Status(Code::kUnschedulable, std::move(reasons));
    out.WithPlugin(rejector.empty() ? silent_rejector : rejector);
  }
  Observe(Point::kPostFilter, out, start);
  return out;
}

Status Framework::RunPreScorePlugins(CycleState& state, const api::Pod& pod,
                                     std::span<const NodeInfo* const> nodes) {
  auto start = Clock::now();
  Status out;
  for (const auto& [name, plugin, metrics] : pre_score_) {
    auto plugin_start = PluginStart(state);
    Status s = plugin->PreScore(state, pod, nodes);
    ObservePlugin(state, metrics, s, plugin_start);
    if (!state.dry_run) metrics->AddEvaluations(1);
    if (s.IsSkip()) {
      state.skip_score_plugins.insert(name);
      continue;
    }
    if (!s.IsSuccess()) {
      out = AsError("running PreScore plugin", name, s);
      break;
    }
  }
  if (!state.dry_run) Observe(Point::kPreScore, out, start);
  return out;
}

Status Framework::RunScorePlugins(const CycleState& state, const api::Pod& pod,
                                  std::span<const NodeInfo* const> nodes,
                                  std::vector<NodePluginScores>* out) {
  auto start = Clock::now();
  auto observe = [&](const Status& s) {
    if (!state.dry_run) Observe(Point::kScore, s, start);
  };
  // Per-thread scratch: a cycle allocates nothing per node once these have grown. `out` is
  // reused the same way when the caller keeps it across cycles.
  // They are bound to references because the worker lambdas below must see the calling
  // thread's instances, not their own.
  thread_local std::vector<size_t> active_scratch;
  thread_local std::vector<NodeScoreList> scores_scratch;
  std::vector<size_t>& active = active_scratch;
  std::vector<NodeScoreList>& scores = scores_scratch;
  active.clear();
  for (size_t i = 0; i < score_.size(); i++) {
    if (!state.skip_score_plugins.contains(score_[i].name)) active.push_back(i);
  }
  // Sizes and buffers are read once: the loops below write through references the compiler
  // cannot tell apart from them, and would otherwise reload them for every node.
  const size_t node_count = nodes.size();
  out->resize(node_count);
  NodePluginScores* const results = out->data();
  for (size_t n = 0; n < node_count; n++) {
    NodePluginScores& entry = results[n];
    entry.name = nodes[n]->name();
    entry.scores.resize(active.size());
    entry.total = 0;
  }
  if (active.empty()) {
    observe({});
    return {};
  }

  if (!state.dry_run) {
    for (size_t k : active) score_[k].metrics->AddEvaluations(nodes.size());
  }

  // plugin -> per-node raw scores. Only NormalizeScore reads the node names.
  scores.resize(active.size());
  for (size_t k = 0; k < active.size(); k++) {
    NodeScoreList& list = scores[k];
    list.resize(nodes.size());
    if (score_[active[k]].plugin->GetScoreExtensions() == nullptr) continue;
    for (size_t n = 0; n < node_count; n++) list[n].name = results[n].name;
  }
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  Status error;
  auto fail = [&](Status s) {
    std::lock_guard lock(error_mu);
    if (!failed.exchange(true)) error = std::move(s);
  };
  // Nodes are scored in runs, each plugin once per run (ScorePlugin::ScoreNodes). Runs start at
  // multiples of kTimedNodeStride, so a sampled cycle times every plugin on each run's first node
  // as the per-node runners do: by timing the call over the run and recording its mean per node.
  const int num_nodes = static_cast<int>(nodes.size());
  const int runs = (num_nodes + kTimedNodeStride - 1) / kTimedNodeStride;
  GetParallelizer().Until(
      runs,
      [&](int run) {
        const int begin = run * kTimedNodeStride;
        const int end = std::min(num_nodes, begin + kTimedNodeStride);
        const size_t count = static_cast<size_t>(end - begin);
        // Not prefetched, unlike in Filter: these are the nodes Filter has just read.
        const std::span<const NodeInfo* const> in = nodes.subspan(begin, count);
        const bool timed = state.record_plugin_metrics;
        for (size_t k = 0; k < active.size(); k++) {
          const auto& [name, plugin, metrics] = score_[active[k]];
          const Clock::time_point plugin_start = timed ? Clock::now() : Clock::time_point();
          Status s = plugin->ScoreNodes(state, pod, in,
                                        std::span<NodeScore>(scores[k].data() + begin, count));
          if (timed) metrics->ObserveDuration(s, Since(plugin_start) / static_cast<double>(count));
          if (!s.IsSuccess()) {
            fail(AsError("running Score plugin", name, s));
            return;
          }
        }
      },
      &failed);
  if (failed) {
    observe(error);
    return error;
  }

  GetParallelizer().Until(
      static_cast<int>(active.size()),
      [&](int k) {
        const auto& [name, plugin, metrics] = score_[active[k]];
        auto* ext = plugin->GetScoreExtensions();
        if (!ext) return;
        auto plugin_start = PluginStart(state);
        Status s = ext->NormalizeScore(state, pod, scores[k]);
        ObservePlugin(state, normalize_metrics_[active[k]], s, plugin_start);
        if (!s.IsSuccess()) fail(AsError("running Normalize on Score plugin", name, s));
      },
      &failed);
  if (failed) {
    observe(error);
    return error;
  }

  static_assert(std::is_same_v<decltype(config::PluginRef::weight), int32_t>,
                "a wider plugin weight needs overflow checks in the weighted score sum");
  // Plugin by plugin, as upstream applies weights: the plugin's name and weight are read once.
  for (size_t k = 0; k < active.size(); k++) {
    const auto& name = score_[active[k]].name;
    const std::string_view plugin = name.str();
    const int64_t weight = score_weights_[active[k]];
    const NodeScore* const raw_scores = scores[k].data();
    for (size_t n = 0; n < node_count; n++) {
      const int64_t raw = raw_scores[n].score;
      if (raw < kMinNodeScore || raw > kMaxNodeScore) {
        Status s = Status::Error("plugin \"" + name.str() + "\" returns an invalid score " +
                                 std::to_string(raw) + ", it should in the range of [" +
                                 std::to_string(kMinNodeScore) + ", " +
                                 std::to_string(kMaxNodeScore) + "] after normalizing");
        s.WithPlugin(name);
        observe(s);
        return s;
      }
      NodePluginScores& node_scores = results[n];
      // Cannot overflow: raw is at most kMaxNodeScore and weights are int32 (asserted below),
      // so each term is below 2^38 and the sum over every plugin far below 2^63.
      const int64_t weighted = raw * weight;
      node_scores.scores[k] = {plugin, weighted};
      node_scores.total += weighted;
    }
  }
  observe({});
  return {};
}

std::vector<std::pair<std::string, ClusterEventWithHint>> Framework::EnqueueExtensionEvents()
    const {
  std::vector<std::pair<std::string, ClusterEventWithHint>> out;
  std::set<std::string> registered;
  for (const auto& [name, ext, metrics] : enqueue_extensions_) {
    registered.insert(name);
    for (auto& e : ext->EventsToRegister()) out.emplace_back(name, std::move(e));
  }
  // A plugin that can reject a pod but registers no events is woken by every event (upstream).
  std::set<std::string> rejectors;
  for (const auto& e : pre_enqueue_) rejectors.insert(e.name);
  for (const auto& e : pre_filter_) rejectors.insert(e.name);
  for (const auto& e : filter_) rejectors.insert(e.name);
  for (const auto& e : reserve_) rejectors.insert(e.name);
  for (const auto& e : permit_) rejectors.insert(e.name);
  for (const auto& name : rejectors) {
    if (registered.count(name)) continue;
    out.emplace_back(
        name, ClusterEventWithHint{{EventResource::kWildcard, kAll, "WildCardEvent"}, nullptr});
  }
  return out;
}

std::map<std::string, std::vector<std::string>> Framework::ListPlugins() const {
  std::map<std::string, std::vector<std::string>> out;
  auto names = [](const auto& list) {
    std::vector<std::string> v;
    v.reserve(list.size());
    for (const auto& e : list) v.push_back(e.name);
    return v;
  };
  out["PreEnqueue"] = names(pre_enqueue_);
  out["QueueSort"] = names(queue_sort_);
  out["PreFilter"] = names(pre_filter_);
  out["Filter"] = names(filter_);
  out["PostFilter"] = names(post_filter_);
  out["PreScore"] = names(pre_score_);
  std::vector<std::string> score;
  for (size_t i = 0; i < score_.size(); i++) {
    score.push_back(score_[i].name.str() + " (weight " + std::to_string(score_weights_[i]) + ")");
  }
  out["Score"] = score;
  out["Reserve"] = names(reserve_);
  out["Permit"] = names(permit_);
  out["PreBind"] = names(pre_bind_);
  out["Bind"] = names(bind_);
  out["PostBind"] = names(post_bind_);
  return out;
}

int64_t Framework::ScoreWeight(std::string_view plugin) const {
  // Scores name their plugin by a view of its interned name: the same address, most often.
  for (size_t i = 0; i < score_.size(); i++) {
    if (score_[i].name.str().data() == plugin.data()) return score_weights_[i];
  }
  for (size_t i = 0; i < score_.size(); i++) {
    if (score_[i].name.str() == plugin) return score_weights_[i];
  }
  return 0;
}

PluginPtr Framework::GetPlugin(std::string_view name) const {
  auto it = plugins_.find(name);
  return it == plugins_.end() ? nullptr : it->second;
}

const NodeInfoLister& Framework::SnapshotSharedLister() const { return *deps_.snapshot; }

EventRecorder& Framework::GetEventRecorder() { return *deps_.recorder; }
Parallelizer& Framework::GetParallelizer() { return *deps_.parallelizer; }
PodNominator& Framework::Nominator() { return *deps_.nominator; }

void Framework::Activate(const std::vector<std::string>& pod_uids) {
  if (deps_.activate && !pod_uids.empty()) deps_.activate(pod_uids);
}

PreemptionMetrics& Framework::GetPreemptionMetrics() {
  return deps_.preemption_metrics ? *deps_.preemption_metrics : kNoopPreemptionMetrics;
}

}  // namespace berth::framework::runtime
