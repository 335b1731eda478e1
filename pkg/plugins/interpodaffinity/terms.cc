#include "pkg/plugins/interpodaffinity/terms.h"

#include <algorithm>

namespace berth::plugins::interpodaffinity {
namespace {

const api::Labels& NoLabels() {
  static const api::Labels kEmpty;
  return kEmpty;
}

IncomingTerm Compile(const api::Pod& pod, const api::PodAffinityTerm& term,
                     const informer::Lister<api::Namespace>* namespaces) {
  IncomingTerm out;
  out.selector = term.label_selector ? &*term.label_selector : nullptr;
  out.topology_key = term.topology_key;
  if (term.namespaces.empty() && !term.namespace_selector) {
    out.namespaces.push_back(pod.meta.namespace_);
  } else {
    out.namespaces = term.namespaces;
  }
  if (term.namespace_selector) {
    if (term.namespace_selector->Empty()) {
      out.all_namespaces = true;
    } else if (namespaces == nullptr) {
      out.namespace_selector = &*term.namespace_selector;
    } else {
      const api::LabelSelector& selector = *term.namespace_selector;
      for (const auto& ns : namespaces->ListIf(
               [&](const api::Namespace& n) { return selector.Matches(n.meta.labels); })) {
        out.namespaces.push_back(ns->meta.name);
      }
    }
  }
  std::sort(out.namespaces.begin(), out.namespaces.end());
  out.namespaces.erase(std::unique(out.namespaces.begin(), out.namespaces.end()),
                       out.namespaces.end());
  return out;
}

void AppendField(std::string_view text, std::string* out) {
  out->append(std::to_string(text.size()));
  out->push_back(':');
  out->append(text);
}

}  // namespace

bool TermMatches(const api::PodAffinityTerm& term, std::string_view owner_namespace,
                 const api::Pod& target, const api::Labels* namespace_labels) {
  bool namespace_ok;
  if (term.namespaces.empty() && !term.namespace_selector) {
    namespace_ok = target.meta.namespace_ == owner_namespace;
  } else {
    namespace_ok = std::find(term.namespaces.begin(), term.namespaces.end(),
                             target.meta.namespace_) != term.namespaces.end() ||
                   (term.namespace_selector &&
                    term.namespace_selector->Matches(namespace_labels != nullptr ? *namespace_labels
                                                                                 : NoLabels()));
  }
  return namespace_ok && term.label_selector && term.label_selector->Matches(target.meta.labels);
}

bool IncomingTerm::Matches(const api::Pod& pod) const {
  if (selector == nullptr) return false;
  if (!all_namespaces) {
    bool found = false;
    for (const std::string& ns : namespaces) {
      if (ns == pod.meta.namespace_) {
        found = true;
        break;
      }
    }
    if (!found && (namespace_selector == nullptr || !namespace_selector->Matches(NoLabels()))) {
      return false;
    }
  }
  return selector->Matches(pod.meta.labels);
}

void IncomingTerm::AppendSignature(std::string* out) const {
  AppendField(topology_key, out);
  out->push_back(all_namespaces ? 'A' : 'N');
  // Only compiled with a lister, where the selector is resolved.
  out->push_back(namespace_selector != nullptr ? 'U' : '-');
  out->append(std::to_string(namespaces.size()));
  for (const std::string& ns : namespaces) AppendField(ns, out);
  if (selector == nullptr) {
    out->push_back('-');
  } else {
    out->push_back('S');
    out->append(std::to_string(selector->requirements.size()));
    for (const api::Requirement& r : selector->requirements) {
      AppendField(r.key, out);
      out->push_back(static_cast<char>('0' + static_cast<int>(r.op)));
      out->append(std::to_string(r.values.size()));
      for (const std::string& v : r.values) AppendField(v, out);
      out->append(std::to_string(r.number));
    }
  }
  out->push_back('w');
  out->append(std::to_string(weight));
  out->push_back(';');
}

std::vector<IncomingTerm> CompileTerms(const api::Pod& pod,
                                       const std::vector<api::PodAffinityTerm>& terms,
                                       const informer::Lister<api::Namespace>* namespaces) {
  std::vector<IncomingTerm> out;
  out.reserve(terms.size());
  for (const api::PodAffinityTerm& term : terms) out.push_back(Compile(pod, term, namespaces));
  return out;
}

std::vector<IncomingTerm> CompileWeightedTerms(
    const api::Pod& pod, const std::vector<api::WeightedPodAffinityTerm>& terms,
    const informer::Lister<api::Namespace>* namespaces) {
  std::vector<IncomingTerm> out;
  out.reserve(terms.size());
  for (const api::WeightedPodAffinityTerm& term : terms) {
    out.push_back(Compile(pod, term.term, namespaces));
    out.back().weight = term.weight;
  }
  return out;
}

bool MatchesAll(const std::vector<IncomingTerm>& terms, const api::Pod& pod) {
  if (terms.empty()) return false;
  for (const IncomingTerm& term : terms) {
    if (!term.Matches(pod)) return false;
  }
  return true;
}

bool MatchesAny(const std::vector<IncomingTerm>& terms, const api::Pod& pod) {
  for (const IncomingTerm& term : terms) {
    if (term.Matches(pod)) return true;
  }
  return false;
}

const std::vector<api::PodAffinityTerm>& RequiredAffinity(const api::Pod& pod) {
  static const std::vector<api::PodAffinityTerm> kNone;
  const auto& a = pod.spec.affinity;
  return a && a->pod_affinity ? a->pod_affinity->required : kNone;
}

const std::vector<api::PodAffinityTerm>& RequiredAntiAffinity(const api::Pod& pod) {
  static const std::vector<api::PodAffinityTerm> kNone;
  const auto& a = pod.spec.affinity;
  return a && a->pod_anti_affinity ? a->pod_anti_affinity->required : kNone;
}

const std::vector<api::WeightedPodAffinityTerm>& PreferredAffinity(const api::Pod& pod) {
  static const std::vector<api::WeightedPodAffinityTerm> kNone;
  const auto& a = pod.spec.affinity;
  return a && a->pod_affinity ? a->pod_affinity->preferred : kNone;
}

const std::vector<api::WeightedPodAffinityTerm>& PreferredAntiAffinity(const api::Pod& pod) {
  static const std::vector<api::WeightedPodAffinityTerm> kNone;
  const auto& a = pod.spec.affinity;
  return a && a->pod_anti_affinity ? a->pod_anti_affinity->preferred : kNone;
}

void AppendLabelsSignature(const api::Labels& labels, std::string* out) {
  out->append(std::to_string(labels.size()));
  for (const auto& [key, value] : labels) {
    AppendField(key, out);
    AppendField(value, out);
  }
  out->push_back(';');
}

}  // namespace berth::plugins::interpodaffinity
