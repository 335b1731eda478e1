#ifndef BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_EXECUTOR_H_
#define BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_EXECUTOR_H_

// Carries a preemption out off the scheduling thread, as kube-scheduler's asynchronous
// preemption does: lower-priority pods nominated to the node lose their nomination, then every
// victim gets the DisruptionTarget condition and is deleted (a victim waiting in Permit is
// rejected instead). While that runs the preemptor is held back from scheduling (PreEnqueue); it
// is retried when the deletions arrive as cluster events, or at once when an API call failed or
// no deletion will come.

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "pkg/api/types.h"
#include "pkg/framework/interface.h"
#include "pkg/informer/lister.h"
#include "pkg/util/task_queue.h"

namespace berth::plugins::defaultpreemption {

// Thread-safe. Its tasks run on its own threads and use the Handle's client, waiting pods,
// nominator, event recorder and Activate; the destructor waits for them.
class Executor {
 public:
  Executor(framework::Handle& handle, std::string plugin_name, informer::Lister<api::Pod> pods,
           int workers = 8);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Starts preempting `victims` on `node` for `preemptor` and returns. Victims already being
  // deleted are left alone; when that leaves none, nothing runs.
  void Preempt(const api::PodPtr& preemptor, const std::string& node,
               const std::vector<api::PodPtr>& victims);

  // A gang's preemption for `preemptor` (the cycle's pod): `members` are the gang's pods the dry
  // run placed, each with its node. The preemptor and every member are held back while it runs;
  // lower-priority pods lose their nominations to the members' nodes, the members other than the
  // preemptor get theirs written (status.nominatedNodeName; the scheduler writes the
  // preemptor's), and then every victim is evicted as Preempt evicts. Victims already being
  // deleted are left alone; when that leaves none, only the nominations are written.
  void PreemptGroup(const api::PodPtr& preemptor,
                    const std::vector<std::pair<api::PodPtr, std::string>>& members,
                    const std::vector<api::PodPtr>& victims);

  // Whether the pod's preemption still runs: it has not reached its last victim yet, or that
  // victim is still there and not being deleted.
  bool IsPodRunningPreemption(const std::string& uid) const;

  // Blocks until every preemption started so far has finished (tests).
  void Drain() { tasks_.Drain(); }

 private:
  // Evicts one victim; true when no deletion event will follow: it was evicted in memory only (a
  // pod waiting in Permit), or it was gone already (deleted, or its name taken by a new pod, which
  // is left alone), its deletion event perhaps come while the preemptor was held back. Throws what
  // the API calls throw otherwise.
  bool PreemptPod(const api::Pod& preemptor, const std::string& node, const api::Pod& victim);
  // Clears status.nominatedNodeName of the pods of lower priority than `priority` nominated to
  // `node`; false when a patch failed.
  bool ClearLowerPriorityNominations(int32_t priority, const std::string& node);
  // Writes status.nominatedNodeName of each pod; false when a patch failed.
  bool WriteNominations(const std::vector<std::pair<api::PodPtr, std::string>>& pods);
  // Clears lower-priority nominations to `nodes` and writes `nominations`, then evicts `victims`
  // (not empty) for `preemptor`, and ends the hold on `held`. A victim's event names the node it
  // made room on: `nodes`' only one, or for a gang (several nodes) the victim's own.
  void Run(const api::PodPtr& preemptor, const std::vector<std::string>& nodes,
           const std::vector<api::PodPtr>& victims, const std::vector<std::string>& held,
           const std::vector<std::pair<api::PodPtr, std::string>>& nominations);

  framework::Handle& handle_;
  const std::string plugin_name_;
  const informer::Lister<api::Pod> pods_;

  mutable std::mutex mu_;
  // Uids of the preemptors whose preemption runs.
  std::unordered_set<std::string> preempting_;
  // The last victim of a preemption, once the others are done.
  struct LastVictim {
    std::string namespace_;
    std::string name;
    std::string uid;
  };
  // Preemptor uid -> its last victim.
  std::unordered_map<std::string, LastVictim> last_victims_;

  // Declared last: destroyed (joined) first, while the members its tasks use still exist.
  util::TaskQueue tasks_;
};

}  // namespace berth::plugins::defaultpreemption

#endif  // BERTH_PKG_PLUGINS_DEFAULTPREEMPTION_EXECUTOR_H_
