#ifndef BERTH_TEST_TESTING_OBJECTS_H_
#define BERTH_TEST_TESTING_OBJECTS_H_

// Fluent builders for pods and nodes in unit tests. Requests are computed with the same code as
// decoded pods (api::ComputePodRequests) so tests see what production sees.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pkg/api/codec.h"
#include "pkg/api/quantity.h"
#include "pkg/api/requests.h"
#include "pkg/api/types.h"
#include "pkg/framework/types.h"

namespace berth::testing {

class PodBuilder {
 public:
  explicit PodBuilder(std::string name, std::string ns = "default") {
    pod_.meta.name = std::move(name);
    pod_.meta.namespace_ = std::move(ns);
    pod_.meta.uid = "uid-" + pod_.meta.namespace_ + "-" + pod_.meta.name;
    pod_.spec.scheduler_name = "berth-scheduler";
  }
  // Adds a container with these requests ("" leaves the resource unset).
  PodBuilder& Container(const std::string& cpu, const std::string& memory,
                        std::vector<std::pair<std::string, std::string>> extra = {}) {
    api::Container c;
    c.name = "c" + std::to_string(pod_.spec.containers.size());
    SetRequests(c, cpu, memory, extra);
    pod_.spec.containers.push_back(std::move(c));
    return *this;
  }
  // Adds a container whose cpu and memory requests are set as these numbers directly, so that
  // they can be any int64.
  PodBuilder& ContainerRequesting(int64_t milli_cpu, int64_t memory) {
    Container("", "");
    api::ResourceRequirements& resources = pod_.spec.containers.back().resources;
    resources.requests.milli_cpu = milli_cpu;
    resources.requests.memory = memory;
    resources.has_cpu_request = true;
    resources.has_memory_request = true;
    return *this;
  }
  PodBuilder& InitContainer(const std::string& cpu, const std::string& memory,
                            bool restartable = false) {
    api::Container c;
    c.name = "i" + std::to_string(pod_.spec.init_containers.size());
    c.restartable = restartable;
    SetRequests(c, cpu, memory, {});
    pod_.spec.init_containers.push_back(std::move(c));
    return *this;
  }
  PodBuilder& Image(const std::string& image) {
    if (pod_.spec.containers.empty()) Container("", "");
    pod_.spec.containers.back().image = image;
    return *this;
  }
  PodBuilder& HostPort(int32_t port, const std::string& protocol = "TCP",
                       const std::string& ip = "") {
    if (pod_.spec.containers.empty()) Container("", "");
    pod_.spec.containers.back().ports.push_back({port, port, protocol, ip});
    return *this;
  }
  PodBuilder& Label(const std::string& k, const std::string& v) {
    pod_.meta.labels.Set(k, v);
    return *this;
  }
  PodBuilder& Priority(int32_t p) {
    pod_.spec.priority = p;
    return *this;
  }
  PodBuilder& Node(const std::string& node) {
    pod_.spec.node_name = node;
    return *this;
  }
  PodBuilder& NodeSelector(const std::string& k, const std::string& v) {
    pod_.spec.node_selector.Set(k, v);
    return *this;
  }
  PodBuilder& Toleration(api::Toleration t) {
    pod_.spec.tolerations.push_back(std::move(t));
    return *this;
  }
  PodBuilder& SchedulingGate(const std::string& gate) {
    pod_.spec.scheduling_gates.push_back(gate);
    return *this;
  }
  PodBuilder& Uid(const std::string& uid) {
    pod_.meta.uid = uid;
    return *this;
  }
  // Direct access for anything without a dedicated setter (affinity, ...).
  api::Pod& pod() { return pod_; }

  api::PodPtr Build() {
    api::ComputePodRequests(pod_);
    return std::make_shared<const api::Pod>(pod_);
  }
  framework::PodInfoPtr Info() { return std::make_shared<framework::PodInfo>(Build()); }

 private:
  static void SetRequests(api::Container& c, const std::string& cpu, const std::string& memory,
                          const std::vector<std::pair<std::string, std::string>>& extra) {
    if (!cpu.empty()) {
      c.resources.requests.milli_cpu = api::Quantity::Parse(cpu).MilliValue();
      c.resources.has_cpu_request = true;
    }
    if (!memory.empty()) {
      c.resources.requests.memory = api::Quantity::Parse(memory).Value();
      c.resources.has_memory_request = true;
    }
    for (const auto& [name, amount] : extra) {
      c.resources.requests.Set(name, api::Quantity::Parse(amount).Value());
    }
  }
  api::Pod pod_;
};

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name) {
    node_.meta.name = std::move(name);
    node_.meta.uid = "uid-node-" + node_.meta.name;
    node_.meta.labels.Set("kubernetes.io/hostname", node_.meta.name);
    node_.status.allocatable.pods = 110;
  }
  NodeBuilder& Capacity(const std::string& cpu, const std::string& memory, int64_t pods = 110,
                        std::vector<std::pair<std::string, std::string>> extra = {}) {
    auto& a = node_.status.allocatable;
    a.milli_cpu = api::Quantity::Parse(cpu).MilliValue();
    a.memory = api::Quantity::Parse(memory).Value();
    a.pods = pods;
    for (const auto& [name, amount] : extra) a.Set(name, api::Quantity::Parse(amount).Value());
    node_.status.capacity = a;
    return *this;
  }
  NodeBuilder& Label(const std::string& k, const std::string& v) {
    node_.meta.labels.Set(k, v);
    return *this;
  }
  NodeBuilder& Taint(const std::string& key, const std::string& value, api::TaintEffect effect) {
    node_.spec.taints.push_back({key, value, effect});
    return *this;
  }
  NodeBuilder& Unschedulable() {
    node_.spec.unschedulable = true;
    return *this;
  }
  NodeBuilder& Image(std::vector<std::string> names, int64_t size_bytes) {
    node_.status.images.push_back({std::move(names), size_bytes});
    return *this;
  }
  api::Node& node() { return node_; }
  api::NodePtr Build() { return std::make_shared<const api::Node>(node_); }

  // A NodeInfo holding this node and `pods`.
  framework::NodeInfoPtr Info(const std::vector<framework::PodInfoPtr>& pods = {}) {
    auto info = std::make_shared<framework::NodeInfo>(Build());
    for (const auto& p : pods) info->AddPod(p);
    return info;
  }

 private:
  api::Node node_;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_OBJECTS_H_
