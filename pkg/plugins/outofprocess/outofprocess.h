#ifndef BERTH_PKG_PLUGINS_OUTOFPROCESS_OUTOFPROCESS_H_
#define BERTH_PKG_PLUGINS_OUTOFPROCESS_OUTOFPROCESS_H_

// OutOfProcess: extension points served by HTTP(S) endpoints outside the scheduler, configured
// through pluginConfig (so the file stays a valid kube-scheduler configuration). Each endpoint
// serves the points it names; the protocol is in protocol.h and docs/extending.md.
//
// Cost: one call per endpoint per point per pod, never one per node. PreFilter asks the PreFilter
// and Filter endpoints at once (Filter with every candidate node) and keeps the per-node verdicts
// in the CycleState, which Filter reads; PreScore asks the Score endpoints with the feasible nodes
// and Score reads the result. A point no endpoint serves does nothing: PreFilter and PreScore
// return Skip, PreBindPreFlight says there is no work, and the rest return at once.
//
// Failures are never silent: a call that fails (no answer, a timeout, an error status, a
// malformed answer) fails the pod's cycle with the endpoint named, unless the endpoint is
// ignorable, when it is logged and counted and the endpoint has no say. PostBind and Unreserve
// failures are only logged and counted. Permit's "wait" parks the pod; PermitPoller asks the
// endpoint again off the scheduling thread until it decides or the wait runs out.
//
// Thread-safety: PreFilter, PreScore, Reserve and Permit run on the scheduling thread, Filter
// and Score on its workers (reading the CycleState only), Unreserve, PreBind and PostBind on
// binding threads; the endpoints and the poller are thread-safe.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/framework/interface.h"
#include "pkg/plugins/outofprocess/args.h"
#include "pkg/plugins/outofprocess/endpoint.h"
#include "pkg/plugins/outofprocess/permit_poller.h"

namespace berth::plugins::outofprocess {

inline constexpr std::string_view kName = "OutOfProcess";

class OutOfProcess final : public framework::PreFilterPlugin,
                           public framework::FilterPlugin,
                           public framework::PreScorePlugin,
                           public framework::ScorePlugin,
                           public framework::ReservePlugin,
                           public framework::PermitPlugin,
                           public framework::PreBindPlugin,
                           public framework::PostBindPlugin {
 public:
  // Throws std::invalid_argument for an endpoint whose TLS files cannot be read or whose URL or
  // TLS material the client refuses.
  OutOfProcess(const Args& args, framework::Handle& handle);
  ~OutOfProcess() override;

  std::string_view Name() const override { return kName; }

  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             std::span<const framework::NodeInfo* const> nodes) override;
  framework::Status Score(const framework::CycleState& state, const api::Pod& pod,
                          const framework::NodeInfo& node, int64_t* score) override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const std::string& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod,
                 const std::string& node) override;
  framework::Status Permit(framework::CycleState& state, const api::Pod& pod,
                           const std::string& node, std::chrono::milliseconds* timeout) override;
  framework::Status PreBindPreFlight(framework::CycleState& state, const api::Pod& pod,
                                     const std::string& node) override;
  framework::Status PreBind(framework::CycleState& state, const api::Pod& pod,
                            const std::string& node) override;
  void PostBind(framework::CycleState& state, const api::Pod& pod,
                const std::string& node) override;

  // For tests: pods whose Permit wait is being polled.
  size_t PollingFor() const { return poller_ ? poller_->size() : 0; }

 private:
  // The endpoints serving `point`, in configuration order.
  const std::vector<const Endpoint*>& At(Point point) const {
    return by_point_[static_cast<size_t>(point)];
  }
  // Calls every endpoint serving `point` with `verb` about the pod on `node`, all at once, and
  // returns their replies in At(point)'s order.
  std::vector<Endpoint::Reply> CallAll(Point point, Verb verb, const api::Pod& pod,
                                       const std::string& node) const;
  // A verdict on the pod from the endpoints serving `point` (reserve, prebind): the first failure
  // of a non-ignorable endpoint is an error, the first rejection a rejection.
  framework::Status Verdicts(Point point, Verb verb, const api::Pod& pod,
                             const std::string& node) const;

  framework::Handle& handle_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::array<std::vector<const Endpoint*>, kPoints> by_point_;
  // Only when an endpoint serves Permit.
  std::unique_ptr<PermitPoller> poller_;
};

framework::PluginPtr New(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::plugins::outofprocess

#endif  // BERTH_PKG_PLUGINS_OUTOFPROCESS_OUTOFPROCESS_H_
