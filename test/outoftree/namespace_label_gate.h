#ifndef BERTH_TEST_OUTOFTREE_NAMESPACE_LABEL_GATE_H_
#define BERTH_TEST_OUTOFTREE_NAMESPACE_LABEL_GATE_H_

// An example out-of-tree plugin that reads a resource the scheduler itself never watches: it
// admits a pod only when the pod's Namespace carries a configured label. It asks the Handle for a
// Namespace lister (which is what starts the Namespace informer) and registers Namespace events,
// so a pod it rejected is retried when its namespace gains the label. Nothing outside this file
// pair and its registration knows about it.

#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/framework/interface.h"
#include "pkg/informer/lister.h"

namespace berth::example {

inline constexpr std::string_view kNamespaceLabelGateName = "NamespaceLabelGate";

class NamespaceLabelGate : public framework::PreFilterPlugin, public framework::EnqueueExtensions {
 public:
  NamespaceLabelGate(std::string label, informer::Lister<api::Namespace> namespaces)
      : label_(std::move(label)), namespaces_(namespaces) {}
  std::string_view Name() const override { return kNamespaceLabelGateName; }
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const std::vector<framework::NodeInfoPtr>& nodes,
                              framework::PreFilterResult* result) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

 private:
  bool Admits(const api::Namespace& ns) const { return ns.meta.labels.Contains(label_); }

  std::string label_;
  informer::Lister<api::Namespace> namespaces_;
};

// args: {"label": "<required namespace label key>"}.
framework::PluginPtr NewNamespaceLabelGate(const nlohmann::json& args, framework::Handle& handle);

}  // namespace berth::example

#endif  // BERTH_TEST_OUTOFTREE_NAMESPACE_LABEL_GATE_H_
