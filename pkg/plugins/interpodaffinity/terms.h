#ifndef BERTH_PKG_PLUGINS_INTERPODAFFINITY_TERMS_H_
#define BERTH_PKG_PLUGINS_INTERPODAFFINITY_TERMS_H_

// Pod (anti-)affinity terms as the scheduler evaluates them, with upstream's AffinityTerm
// semantics: a term matches a pod when the pod's namespace is one of the term's namespaces or the
// namespace's labels match the term's namespaceSelector, and the pod's labels match the term's
// labelSelector. A nil labelSelector or nil namespaceSelector matches nothing; an empty one
// everything. With neither namespaces nor a namespaceSelector, the term is about the namespace of
// the pod that states it.
//
// matchLabelKeys / mismatchLabelKeys are not read: since they went GA the apiserver merges them
// into labelSelector when the pod is created, so the selector already carries them, and
// kube-scheduler's plugin reads only labelSelector too.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/api/resources.h"
#include "pkg/api/types.h"
#include "pkg/informer/lister.h"

namespace berth::plugins::interpodaffinity {

// Whether `term`, stated by a pod of namespace `owner_namespace`, matches `target`, whose
// namespace has labels `namespace_labels` (null: none known).
bool TermMatches(const api::PodAffinityTerm& term, std::string_view owner_namespace,
                 const api::Pod& target, const api::Labels* namespace_labels);

// A term of the pod being scheduled, compiled once per cycle: its namespaceSelector is resolved
// into namespace names through the Namespace lister (or stands for every namespace when empty),
// so matching it against other pods needs no namespace labels. Points into the pod's spec: valid
// while the pod lives.
struct IncomingTerm {
  const api::LabelSelector* selector = nullptr;  // Null: matches nothing.
  std::vector<std::string> namespaces;
  bool all_namespaces = false;
  // A non-empty namespaceSelector left unresolved (no lister given, as in queueing hints, which
  // upstream evaluates against no namespace labels at all).
  const api::LabelSelector* namespace_selector = nullptr;
  std::string_view topology_key;
  int32_t weight = 0;

  bool Matches(const api::Pod& pod) const;
  // Appends a canonical description to `out`: equal descriptions match the same pods.
  void AppendSignature(std::string* out) const;
};

// Compiles `terms` of `pod`; `namespaces` resolves non-empty namespaceSelectors (when null they
// are matched against an empty label set).
std::vector<IncomingTerm> CompileTerms(const api::Pod& pod,
                                       const std::vector<api::PodAffinityTerm>& terms,
                                       const informer::Lister<api::Namespace>* namespaces);
std::vector<IncomingTerm> CompileWeightedTerms(
    const api::Pod& pod, const std::vector<api::WeightedPodAffinityTerm>& terms,
    const informer::Lister<api::Namespace>* namespaces);

// True when `terms` is not empty and `pod` matches every one (affinity asks for one pod that
// satisfies all its terms at once).
bool MatchesAll(const std::vector<IncomingTerm>& terms, const api::Pod& pod);
bool MatchesAny(const std::vector<IncomingTerm>& terms, const api::Pod& pod);

// The pod's required / preferred (anti-)affinity terms; empty when it has none.
const std::vector<api::PodAffinityTerm>& RequiredAffinity(const api::Pod& pod);
const std::vector<api::PodAffinityTerm>& RequiredAntiAffinity(const api::Pod& pod);
const std::vector<api::WeightedPodAffinityTerm>& PreferredAffinity(const api::Pod& pod);
const std::vector<api::WeightedPodAffinityTerm>& PreferredAntiAffinity(const api::Pod& pod);

// Appends a canonical description of a label set.
void AppendLabelsSignature(const api::Labels& labels, std::string* out);

}  // namespace berth::plugins::interpodaffinity

#endif  // BERTH_PKG_PLUGINS_INTERPODAFFINITY_TERMS_H_
