#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pkg/log/log.h"
#include "pkg/metrics/metrics.h"
#include "pkg/scheduler/scheduler.h"
#include "pkg/scheduler/unsupported_fields.h"

// The scheduling cycle: pop a pod, filter and score the snapshot's nodes, pick a host, assume the
// pod there, run Reserve and Permit, and hand it to a binding cycle. Scheduling thread only.

namespace berth::scheduler {
namespace {

using Clock = std::chrono::steady_clock;
using framework::Code;
using framework::Status;

constexpr int kMinFeasibleNodesToFind = 100;
constexpr int kMinFeasibleNodesPercentageToFind = 5;
constexpr int kBasePercentageOfNodesToScore = 50;

}  // namespace

int NumFeasibleNodesToFind(int percentage, int num_all_nodes) {
  if (num_all_nodes < kMinFeasibleNodesToFind) return num_all_nodes;
  if (percentage >= 100) return num_all_nodes;
  int adaptive = percentage;
  if (adaptive <= 0) {
    adaptive = kBasePercentageOfNodesToScore - num_all_nodes / 125;
    adaptive = std::max(adaptive, kMinFeasibleNodesPercentageToFind);
  }
  int64_t num = static_cast<int64_t>(num_all_nodes) * adaptive / 100;
  return static_cast<int>(std::max<int64_t>(num, kMinFeasibleNodesToFind));
}

bool Scheduler::ScheduleOne() {
  framework::QueuedPodInfoPtr pinfo = queue_->Pop();
  if (!pinfo) return false;
  const api::PodPtr pod = pinfo->pod_info->pod;
  auto* fwk = FrameworkFor(pod->spec.scheduler_name);
  if (!fwk || pod->IsTerminating() || cache_.IsAssumedPod(*pod)) {
    queue_->Done(pod->meta.uid);
    return true;
  }
  // Dry runs (explain, simulate) use the snapshot and the profiles between cycles, never during.
  CycleGate::CycleTurn turn(gate_);
  const auto cycle_start = Clock::now();
  stats_.attempts++;
  cycles_++;
  auto state = std::make_shared<framework::CycleState>();
  state->record_plugin_metrics =
      options_.plugin_metrics_sample_percent > 0 &&
      static_cast<int>(rng_() % 100) < options_.plugin_metrics_sample_percent;

  ScheduleResult result;
  Diagnosis diagnosis;
  groups_.Reset();
  diagnosis.groups = &groups_;
  Status status = SchedulePod(*fwk, *state, *pod, &result, &diagnosis);
  if (!status.IsSuccess()) {
    // As upstream: a failure clears the pod's nomination, unless PostFilter plugins ran and
    // decided otherwise.
    std::optional<std::string> nominated = std::string();
    explain::Verdicts verdicts;
    auto attempt = NewAttempt(*fwk, *pinfo, diagnosis, nullptr, &verdicts);
    if (status.IsRejected() && diagnosis.num_all_nodes > 0) {
      if (fwk->HasPostFilterPlugins()) {
        framework::PostFilterResult post;
        Status post_status =
            fwk->RunPostFilterPlugins(*state, *pod, diagnosis.node_to_status, &post);
        diagnosis.post_filter_msg = post_status.Message();
        nominated = std::nullopt;
        if (!post.nominated_node_name.empty() || post.clear_nomination) {
          nominated = post.nominated_node_name;
        }
        // The rest of a gang whose preemption made room for it: the nominator keeps that room
        // from pods of lower priority until the members are tried again.
        for (const auto& [member, node] : post.group_nominations) {
          queue_->nominator().AddNominatedPod(std::make_shared<framework::PodInfo>(member), node);
        }
        std::string post_text = diagnosis.post_filter_msg;
        if (post_status.IsSuccess()) {
          post_text = "nominated node " + post.nominated_node_name;
        } else if (!post_status.plugin().empty()) {
          post_text = post_status.plugin() + ": " + post_text;
        }
        attempt->post_filter = explain::Bounded(post_text);
        if (nominated) attempt->nominated_node = *nominated;
      }
      status = Status(status.code(), FitErrorMessage(diagnosis.num_all_nodes, diagnosis));
    }
    HandleSchedulingFailure(pinfo, status, status.IsRejected() ? &diagnosis : nullptr, nominated,
                            cycle_start, std::move(attempt), std::move(verdicts));
    return true;
  }
  auto attempt = NewAttempt(*fwk, *pinfo, diagnosis, &result);

  // Assume: the cache counts the pod on its node from now on, so the next cycle sees it.
  auto assumed = std::make_shared<api::Pod>(*pod);
  assumed->spec.node_name = result.host;
  assumed->status.nominated_node_name.clear();
  api::PodPtr assumed_ptr = assumed;
  Status assume = cache_.AssumePod(std::make_shared<framework::PodInfo>(assumed_ptr));
  if (!assume.IsSuccess()) {
    HandleSchedulingFailure(pinfo, assume, nullptr, "", cycle_start, std::move(attempt));
    return true;
  }
  Status reserve = fwk->RunReservePluginsReserve(*state, *assumed, result.host);
  if (!reserve.IsSuccess()) {
    fwk->RunReservePluginsUnreserve(*state, *assumed, result.host);
    cache_.ForgetPod(*assumed);
    HandleSchedulingFailure(pinfo, reserve, nullptr, "", cycle_start, std::move(attempt));
    return true;
  }
  Status permit = fwk->RunPermitPlugins(*state, *assumed, result.host);
  if (!permit.IsSuccess() && !permit.IsWait()) {
    fwk->RunReservePluginsUnreserve(*state, *assumed, result.host);
    cache_.ForgetPod(*assumed);
    if (permit.IsRejected()) pinfo->unschedulable_plugins = {permit.plugin()};
    HandleSchedulingFailure(pinfo, permit, nullptr, "", cycle_start, std::move(attempt));
    return true;
  }
  queue_->nominator().DeleteNominatedPodIfExists(*pod);

  const bool pre_bind_work = fwk->PreBindHasWork(*state, *assumed, result.host);
  util::TaskQueue* binders = pre_bind_work ? pre_binders_.get() : binders_.get();
  // A pod Permit parked waits on a binding thread for WaitOnPermit's verdict and metrics;
  // extenders bind on binding threads.
  const bool bind_without_thread =
      !pre_bind_work && deps_.extenders.empty() && fwk->GetWaitingPod(pod->meta.uid) == nullptr;
  in_flight_bindings_++;
  fwk->WhenPermitDecided(*assumed, [this, binders, bind_without_thread,
                                    binding = PendingBinding{fwk, state, pinfo, assumed_ptr, result,
                                                             cycle_start, attempt,
                                                             /*ready_to_bind=*/false}]() mutable {
    if (bind_without_thread) {
      BindWithoutThread(std::move(binding));
    } else {
      PostBindingCycle(binders, std::move(binding));
    }
  });
  return true;
}

Status Scheduler::SchedulePod(framework::runtime::Framework& fwk, framework::CycleState& state,
                              const api::Pod& pod, ScheduleResult* result, Diagnosis* diagnosis) {
  const auto algorithm_start = Clock::now();
  Status snap = cache_.UpdateSnapshot(snapshot_);
  if (!snap.IsSuccess()) return snap;
  // Every node rejects the pod (the default status of nodes never filtered), as after a PreFilter
  // rejection. The missing plugins are its rejectors: no cluster event can help, so none requeues
  // it before the periodic flush of the unschedulable pool.
  if (auto unsupported = FindUnsupportedField(pod)) {
    diagnosis->pre_filter_msg = unsupported->message;
    diagnosis->unschedulable_plugins.insert(unsupported->plugins.begin(),
                                            unsupported->plugins.end());
    diagnosis->num_all_nodes = static_cast<int>(snapshot_.NumNodes());
    diagnosis->pre_filter_note = unsupported->message;
    if (diagnosis->groups) {
      std::string plugins;
      for (const auto& p : unsupported->plugins) {
        if (!plugins.empty()) plugins += " ";
        plugins += p;
      }
      diagnosis->groups->AddMany(diagnosis->num_all_nodes, plugins,
                                 Status(Code::kUnschedulableAndUnresolvable, unsupported->message));
    }
    return Status(Code::kUnschedulableAndUnresolvable, std::vector<std::string>{});
  }
  if (snapshot_.NumNodes() == 0) {
    diagnosis->pre_filter_msg = "";
    diagnosis->pre_filter_note = "no nodes in the cluster";
    return Status(Code::kUnschedulable, "no nodes available to schedule pods");
  }
  std::vector<const framework::NodeInfo*>& feasible = feasible_nodes_;
  Status s = FindNodesThatFitPod(fwk, state, pod, diagnosis, &feasible);
  if (!s.IsSuccess()) return s;
  const int evaluated = static_cast<int>(feasible.size()) + diagnosis->filter_rejected;
  if (feasible.empty()) {
    diagnosis->num_all_nodes = static_cast<int>(snapshot_.NumNodes());
    return Status(Code::kUnschedulable, std::vector<std::string>{});
  }
  result->evaluated_nodes = evaluated;
  result->feasible_nodes = static_cast<int>(feasible.size());
  result->scored = false;
  if (feasible.size() == 1) {
    result->host = feasible.front()->name();
    if (deps_.metrics) {
      deps_.metrics->ObserveSchedulingAlgorithm(
          std::chrono::duration<double>(Clock::now() - algorithm_start).count());
    }
    if (log::V(2)) LogDecision(fwk, pod, *result, {});
    return {};
  }
  std::vector<framework::runtime::NodePluginScores>& scores = node_scores_;
  // Extenders score while the plugins do.
  PendingExtenderScores extender_scores = StartExtenderScores(deps_.extenders, pod, feasible);
  if (fwk.HasScorePlugins()) {
    Status pre = fwk.RunPreScorePlugins(state, pod, feasible);
    if (!pre.IsSuccess()) return pre;
    Status sc = fwk.RunScorePlugins(state, pod, feasible, &scores);
    if (!sc.IsSuccess()) return sc;
  } else {
    scores.clear();
    for (const auto& n : feasible) scores.push_back({n->name(), {}, 1});
  }
  AddExtenderScores(pod, extender_scores, &scores);
  SelectHost(scores, result);
  result->host = std::string(scores[result->chosen].name);
  result->scored = true;
  if (deps_.metrics) {
    deps_.metrics->ObserveSchedulingAlgorithm(
        std::chrono::duration<double>(Clock::now() - algorithm_start).count());
  }
  if (log::V(2)) LogDecision(fwk, pod, *result, scores);
  return {};
}

Status Scheduler::FindNodesThatFitPod(framework::runtime::Framework& fwk,
                                      framework::CycleState& state, const api::Pod& pod,
                                      Diagnosis* diagnosis,
                                      std::vector<const framework::NodeInfo*>* feasible) {
  feasible->clear();
  const auto& all_nodes = snapshot_.List();
  framework::PreFilterResult pre_result;
  std::vector<std::string> plugins_with_nodes;
  Status s = fwk.RunPreFilterPlugins(state, pod, all_nodes, &pre_result, &plugins_with_nodes);
  if (!s.IsSuccess()) {
    if (!s.IsRejected()) return s;
    // Every node gets the PreFilter status; the message says it once.
    diagnosis->pre_filter_msg = s.Message();
    diagnosis->pre_filter_note = "rejected by " + s.plugin() + ": " + s.Message();
    if (diagnosis->groups) {
      diagnosis->groups->AddMany(static_cast<int>(all_nodes.size()), s.plugin(), s);
    }
    diagnosis->node_to_status.set_absent_nodes_status(s);
    if (!s.plugin().empty()) {
      (s.code() == Code::kPending ? diagnosis->pending_plugins : diagnosis->unschedulable_plugins)
          .insert(s.plugin());
    }
    return {};
  }

  keep_filter_statuses_ = ExtendersFilter(deps_.extenders, pod);
  // A nominated node (from an earlier preemption) is tried first, alone, when PreFilter kept it:
  // a nomination made before a gang's domain was chosen must not take its pod out of the domain
  // (kube-scheduler likewise skips a nominated node outside the placement it evaluates).
  if (!pod.status.nominated_node_name.empty() &&
      (pre_result.AllNodes() || pre_result.node_names->contains(pod.status.nominated_node_name))) {
    if (auto nominated = snapshot_.Get(pod.status.nominated_node_name);
        nominated && nominated->node()) {
      Diagnosis scratch;
      FindNodesThatPassFilters(fwk, state, pod, &scratch, {nominated}, feasible);
      // As upstream, an extender's error here only means the node is not taken at once.
      if (!feasible->empty() && !FindNodesThatPassExtenders(pod, &scratch, feasible).IsSuccess()) {
        feasible->clear();
      }
      if (!feasible->empty()) return {};
    }
  }

  // The snapshot's list itself when PreFilter kept every node: copying it would touch every
  // node's reference count on every cycle.
  std::vector<framework::NodeInfoPtr> kept;
  const std::vector<framework::NodeInfoPtr>* nodes = &all_nodes;
  if (!pre_result.AllNodes()) {
    nodes = &kept;
    for (const auto& name : *pre_result.node_names) {
      if (auto n = snapshot_.Get(name); n && n->node()) kept.push_back(n);
    }
    // Nodes PreFilter ruled out count as unresolvable in the message, as upstream.
    std::string plugins;
    for (const auto& name : plugins_with_nodes) plugins += (plugins.empty() ? "" : " ") + name;
    diagnosis->node_to_status.set_absent_nodes_status(
        Status::Unresolvable("node(s) didn't satisfy plugin(s) [" + plugins + "]"));
    const int excluded = static_cast<int>(all_nodes.size() - kept.size());
    diagnosis->pre_filter_note = "kept " + std::to_string(kept.size()) + " of " +
                                 std::to_string(all_nodes.size()) + " nodes (" + plugins + ")";
    if (diagnosis->groups && excluded > 0) {
      // A few of the excluded nodes as examples, looked for among the first nodes only: the
      // record must not cost a pass over a large cluster.
      constexpr size_t kScanned = 64;
      std::vector<std::string_view> examples;
      for (size_t i = 0;
           i < all_nodes.size() && i < kScanned && examples.size() < explain::kExamplesPerGroup;
           i++) {
        const std::string& name = all_nodes[i]->name();
        if (!pre_result.node_names->count(name)) examples.push_back(name);
      }
      diagnosis->groups->AddMany(excluded, plugins, diagnosis->node_to_status.absent_nodes_status(),
                                 examples);
    }
  }
  FindNodesThatPassFilters(fwk, state, pod, diagnosis, *nodes, feasible);
  return FindNodesThatPassExtenders(pod, diagnosis, feasible);
}

void Scheduler::FindNodesThatPassFilters(framework::runtime::Framework& fwk,
                                         const framework::CycleState& state, const api::Pod& pod,
                                         Diagnosis* diagnosis,
                                         const std::vector<framework::NodeInfoPtr>& nodes,
                                         std::vector<const framework::NodeInfo*>* feasible) {
  feasible->clear();
  const int num_all = static_cast<int>(nodes.size());
  if (num_all == 0) return;
  const auto& profile = fwk.profile();
  int percentage = profile.percentage_of_nodes_to_score ? *profile.percentage_of_nodes_to_score
                                                        : config_.percentage_of_nodes_to_score;
  const int to_find = NumFeasibleNodesToFind(percentage, num_all);
  // The index was advanced over the snapshot's full list; `nodes` may be shorter (a nominated
  // node, or the nodes PreFilter kept).
  const int start = next_start_node_index_ % num_all;
  // Node (start + i); start and i are below num_all, so one subtraction wraps it.
  auto node_at = [&](int i) {
    const int index = start + i;
    return nodes[index < num_all ? index : index - num_all].get();
  };
  if (!fwk.HasFilterPlugins()) {
    for (int i = 0; i < to_find; i++) feasible->push_back(node_at(i));
    next_start_node_index_ = (start + to_find) % num_all;
    return;
  }
  const auto filter_start = Clock::now();
  // Nodes are filtered in batches and the shared counters move once per batch: updating them per
  // node from every worker bounced their cache line between cores on each Filter call, which
  // cost more than the plugins did.
  const int batches = (num_all + kFilterBatch - 1) / kFilterBatch;
  std::atomic<int> found{0};
  std::atomic<bool> stop{false};
  // One past the last node any batch reached: the passes below stop there instead of walking
  // every node of a large cluster when only the first few hundred were filtered.
  std::atomic<int> reached{0};
  // outcomes[i] is node (start + i)'s. Collected in index order afterwards, so the feasible list
  // (and with a seeded tie-break, the choice) does not depend on worker timing.
  auto& outcomes = filter_outcomes_;
  auto& statuses = filter_statuses_;
  outcomes.assign(num_all, FilterOutcome::kNotRun);
  if (statuses.size() < static_cast<size_t>(num_all)) statuses.resize(num_all);
  auto prefetch_batch = [&](int batch, bool node_objects) {
    if (batch >= batches) return;
    const int end = std::min(num_all, (batch + 1) * kFilterBatch);
    for (int i = batch * kFilterBatch; i < end; i++) {
      if (node_objects) {
        node_at(i)->PrefetchNode();
      } else {
        node_at(i)->Prefetch();
      }
    }
  };
  parallelizer_.Until(
      batches,
      [&](int batch) {
        const int begin = batch * kFilterBatch;
        const int end = std::min(num_all, begin + kFilterBatch);
        // Memory is asked for ahead of use: the NodeInfos two batches on and the Node objects of
        // the next batch (reading a NodeInfo's node pointer needs the NodeInfo). A thread mostly
        // takes batches in a row, so a batch's nodes are on their way by the time it is
        // filtered; the first batch of a thread's stretch asks for its own and the next one's.
        // Asking only as each batch started left the workers waiting on memory.
        thread_local int expected_batch = -1;
        if (batch != expected_batch) {
          prefetch_batch(batch, false);
          prefetch_batch(batch + 1, false);
          prefetch_batch(batch, true);
        }
        prefetch_batch(batch + 2, false);
        prefetch_batch(batch + 1, true);
        expected_batch = batch + 1;
        for (int r = reached.load(std::memory_order_relaxed);
             r < end && !reached.compare_exchange_weak(r, end, std::memory_order_relaxed);) {
        }
        int passed = 0;
        // Each plugin filters a run of nodes at a time. A run is no longer than the feasible
        // nodes still wanted, so that, as node by node, no node is filtered beyond the last one
        // needed (bar what other batches find meanwhile).
        std::array<const framework::NodeInfo*, kFilterBatch> run_nodes;
        for (int i = begin; i < end;) {
          const int wanted = to_find - found.load(std::memory_order_relaxed) - passed;
          if (wanted <= 0) break;
          const int run_end = std::min(end, i + wanted);
          for (int j = i; j < run_end; j++) {
            run_nodes[j - i] = node_at(j);
            // Entries are reused across cycles; the runner expects them successful.
            if (!statuses[j].IsSuccess()) statuses[j] = Status();
          }
          const size_t count = static_cast<size_t>(run_end - i);
          fwk.RunFilterPluginsOnNodes(
              state, pod, std::span<const framework::NodeInfo* const>(run_nodes.data(), count), i,
              std::span<Status>(statuses.data() + i, count));
          for (int j = i; j < run_end; j++) {
            if (statuses[j].IsSuccess()) {
              outcomes[j] = FilterOutcome::kPassed;
              passed++;
            } else {
              outcomes[j] = FilterOutcome::kRejected;
            }
          }
          i = run_end;
        }
        if (passed == 0) return;
        // Passes beyond to_find (other batches got there first) are dropped, from the end of
        // this batch; they are not counted as processed, so the next cycle starts at them.
        const int before = found.fetch_add(passed);
        if (before + passed < to_find) return;
        stop = true;
        int excess = before + passed - to_find;
        for (int i = end - 1; i >= begin && excess > 0; i--) {
          if (outcomes[i] != FilterOutcome::kPassed) continue;
          outcomes[i] = FilterOutcome::kOverflow;
          excess--;
        }
      },
      &stop);
  int processed = 0;
  int overflow = 0;
  const int limit = reached.load();
  for (int i = 0; i < limit; i++) {
    switch (outcomes[i]) {
      case FilterOutcome::kPassed:
        feasible->push_back(node_at(i));
        processed++;
        break;
      case FilterOutcome::kRejected:
        processed++;
        break;
      case FilterOutcome::kOverflow:
        overflow++;
        break;
      case FilterOutcome::kNotRun:
        break;
    }
  }
  next_start_node_index_ = (start + processed) % num_all;
  const int rejected = processed - static_cast<int>(feasible->size());
  diagnosis->filter_rejected += rejected;
  const bool keep_statuses = feasible->empty() || keep_filter_statuses_;
  // Only rejected nodes get an entry; reserving room for every processed node allocated (and
  // freed) a large buffer every cycle.
  if (keep_statuses) diagnosis->node_to_status.Reserve(static_cast<size_t>(rejected));
  const auto rejected_by = CollectRejections(nodes, start, limit, keep_statuses, diagnosis);
  fwk.RecordFilterPhase(
      state, feasible->empty() ? Status(Code::kUnschedulable, "no node passed Filter") : Status(),
      std::chrono::duration<double>(Clock::now() - filter_start).count(), processed + overflow,
      rejected_by);
}

std::map<std::string, int64_t> Scheduler::CollectRejections(
    const std::vector<framework::NodeInfoPtr>& nodes, int start, int limit, bool keep_statuses,
    Diagnosis* diagnosis) {
  const int num_all = static_cast<int>(nodes.size());
  framework::NodeToStatus& kept = diagnosis->node_to_status;
  explain::GroupBuilder* groups = diagnosis->groups;
  std::map<std::string, int64_t> rejected_by;
  // Consecutive rejections by one plugin with one code (interned names compare by address) are
  // tallied once; for the record's groups, each such run is remembered by where it starts, in
  // `kept` or in the pass, and grouped afterwards.
  std::vector<RejectionRun>& runs = rejection_runs_;
  runs.clear();
  const std::string* last_plugin = nullptr;
  int64_t last_count = 0;
  Code last_code = Code::kSuccess;
  auto tally = [&] {
    if (last_plugin == nullptr || last_plugin->empty()) return;
    rejected_by[*last_plugin] += last_count;
    if (last_code == Code::kPending) {
      diagnosis->pending_plugins.insert(*last_plugin);
    } else if (last_code != Code::kError) {
      diagnosis->unschedulable_plugins.insert(*last_plugin);
    }
  };
  for (int i = 0; i < limit; i++) {
    if (filter_outcomes_[i] != FilterOutcome::kRejected) continue;
    Status& s = filter_statuses_[i];
    const Code code = s.IsRejected() ? s.code() : Code::kError;
    if (&s.plugin() != last_plugin || code != last_code) {
      tally();
      last_plugin = &s.plugin();
      last_code = code;
      last_count = 0;
      if (groups != nullptr) {
        runs.push_back({last_plugin, code, keep_statuses ? kept.size() : static_cast<size_t>(i)});
      }
    }
    last_count++;
    // Errors are reported through the cycle's error path.
    if (!keep_statuses || !s.IsRejected()) continue;
    const int index = start + i;
    kept.Set(nodes[index < num_all ? index : index - num_all]->name(), std::move(s));
  }
  tally();
  if (groups != nullptr) {
    GroupRejections(nodes, start, limit, keep_statuses ? &kept : nullptr, groups);
  }
  return rejected_by;
}

namespace {

// GroupRejections over one kind of positions, so that each kind compiles to a loop of its own:
// `rejected(at)` says whether position `at` holds a rejection, `status(at)` and `name(at)` give
// its status and node.
template <typename Rejected, typename StatusAt, typename NameAt>
void GroupRuns(std::span<const Scheduler::RejectionRun> runs, size_t end, Rejected rejected,
               StatusAt status, NameAt name, explain::GroupBuilder* groups) {
  // Within a plugin's run, nodes whose statuses share their reasons (every node short of cpu)
  // join a group at once: a comparison of one address per node.
  for (size_t r = 0; r < runs.size(); r++) {
    const Scheduler::RejectionRun& run = runs[r];
    if (run.code == Code::kError) continue;
    const size_t run_end = r + 1 < runs.size() ? runs[r + 1].begin : end;
    const framework::FixedReasons* shared = nullptr;
    size_t first = 0;
    int count = 0;
    auto flush = [&] {
      if (count == 0) return;
      size_t wanted = groups->AddRun(*run.plugin, run.code, *shared, count);
      for (size_t at = first; wanted > 0 && at < run_end; at++) {
        if (!rejected(at)) continue;
        groups->AddExample(name(at));
        wanted--;
      }
      count = 0;
    };
    for (size_t at = run.begin; at < run_end; at++) {
      if (!rejected(at)) continue;
      const Status& s = status(at);
      const framework::FixedReasons* reasons = s.fixed_reasons();
      if (reasons != shared || reasons == nullptr) {
        flush();
        shared = reasons;
        first = at;
        if (reasons == nullptr) {
          groups->Add(name(at), s);
          continue;
        }
      }
      count++;
    }
    flush();
  }
}

}  // namespace

void Scheduler::GroupRejections(const std::vector<framework::NodeInfoPtr>& nodes, int start,
                                int limit, const framework::NodeToStatus* kept,
                                explain::GroupBuilder* groups) const {
  if (kept != nullptr) {
    // Positions are entries of `kept`, all rejections.
    const auto& entries = kept->entries();
    GroupRuns(
        rejection_runs_, entries.size(), [](size_t) { return true; },
        [&](size_t at) -> const Status& { return entries[at].status; },
        [&](size_t at) { return entries[at].node; }, groups);
    return;
  }
  // Positions are indexes of the pass.
  const int num_all = static_cast<int>(nodes.size());
  GroupRuns(
      rejection_runs_, static_cast<size_t>(limit),
      [&](size_t at) { return filter_outcomes_[at] == FilterOutcome::kRejected; },
      [&](size_t at) -> const Status& { return filter_statuses_[at]; },
      [&](size_t at) -> std::string_view {
        const int index = start + static_cast<int>(at);
        return nodes[index < num_all ? index : index - num_all]->name();
      },
      groups);
}

std::shared_ptr<explain::Attempt> Scheduler::NewAttempt(const framework::runtime::Framework& fwk,
                                                        const framework::QueuedPodInfo& pinfo,
                                                        const Diagnosis& diagnosis,
                                                        const ScheduleResult* result,
                                                        explain::Verdicts* verdicts) {
  auto attempt = std::make_shared<explain::Attempt>();
  const api::Pod& pod = pinfo.pod();
  attempt->pod = pod.Key();
  attempt->uid = pod.meta.uid;
  attempt->profile = fwk.ProfileName();
  attempt->time = std::chrono::system_clock::now();
  attempt->attempt = pinfo.attempts;
  attempt->pod_object = pinfo.pod_info->pod;
  attempt->num_nodes = static_cast<int>(snapshot_.NumNodes());
  attempt->pre_filter = explain::Bounded(diagnosis.pre_filter_note);
  if (diagnosis.groups && verdicts != nullptr) {
    *verdicts = diagnosis.groups->Take();
  } else if (diagnosis.groups) {
    diagnosis.groups->Build(attempt.get());
  }
  if (result == nullptr) {
    attempt->evaluated = diagnosis.filter_rejected;
    return attempt;
  }
  attempt->outcome = explain::Outcome::kBound;
  attempt->node = result->host;
  attempt->evaluated = result->evaluated_nodes;
  attempt->feasible = result->feasible_nodes;
  if (result->scored) {
    RecordScores(fwk, node_scores_, result->chosen,
                 std::span<const size_t>(result->others.data(), result->num_others), attempt.get());
  }
  return attempt;
}

void RecordScores(const framework::runtime::Framework& fwk,
                  const std::vector<framework::runtime::NodePluginScores>& scores, size_t chosen,
                  std::span<const size_t> others, explain::Attempt* attempt) {
  if (chosen >= scores.size()) return;
  // A plugin's weight, or an extender's (its scores are listed under its name).
  auto weight_of = [&](std::string_view name) {
    const int64_t weight = fwk.ScoreWeight(name);
    if (weight != 0) return weight;
    for (const auto& e : fwk.Extenders()) {
      if (e->Name().str() == name) return e->Weight();
    }
    return weight;
  };
  // Every scored node lists the same plugins in the same order: weights are looked up once.
  const auto& plugins = scores[chosen].scores;
  std::array<int64_t, 32> weights{};
  const bool cached = plugins.size() <= weights.size();
  if (cached) {
    for (size_t i = 0; i < plugins.size(); i++) weights[i] = weight_of(plugins[i].plugin);
  }
  auto add = [&](const framework::runtime::NodePluginScores& s) {
    explain::NodeScores& out = attempt->scores.emplace_back();
    out.node = std::string(s.name);
    out.total = s.total;
    out.plugins.reserve(s.scores.size());
    for (size_t i = 0; i < s.scores.size(); i++) {
      const int64_t weight =
          cached && i < plugins.size() ? weights[i] : weight_of(s.scores[i].plugin);
      out.plugins.push_back({s.scores[i].plugin, weight, s.scores[i].score});
    }
  };
  attempt->scores.reserve(1 + others.size());
  add(scores[chosen]);
  for (size_t i : others) {
    if (i < scores.size()) add(scores[i]);
  }
}

void Scheduler::SelectHost(const std::vector<framework::runtime::NodePluginScores>& scores,
                           ScheduleResult* result) {
  // Each node with the top score is chosen with equal probability, as upstream's reservoir
  // sampling does, but with one random number per cycle instead of one per tied node: with
  // hundreds of equal scores, a number per tie made the generator costly. The same pass keeps the
  // best few nodes for the attempt's record, a comparison per node.
  constexpr size_t kKept = explain::kAlternatives + 1;
  std::array<size_t, kKept> best{};
  std::array<int64_t, kKept> best_total{};
  size_t num_best = 0;
  // The lowest kept total once kKept are kept: most nodes fall at or below it.
  int64_t floor = std::numeric_limits<int64_t>::min();
  int64_t max_score = scores.front().total;
  uint64_t ties = 0;
  for (size_t i = 0; i < scores.size(); i++) {
    const int64_t total = scores[i].total;
    if (total > max_score) {
      max_score = total;
      ties = 1;
    } else if (total == max_score) {
      ties++;
    }
    if (total <= floor) continue;
    size_t at = num_best < kKept ? num_best++ : kKept - 1;
    while (at > 0 && best_total[at - 1] < total) {
      best[at] = best[at - 1];
      best_total[at] = best_total[at - 1];
      at--;
    }
    best[at] = i;
    best_total[at] = total;
    if (num_best == kKept) floor = best_total[kKept - 1];
  }
  uint64_t pick = ties > 1 ? rng_() % ties : 0;
  result->chosen = 0;
  for (size_t i = 0; i < scores.size(); i++) {
    if (scores[i].total != max_score) continue;
    if (pick == 0) {
      result->chosen = i;
      break;
    }
    pick--;
  }
  result->num_others = 0;
  for (size_t k = 0; k < num_best && result->num_others < result->others.size(); k++) {
    if (best[k] != result->chosen) result->others[result->num_others++] = best[k];
  }
}

void Scheduler::LogDecision(const framework::runtime::Framework& fwk, const api::Pod& pod,
                            const ScheduleResult& result,
                            const std::vector<framework::runtime::NodePluginScores>& scores) {
  std::vector<const framework::runtime::NodePluginScores*> top;
  const framework::runtime::NodePluginScores* chosen = nullptr;
  for (const auto& s : scores) {
    if (s.name == result.host) {
      chosen = &s;
    } else {
      top.push_back(&s);
    }
  }
  const auto n = static_cast<std::ptrdiff_t>(std::min<size_t>(3, top.size()));
  std::partial_sort(top.begin(), top.begin() + n, top.end(),
                    [](auto* a, auto* b) { return a->total > b->total; });
  std::string alternatives;
  for (std::ptrdiff_t i = 0; i < n; i++) {
    if (i) alternatives += ",";
    alternatives.append(top[i]->name).append("=").append(std::to_string(top[i]->total));
  }
  log::Verbose(2, "scheduling decision",
               {{"pod", pod.Key()},
                {"profile", fwk.ProfileName()},
                {"node", result.host},
                {"score", chosen ? std::to_string(chosen->total) : "n/a"},
                {"feasible", std::to_string(result.feasible_nodes)},
                {"evaluated", std::to_string(result.evaluated_nodes)},
                {"alternatives", alternatives}});
}

}  // namespace berth::scheduler
