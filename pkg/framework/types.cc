#include "pkg/framework/types.h"

#include <algorithm>
#include <atomic>

namespace berth::framework {
namespace {

const std::string kWildcardIP = "0.0.0.0";
const std::string kEmptyName;
const api::ResourceList kNoResources;

std::string NormalizedIP(const std::string& ip) { return ip.empty() ? kWildcardIP : ip; }

bool HasAffinity(const api::Pod& pod) {
  return pod.spec.affinity &&
         (pod.spec.affinity->pod_affinity || pod.spec.affinity->pod_anti_affinity);
}

bool HasRequiredAntiAffinity(const api::Pod& pod) {
  return pod.spec.affinity && pod.spec.affinity->pod_anti_affinity &&
         !pod.spec.affinity->pod_anti_affinity->required.empty();
}

void EraseByUid(std::vector<PodInfoPtr>& pods, const std::string& uid) {
  auto it = std::find_if(pods.begin(), pods.end(),
                         [&](const PodInfoPtr& p) { return p->pod->meta.uid == uid; });
  if (it == pods.end()) return;
  // Order of pods on a node carries no meaning: swap-remove keeps removal O(1).
  *it = std::move(pods.back());
  pods.pop_back();
}

}  // namespace

void HostPortInfo::Add(const std::string& ip, const std::string& protocol, int32_t port) {
  ports_[NormalizedIP(ip)].insert({protocol.empty() ? "TCP" : protocol, port});
}

void HostPortInfo::Remove(const std::string& ip, const std::string& protocol, int32_t port) {
  auto it = ports_.find(NormalizedIP(ip));
  if (it == ports_.end()) return;
  auto entry = it->second.find({protocol.empty() ? "TCP" : protocol, port});
  if (entry != it->second.end()) it->second.erase(entry);
  if (it->second.empty()) ports_.erase(it);
}

bool HostPortInfo::CheckConflict(const std::string& ip, const std::string& protocol,
                                 int32_t port) const {
  if (port <= 0) return false;
  const std::pair<std::string, int32_t> key{protocol.empty() ? "TCP" : protocol, port};
  const std::string normalized = NormalizedIP(ip);
  if (normalized == kWildcardIP) {
    // The wildcard conflicts with the same protocol/port on any ip.
    for (const auto& [any_ip, used] : ports_) {
      if (used.count(key)) return true;
    }
    return false;
  }
  for (const auto* candidate : {&normalized, &kWildcardIP}) {
    auto it = ports_.find(*candidate);
    if (it != ports_.end() && it->second.count(key)) return true;
  }
  return false;
}

size_t HostPortInfo::size() const {
  size_t n = 0;
  for (const auto& [ip, used] : ports_) n += used.size();
  return n;
}

const std::string& NodeInfo::EmptyName() { return kEmptyName; }

const api::ResourceList& NodeInfo::NoResources() { return kNoResources; }

void NodeInfo::Touch() {
  static std::atomic<int64_t> next_generation{0};
  generation_ = ++next_generation;
}

void NodeInfo::SetNode(api::NodePtr node) {
  node_ = std::move(node);
  Touch();
}

void NodeInfo::CountClaims(const api::Pod& pod, int delta) {
  for (const api::Volume& volume : pod.spec.volumes) {
    if (volume.source != "persistentVolumeClaim") continue;
    std::string key = pod.meta.namespace_ + "/" + volume.claim_name;
    auto it =
        std::lower_bound(pvc_ref_counts_.begin(), pvc_ref_counts_.end(), key,
                         [](const auto& entry, const std::string& k) { return entry.first < k; });
    if (it == pvc_ref_counts_.end() || it->first != key) {
      if (delta < 0) continue;
      it = pvc_ref_counts_.insert(it, {std::move(key), 0});
    }
    it->second += delta;
    if (it->second <= 0) pvc_ref_counts_.erase(it);
  }
}

void NodeInfo::AddPod(PodInfoPtr pod_info) {
  const api::Pod& pod = *pod_info->pod;
  requested_.Add(pod.requests);
  non_zero_milli_cpu_ += pod.non_zero_milli_cpu;
  non_zero_memory_ += pod.non_zero_memory;
  for (const auto& port : pod.host_ports) {
    used_ports_.Add(port.host_ip, port.protocol, port.host_port);
  }
  if (!pod.spec.volumes.empty()) CountClaims(pod, 1);
  if (HasAffinity(pod)) pods_with_affinity_.push_back(pod_info);
  if (HasRequiredAntiAffinity(pod)) pods_with_required_anti_affinity_.push_back(pod_info);
  pods_.push_back(std::move(pod_info));
  Touch();
}

bool NodeInfo::RemovePod(const api::Pod& pod) {
  auto it = std::find_if(pods_.begin(), pods_.end(),
                         [&](const PodInfoPtr& p) { return p->pod->meta.uid == pod.meta.uid; });
  if (it == pods_.end()) return false;
  // Subtract what was added for the stored copy: the caller's pod may be a newer version.
  const api::Pod& stored = *(*it)->pod;
  requested_.Subtract(stored.requests);
  non_zero_milli_cpu_ -= stored.non_zero_milli_cpu;
  non_zero_memory_ -= stored.non_zero_memory;
  for (const auto& port : stored.host_ports) {
    used_ports_.Remove(port.host_ip, port.protocol, port.host_port);
  }
  if (!stored.spec.volumes.empty()) CountClaims(stored, -1);
  const std::string uid = stored.meta.uid;
  EraseByUid(pods_with_affinity_, uid);
  EraseByUid(pods_with_required_anti_affinity_, uid);
  EraseByUid(pods_, uid);
  Touch();
  return true;
}

}  // namespace berth::framework
