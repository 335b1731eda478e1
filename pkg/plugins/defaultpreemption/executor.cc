#include "pkg/plugins/defaultpreemption/executor.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>

#include "pkg/client/client.h"
#include "pkg/log/log.h"
#include "pkg/util/time.h"

namespace berth::plugins::defaultpreemption {
namespace {

constexpr std::string_view kDisruptionTarget = "DisruptionTarget";
constexpr std::string_view kPreemptionByScheduler = "PreemptionByScheduler";

bool HasCondition(const api::Pod& pod, const std::string& message) {
  for (const api::Condition& c : pod.status.conditions) {
    if (c.type == kDisruptionTarget) {
      return c.status == "True" && c.reason == kPreemptionByScheduler && c.message == message;
    }
  }
  return false;
}

// Whether a write to the victim by name found it gone: deleted, or the name taken by a pod created
// since (a StatefulSet's replacement), which the uid precondition of the write turned away.
bool VictimIsGone(const client::ApiError& e) {
  switch (e.reason()) {
    case client::ErrorReason::kNotFound:
    case client::ErrorReason::kConflict:  // A DELETE's preconditions.uid did not match.
      return true;
    case client::ErrorReason::kInvalid:
      // A patch's metadata.uid differed from the pod's, which may not change: "metadata.uid:
      // Invalid value: ...: field is immutable".
      return e.server_message().find("metadata.uid") != std::string::npos;
    default:
      return false;
  }
}

client::Client& RequireClient(framework::Handle& handle) {
  client::Client* client = handle.ClientSet();
  if (client == nullptr) throw std::runtime_error("no apiserver client to evict pods with");
  return *client;
}

}  // namespace

Executor::Executor(framework::Handle& handle, std::string plugin_name,
                   informer::Lister<api::Pod> pods, int workers)
    : handle_(handle),
      plugin_name_(std::move(plugin_name)),
      pods_(pods),
      tasks_(workers, std::numeric_limits<size_t>::max()) {}

Executor::~Executor() { tasks_.Shutdown(); }

void Executor::Preempt(const api::PodPtr& preemptor, const std::string& node,
                       const std::vector<api::PodPtr>& victims) {
  std::vector<api::PodPtr> to_delete;
  for (const auto& victim : victims) {
    // Its deletion has begun: another call would change nothing.
    if (!victim->IsTerminating()) to_delete.push_back(victim);
  }
  if (to_delete.empty()) return;
  {
    std::lock_guard lock(mu_);
    preempting_.insert(preemptor->meta.uid);
  }
  tasks_.Post([this, preemptor, node, to_delete] {
    Run(preemptor, {node}, to_delete, {preemptor->meta.uid}, {});
  });
}

void Executor::PreemptGroup(const api::PodPtr& preemptor,
                            const std::vector<std::pair<api::PodPtr, std::string>>& members,
                            const std::vector<api::PodPtr>& victims) {
  std::vector<std::string> nodes;
  std::vector<std::string> held = {preemptor->meta.uid};
  std::vector<std::pair<api::PodPtr, std::string>> nominations;
  for (const auto& [member, node] : members) {
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
    if (member->meta.uid == preemptor->meta.uid) continue;
    held.push_back(member->meta.uid);
    nominations.emplace_back(member, node);
  }
  std::vector<api::PodPtr> to_delete;
  for (const auto& victim : victims) {
    if (!victim->IsTerminating()) to_delete.push_back(victim);
  }
  if (to_delete.empty()) {
    if (!nominations.empty()) {
      tasks_.Post([this, nominations] { WriteNominations(nominations); });
    }
    return;
  }
  {
    std::lock_guard lock(mu_);
    preempting_.insert(held.begin(), held.end());
  }
  tasks_.Post([this, preemptor, nodes, to_delete, held, nominations] {
    Run(preemptor, nodes, to_delete, held, nominations);
  });
}

bool Executor::WriteNominations(const std::vector<std::pair<api::PodPtr, std::string>>& pods) {
  bool ok = true;
  for (const auto& [pod, node] : pods) {
    if (pod->status.nominated_node_name == node) continue;
    try {
      // By uid: a pod created since under the member's name is not nominated.
      RequireClient(handle_).Patch(
          client::PodsResource().Path(pod->meta.namespace_, pod->meta.name, "status"),
          {{"metadata", {{"uid", pod->meta.uid}}}, {"status", {{"nominatedNodeName", node}}}},
          client::PatchType::kStrategicMerge);
    } catch (const std::exception& e) {
      log::Error("could not nominate a pod of a gang",
                 {{"pod", pod->Key()}, {"node", node}, {"err", e.what()}});
      ok = false;
    }
  }
  return ok;
}

void Executor::Run(const api::PodPtr& preemptor, const std::vector<std::string>& nodes,
                   const std::vector<api::PodPtr>& victims, const std::vector<std::string>& held,
                   const std::vector<std::pair<api::PodPtr, std::string>>& nominations) {
  bool failed = false;
  for (const std::string& node : nodes) {
    if (!ClearLowerPriorityNominations(preemptor->spec.priority, node)) failed = true;
  }
  if (!nominations.empty() && !WriteNominations(nominations)) failed = true;
  // The node a victim makes room on: the one node of a pod's preemption, a gang's victim's own.
  auto node_of = [&](const api::Pod& victim) -> const std::string& {
    return nodes.size() == 1 ? nodes.front() : victim.spec.node_name;
  };
  auto preempt = [&](const api::Pod& victim) {
    try {
      return PreemptPod(*preemptor, node_of(victim), victim);
    } catch (const std::exception& e) {
      log::Error("could not preempt a victim",
                 {{"preemptor", preemptor->Key()}, {"victim", victim.Key()}, {"err", e.what()}});
      failed = true;
      return false;
    }
  };
  for (size_t i = 0; i + 1 < victims.size() && !failed; i++) preempt(*victims[i]);
  bool last_sends_no_event = false;
  // After a failure the last victim is left, so the preemptor comes back sooner.
  if (!failed) {
    const api::Pod& last = *victims.back();
    {
      std::lock_guard lock(mu_);
      for (const std::string& uid : held) {
        last_victims_[uid] = {last.meta.namespace_, last.meta.name, last.meta.uid};
      }
    }
    last_sends_no_event = preempt(last);
  }
  {
    std::lock_guard lock(mu_);
    for (const std::string& uid : held) {
      preempting_.erase(uid);
      last_victims_.erase(uid);
    }
  }
  log::Verbose(
      2, "preemption finished",
      {{"preemptor", preemptor->Key()},
       {"node", nodes.size() == 1 ? nodes.front() : std::to_string(nodes.size()) + " nodes"},
       {"victims", std::to_string(victims.size())},
       {"result", failed ? "error" : "success"}});
  // No deletion event will bring the preemptor back: the last victim left only the scheduler's
  // memory or was gone already, or a call failed.
  if (failed || last_sends_no_event) handle_.Activate(held);
}

bool Executor::PreemptPod(const api::Pod& preemptor, const std::string& node,
                          const api::Pod& victim) {
  std::string note = "Preempted by pod " + preemptor.meta.uid + " on node " + node;
  bool in_memory = false;
  if (auto waiting = handle_.GetWaitingPod(victim.meta.uid)) {
    waiting->Reject(plugin_name_, "preempted");
    in_memory = true;
    note += " (in berth-scheduler memory).";
  } else {
    client::Client& client = RequireClient(handle_);
    const std::string message =
        preemptor.spec.scheduler_name + ": preempting to accommodate a higher priority pod";
    const client::Resource pods = client::PodsResource();
    try {
      if (!HasCondition(victim, message)) {
        nlohmann::json condition = {
            {"type", kDisruptionTarget},
            {"status", "True"},
            {"reason", kPreemptionByScheduler},
            {"message", message},
            {"lastTransitionTime", util::FormatRfc3339(std::chrono::system_clock::now())}};
        // metadata.uid in the patch is a precondition: a pod created since under the victim's
        // name is not marked.
        client.Patch(pods.Path(victim.meta.namespace_, victim.meta.name, "status"),
                     {{"metadata", {{"uid", victim.meta.uid}}},
                      {"status", {{"conditions", nlohmann::json::array({condition})}}}},
                     client::PatchType::kStrategicMerge);
      }
      // By name and uid: the client repeats a DELETE whose answer was lost, and neither that nor
      // this first one may delete a pod created since under the victim's name.
      client.Delete(pods.Path(victim.meta.namespace_, victim.meta.name),
                    client::DeleteOptions{.precondition_uid = victim.meta.uid});
    } catch (const client::ApiError& e) {
      if (!VictimIsGone(e)) throw;
      log::Verbose(2, "victim pod is already deleted",
                   {{"preemptor", preemptor.Key()},
                    {"victim", victim.Key()},
                    {"uid", victim.meta.uid},
                    {"node", node},
                    {"answer", e.what()}});
      // Its deletion event has come already, perhaps while the preemptor was held back.
      return true;
    }
    log::Verbose(2, "preemptor pod preempted victim pod",
                 {{"preemptor", preemptor.Key()}, {"victim", victim.Key()}, {"node", node}});
  }
  handle_.GetEventRecorder().Eventf(victim, "Normal", "Preempted", "Preempting", note);
  return in_memory;
}

bool Executor::ClearLowerPriorityNominations(int32_t priority, const std::string& node) {
  bool ok = true;
  for (const auto& info : handle_.Nominator().NominatedPodsForNode(node)) {
    const api::Pod& pod = *info->pod;
    // A nomination not written to the pod yet has nothing to clear.
    if (pod.spec.priority >= priority || pod.status.nominated_node_name.empty()) continue;
    try {
      RequireClient(handle_).Patch(
          client::PodsResource().Path(pod.meta.namespace_, pod.meta.name, "status"),
          {{"status", {{"nominatedNodeName", nullptr}}}}, client::PatchType::kStrategicMerge);
    } catch (const std::exception& e) {
      log::Error("could not clear the nominated node of a lower-priority pod",
                 {{"pod", pod.Key()}, {"node", node}, {"err", e.what()}});
      ok = false;
    }
  }
  return ok;
}

bool Executor::IsPodRunningPreemption(const std::string& uid) const {
  std::lock_guard lock(mu_);
  if (preempting_.count(uid) == 0) return false;
  auto last = last_victims_.find(uid);
  if (last == last_victims_.end()) return true;
  // Waiting for the last victim: done once it is gone or being deleted, even if the call that
  // deletes it has not returned yet (its deletion event may already have come and gone).
  api::PodPtr victim = pods_.Get(last->second.namespace_, last->second.name);
  // A pod created since under the victim's name is not the victim.
  return victim != nullptr && victim->meta.uid == last->second.uid && !victim->IsTerminating();
}

}  // namespace berth::plugins::defaultpreemption
